"""Hostile input: one regression test per finding of a seeded fuzz run over the public
entry points. A valid call gives the float64 reference's answer; an invalid one our typed
error (ParamNullptrError / ParamInvalidError / ParamTypeError) naming the parameter and
the rule, in GRAPH_MODE (raised while the graph compiles) and PYNATIVE_MODE alike, before
any kernel runs. The numerical overflow of huge |x - mean| is tested with the kernels."""
import re

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

import ms_groupnorm as g
from cases import assert_close, rounded, tensor, to_numpy
from ms_groupnorm import ParamInvalidError, ParamTypeError, reference

F32, F16, BF16 = ms.float32, ms.float16, ms.bfloat16


class Call(nn.Cell):
    """``fn(*tensors, *args, **kwargs)`` compiled as a graph: the scalars are its constants."""

    def __init__(self, fn, args, kwargs):
        super().__init__()
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def construct(self, *tensors):
        return self.fn(*tensors, *self.args, **self.kwargs)


def call(mode, fn, tensors, *args, **kwargs):
    """``fn`` on ``tensors`` then ``args``: inside a compiled Cell in graph mode, directly in PyNative."""
    if mode == "graph":
        return Call(fn, args, kwargs)(*tensors)
    return fn(*tensors, *args, **kwargs)


def raises(error, *fragments):
    """pytest.raises for one of our errors whose message holds every fragment (regex-escaped)."""
    return pytest.raises(error, match=".*".join(re.escape(f) for f in fragments))


# ---- 1. gamma None with a float32 beta and float16/bfloat16 input: a valid call


@pytest.mark.parametrize("data", [F16, BF16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("fused", [False, True], ids=["group_norm", "silu"])
def test_none_gamma_with_float32_beta_and_low_precision_input(mode, rng, data, fused):
    x = rounded(rng.standard_normal((2, 4, 3)) * 2 + 1, data)
    beta = rounded(rng.standard_normal(4), F32)
    fn = g.group_norm_silu_forward if fused else g.group_norm_forward
    out, mean, rstd = call(mode, fn, (tensor(x, data),), None, tensor(beta, F32), 2, 4, 3, 2)
    ref = (reference.silu_forward if fused else reference.forward)(x, None, beta, 2)
    assert out.dtype == data and mean.dtype == rstd.dtype == F32  # the parameters' dtype: beta's
    for got, want, dtype, name in zip((out, mean, rstd), ref, (data, F32, F32), ("out", "mean", "rstd")):
        assert_close(got, want, dtype, name)


# ---- 3. empty bfloat16 (and float16) input: empty outputs, mean 0, rstd NaN, zero gradients


@pytest.mark.parametrize("data", [BF16, F16], ids=["bf16", "fp16"])
def test_empty_low_precision_input(mode, data):
    x = Tensor(np.zeros((2, 4, 0), np.float32)).astype(data)
    for fn in (g.group_norm_forward, g.group_norm_silu_forward):
        out, mean, rstd = call(mode, fn, (x,), None, None, 2, 4, 0, 2)
        assert out.shape == (2, 4, 0) and out.dtype == mean.dtype == rstd.dtype == data, fn.__name__
        assert not to_numpy(mean).any() and np.isnan(to_numpy(rstd)).all(), fn.__name__
    stats = Tensor(np.zeros((2, 2), np.float32)).astype(data)
    dx, dgamma, dbeta = call(mode, g.group_norm_backward, (x, x, stats, stats), None, 2, 4, 0, 2)
    assert dx.shape == (2, 4, 0) and dgamma.dtype == dbeta.dtype == data
    assert not to_numpy(dgamma).any() and not to_numpy(dbeta).any()
    dx, dgamma, dbeta = call(mode, g.group_norm_silu_backward, (x, x, stats, stats), None, None, 2, 4, 0, 2)
    assert dx.shape == (2, 4, 0) and not to_numpy(dbeta).any()


# ---- 4. strided views into the contract functions (GRAPH_MODE failed in pyexecute)


def test_strided_views_into_the_contract_functions(mode, rng):
    base = Tensor(rng.standard_normal((4, 4, 6)).astype(np.float32))
    base_dy = Tensor(rng.standard_normal((4, 4, 6)).astype(np.float32))
    x, dy = base[::2], base_dy[::2]
    x_np, dy_np = x.asnumpy().astype(np.float64), dy.asnumpy().astype(np.float64)
    out, mean, rstd = call(mode, g.group_norm_forward, (x,), None, None, 2, 4, 6, 2)
    want = reference.forward(x_np, None, None, 2)
    for got, ref, name in zip((out, mean, rstd), want, ("out", "mean", "rstd")):
        assert_close(got, ref, F32, name)
    z, _, _ = call(mode, g.group_norm_silu_forward, (x,), None, None, 2, 4, 6, 2)
    assert_close(z, reference.silu_forward(x_np, None, None, 2)[0], F32, "z")
    grads = call(mode, g.group_norm_backward, (dy, x, mean, rstd), None, 2, 4, 6, 2)
    wants = reference.backward(dy_np, x_np, to_numpy(mean), to_numpy(rstd), None, 2)
    for got, ref, name in zip(grads, wants, ("dx", "dgamma", "dbeta")):
        assert_close(got, ref, F32, name)
    grads = call(mode, g.group_norm_silu_backward, (dy, x, mean, rstd), None, None, 2, 4, 6, 2)
    wants = reference.silu_backward(dy_np, x_np, to_numpy(mean), to_numpy(rstd), None, None, 2)
    for got, ref, name in zip(grads, wants, ("silu dx", "silu dgamma", "silu dbeta")):
        assert_close(got, ref, F32, name)


# ---- 5. bfloat16 contract calls that reshape (GRAPH_MODE had no CPU Reshape for bfloat16)


@pytest.mark.parametrize("fused", [False, True], ids=["group_norm", "silu"])
def test_bfloat16_calls_that_reshape(mode, rng, fused):
    N, C, HxW, G = 3, 6, 9, 2
    x = rounded(rng.standard_normal((N, C * HxW)), BF16)  # not (N, C, ...): reshaped for the kernel
    dy = rounded(rng.standard_normal(N * C * HxW), BF16)  # shaped unlike input
    x3 = x.reshape(N, C, HxW)
    forward = g.group_norm_silu_forward if fused else g.group_norm_forward
    ref_forward, ref_backward = ((reference.silu_forward, reference.silu_backward) if fused else
                                 (reference.forward, reference.backward))
    out, mean, rstd = call(mode, forward, (tensor(x, BF16),), None, None, N, C, HxW, G)
    assert out.shape == x.shape and out.dtype == BF16
    assert_close(to_numpy(out).reshape(x3.shape), ref_forward(x3, None, None, G)[0], BF16, "out")
    mean_np, rstd_np = to_numpy(mean), to_numpy(rstd)
    if fused:
        grads = call(mode, g.group_norm_silu_backward, (tensor(dy, BF16), tensor(x, BF16), mean, rstd), None, None,
                     N, C, HxW, G)
        wants = ref_backward(dy.reshape(x3.shape), x3, mean_np, rstd_np, None, None, G)
    else:
        grads = call(mode, g.group_norm_backward, (tensor(dy, BF16), tensor(x, BF16), mean, rstd), None, N, C, HxW, G)
        wants = ref_backward(dy.reshape(x3.shape), x3, mean_np, rstd_np, None, G)
    assert grads[0].shape == x.shape and grads[0].dtype == BF16
    assert_close(to_numpy(grads[0]).reshape(x3.shape), wants[0], BF16, "dx")
    for got, want, name in zip(grads[1:], wants[1:], ("dgamma", "dbeta")):
        assert_close(got, want, BF16, name)


# ---- 6. unhashable, overflowing and non-tensor arguments: typed errors naming them


def ones(*shape):
    return Tensor(np.ones(shape, np.float32))


def _backward_args(**changes):
    args = dict(dict(gamma=None, N=2, C=4, HxW=3, group=2, output_mask=(True, True, True)), **changes)
    return tuple(args.values())


UNHASHABLE = [  # (entry point, positional scalars, error, message fragments)
    ("backward", _backward_args(output_mask=np.array([True, True, True])), ParamInvalidError,
     ("output_mask must be a sequence of 3 bools", "array(")),
    ("backward", _backward_args(N=[2]), ParamTypeError, ("N=[2] must be an int",)),
    ("forward", (None, None, 2, 4, 3, 2, [1e-5]), ParamTypeError, ("eps=[1e-05] must be a float",)),
    ("forward", (None, None, 2, 4, 3, np.array(2), 1e-5), ParamTypeError, ("group=array(2) must be an int",)),
    ("silu_forward", (None, None, 2, 4, 3, 2, 1e-5, [1.0]), ParamTypeError, ("swish_scale=[1.0] must be a float",)),
    ("group_norm", ([2],), ParamTypeError, ("num_groups=[2] must be an int",)),
]
ENTRY = {"forward": g.group_norm_forward, "silu_forward": g.group_norm_silu_forward,
         "backward": g.group_norm_backward, "group_norm": g.group_norm}


def _tensors_for(entry):
    return (ones(2, 4, 3), ones(2, 4, 3), ones(2, 2), ones(2, 2)) if entry == "backward" else (ones(2, 4, 3),)


@pytest.mark.parametrize("entry,args,error,fragments", UNHASHABLE, ids=[c[3][0][:24] for c in UNHASHABLE])
def test_unhashable_arguments(mode, entry, args, error, fragments):
    with raises(error, *fragments):
        call(mode, ENTRY[entry], _tensors_for(entry), *args)


@pytest.mark.parametrize("entry,args,name", [
    ("forward", (None, None, 2, 4, 3, 2, 10 ** 400), "eps"),
    ("silu_forward", (None, None, 2, 4, 3, 2, 1e-5, 10 ** 400), "swish_scale"),
    ("group_norm", (2, None, None, 10 ** 400), "eps"),
], ids=["eps", "swish_scale", "group_norm-eps"])
def test_an_int_beyond_any_float(entry, args, name):
    """PyNative only: in a graph MindSpore itself cannot hold such an int (see test 8)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    with raises(ParamInvalidError, f"{name}=1000", "cannot be held by float32 (it would become inf)"):
        ENTRY[entry](ones(2, 4, 3), *args)


@pytest.mark.parametrize("what", ["numpy", "list"])
def test_a_non_tensor_parameter_is_named(mode, what):
    value = {"numpy": np.ones(4, np.float32), "list": [1.0] * 4}[what]
    kind = {"numpy": "ndarray", "list": "list"}[what]
    with raises(ParamTypeError, f"weight must be a mindspore.Tensor or None, got {kind}"):
        call(mode, g.group_norm, (ones(2, 4, 3),), 2, value)
    with raises(ParamTypeError, f"gamma must be a mindspore.Tensor or None, got {kind}"):
        call(mode, g.group_norm_forward, (ones(2, 4, 3),), value, None, 2, 4, 3, 2)
    with raises(ParamTypeError, f"beta must be a mindspore.Tensor or None, got {kind}"):
        call(mode, g.group_norm_silu_backward, (ones(2, 4, 3), ones(2, 4, 3), ones(2, 2), ones(2, 2)), None, value,
             2, 4, 3, 2)


# ---- 7. C = 0 with a huge group: refused, and nothing left pending for the next call


@pytest.mark.parametrize("group", [2 ** 40, 2 ** 63 - 1], ids=["2**40", "2**63-1"])
def test_no_channels_with_more_than_one_group(mode, group):
    x = Tensor(np.zeros((2, 0, 3), np.float32))
    with raises(ParamInvalidError, f"group={group} must not exceed max(C, 1)=1"):
        call(mode, g.group_norm_forward, (x,), None, None, 2, 0, 3, group)
    with raises(ParamInvalidError, f"num_groups={group} must not exceed max(C, 1)=1"):
        call(mode, g.group_norm, (x,), group)
    out, mean, rstd = call(mode, g.group_norm_forward, (x,), None, None, 2, 0, 3, 1)  # still works afterwards
    assert out.shape == (2, 0, 3) and mean.shape == rstd.shape == (2, 1)


def test_a_group_beyond_int64_leaves_no_pending_error():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    x = Tensor(np.zeros((2, 0, 3), np.float32))
    with raises(ParamInvalidError, "group=18446744073709551616 must fit in int64"):
        g.group_norm_forward(x, None, None, 2, 0, 3, 2 ** 64)
    y = g.group_norm(ones(2, 4, 3), 2)  # a pending MindSpore exception would break this call
    assert_close(y, reference.forward(np.ones((2, 4, 3)), None, None, 2)[0], F32, "y")


# ---- 8. the two modes agree on scalar arguments


def test_swish_scale_that_float32_cannot_hold(mode):
    with raises(ParamInvalidError, "swish_scale="):
        call(mode, g.group_norm_silu_forward, (ones(2, 4, 3),), None, None, 2, 4, 3, 2, 1e-5, 1e39)


def test_numpy_scalars_are_python_numbers(mode, rng):
    x = tensor(rng.standard_normal((2, 4, 3)), F32)
    want = call(mode, g.group_norm, (x,), 2, None, None, 1e-5).asnumpy()
    got = call(mode, g.group_norm, (x,), np.int64(2), None, None, np.float32(1e-5)).asnumpy()
    assert_close(got, want, F32, "numpy scalars")
    out = call(mode, g.group_norm_forward, (x,), None, None, np.int32(2), np.int64(4), np.uint8(3), np.int16(2),
               np.float64(1e-5))[0]
    np.testing.assert_array_equal(out.asnumpy(), want)
    grads = call(mode, g.group_norm_backward, (x, x, ones(2, 2), ones(2, 2)), None, 2, 4, 3, 2,
                 [np.bool_(True), np.bool_(False), True])
    assert grads[0] is not None and grads[1] is None and grads[2] is not None
    for bad in (True, np.bool_(True)):  # a bool is not a size in either mode
        with raises(ParamTypeError, "num_groups=", "must be an int"):
            call(mode, g.group_norm, (x,), bad)


@pytest.mark.parametrize("name", ["N", "C", "HxW", "group"])
def test_ints_beyond_int64_are_refused_by_us(name):
    """PyNative: our error. In a graph MindSpore converts every constant to a C++ value
    before any code of ours runs, and refuses such an int itself (next test)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    sizes = dict(dict(N=2, C=4, HxW=3, group=2), **{name: 2 ** 64})
    with raises(ParamInvalidError, f"{name}=18446744073709551616 must fit in int64"):
        g.group_norm_forward(ones(2, 4, 3), None, None, *sizes.values())
    with raises(ParamInvalidError, f"{name}=-18446744073709551616 must fit in int64"):
        g.group_norm_backward(ones(2, 4, 3), ones(2, 4, 3), ones(2, 2), ones(2, 2), None,
                              *dict(sizes, **{name: -2 ** 64}).values())


def test_ints_beyond_int64_in_a_graph_fail_while_compiling():
    """MindSpore's limitation, documented in docs/contract.md: the constant never reaches us."""
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(RuntimeError, match="Unable to cast Python instance of type <class 'int'>"):
            Call(g.group_norm_forward, (None, None, 2, 4, 3, 2 ** 64), {})(ones(2, 4, 3))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("eps", [1e300, -1e-40], ids=str)  # more values: tests/test_fuzz_hostile.py
def test_eps_that_float32_cannot_hold(mode, eps):
    """Refused in both modes (a graph sees 1e300 as inf, 1e-40 as a float32 subnormal)."""
    x = ones(2, 4, 3)
    with raises(ParamInvalidError, "eps="):
        call(mode, g.group_norm, (x,), 2, None, None, eps)
    with raises(ParamInvalidError, "eps="):
        call(mode, g.group_norm_forward, (x,), None, None, 2, 4, 3, 2, eps)
    with raises(ParamInvalidError, "eps="):
        g.GroupNorm(2, 4, eps=eps)


def test_eps_that_underflows_float32_to_zero():
    """1e-320 is 0 in float32. PyNative refuses it; a graph receives it as 0.0 (MindSpore
    rounds float constants to float32 first), which group_norm_forward refuses (eps > 0)
    and group_norm takes as eps = 0, the value float32 computes with either way."""
    x = ones(2, 4, 3)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    with raises(ParamInvalidError, "eps=1e-320 cannot be held by float32 (it would become 0.0)"):
        g.group_norm(x, 2, None, None, 1e-320)
    with raises(ParamInvalidError, "eps=1e-320 cannot be held by float32"):
        g.GroupNorm(2, 4, eps=1e-320)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with raises(ParamInvalidError, "eps=0.0 must be a number > 0"):
            call("graph", g.group_norm_forward, (x,), None, None, 2, 4, 3, 2, 1e-320)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_an_int_mask_is_refused_after_a_bool_one(mode):
    """(1, 1, 1) equals and hashes as (True, True, True): a cached check must not accept it
    because the bools were accepted before."""
    tensors = (ones(2, 4, 3), ones(2, 4, 3), ones(2, 2), ones(2, 2))
    call(mode, g.group_norm_backward, tensors, *_backward_args(output_mask=(True, True, True)))
    with raises(ParamInvalidError, "output_mask must hold 3 bools, got (1, 1, 1)"):
        call(mode, g.group_norm_backward, tensors, *_backward_args(output_mask=(1, 1, 1)))

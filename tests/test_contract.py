"""The aclnnGroupNormBackward (and aclnnGroupNorm) parameter contract: special shapes,
views, null gamma, dtype rules and the error table, in GRAPH_MODE and PYNATIVE_MODE."""
import math

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

import ms_groupnorm
from cases import assert_close, make_inputs, tensor
from ms_groupnorm import ParamInvalidError, ParamNullptrError, group_norm_backward, group_norm_forward, reference
from test_functional import Backward, Forward

F32, F16, BF16, F64 = ms.float32, ms.float16, ms.bfloat16, ms.float64


def call_backward(mode, dy, x, mean, rstd, gamma, N, C, HxW, G, mask=(True, True, True)):
    """group_norm_backward compiled inside a Cell in graph mode, called directly in PyNative."""
    if mode == "graph":
        return Backward(N, C, HxW, G, mask)(dy, x, mean, rstd, gamma)
    return group_norm_backward(dy, x, mean, rstd, gamma, N, C, HxW, G, mask)


def test_known_answer_of_the_aclnn_example(mode):
    values = np.arange(1, 25, dtype=np.float32).reshape(2, 3, 4)
    mean = Tensor(np.array([[6.5], [18.5]], np.float32))
    rstd = Tensor(np.full((2, 1), 0.2896827, np.float32))
    dx, dgamma, dbeta = call_backward(mode, Tensor(values), Tensor(values), mean, rstd,
                                      Tensor(np.ones(3, np.float32)), 2, 3, 4, 1)
    np.testing.assert_allclose(dgamma.asnumpy(), [-75.8969, 2.8968, 155.8493], atol=2e-4)
    np.testing.assert_array_equal(dbeta.asnumpy(), [68, 100, 132])
    assert np.abs(dx.asnumpy()).max() < 1e-5


# The default tier: every empty shape once, the modes alternating.
@pytest.mark.default_sample(shape=[(0, 6, 4), (2, 6, 0), (3, 6, 2, 0)], mode=["graph", "pynative"])
@pytest.mark.parametrize("shape", [(0, 6, 4), (2, 6, 0), (3, 6, 2, 0)])
def test_empty_input(mode, shape):
    N, C, HxW = shape[0], shape[1], math.prod(shape[2:])
    x = Tensor(np.zeros(shape, np.float32))
    stats = Tensor(np.zeros((N, 3), np.float32))
    dx, dgamma, dbeta = call_backward(mode, x, x, stats, stats, None, N, C, HxW, 3)
    assert dx.shape == shape
    np.testing.assert_array_equal(dgamma.asnumpy(), np.zeros(C))
    np.testing.assert_array_equal(dbeta.asnumpy(), np.zeros(C))
    y, mean, rstd = (Forward(N, C, HxW, 3)(x, None, None) if mode == "graph"
                     else group_norm_forward(x, None, None, N, C, HxW, 3))
    assert y.shape == shape and mean.shape == rstd.shape == (N, 3)
    assert np.all(mean.asnumpy() == 0) and np.all(np.isnan(rstd.asnumpy()))


def test_grad_out_and_input_may_differ_in_shape(mode, rng):
    """Only the element counts are compared (CANN's case_shape_not_same): 1-D input and
    flat grad_out, mean/rstd as (N*G,) and (N, G, 1)."""
    N, C, H, W, G = 2, 6, 3, 5, 3
    x, dy, gamma, _, mean, rstd = make_inputs(rng, (N, C, H, W), G, F32, F32)
    want = reference.backward(dy, x, mean, rstd, gamma, G)
    dx, dgamma, dbeta = call_backward(mode, tensor(dy.reshape(N, -1), F32), tensor(x.reshape(-1), F32),
                                      tensor(mean.reshape(-1), F32), tensor(rstd.reshape(N, G, 1), F32),
                                      tensor(gamma, F32), N, C, H * W, G)
    assert dx.shape == (N * C * H * W,)
    assert_close(dx.asnumpy().reshape(x.shape), want[0], F32, "dx")
    assert_close(dgamma, want[1], F32, "dgamma")
    assert_close(dbeta, want[2], F32, "dbeta")


def test_hxw_one(mode, rng):
    x, dy, gamma, _, mean, rstd = make_inputs(rng, (5, 8), 2, F32, F32)
    got = call_backward(mode, tensor(dy, F32), tensor(x, F32), tensor(mean, F32), tensor(rstd, F32),
                        tensor(gamma, F32), 5, 8, 1, 2)
    for g, r, name in zip(got, reference.backward(dy, x, mean, rstd, gamma, 2), ("dx", "dgamma", "dbeta")):
        assert_close(g, r, F32, name)


@pytest.mark.parametrize("view", ["transpose", "slice"])
def test_non_contiguous_inputs_match_contiguous_copies(rng, view):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    base_x = Tensor(rng.standard_normal((2, 6, 8, 5)).astype(np.float32))
    base_dy = Tensor(rng.standard_normal((2, 6, 8, 5)).astype(np.float32))
    if view == "transpose":
        x, dy = base_x.transpose(0, 1, 3, 2), base_dy.transpose(0, 1, 3, 2)
    else:
        x, dy = base_x[:, :, ::2], base_dy[:, :, ::2]
    assert not x.is_contiguous() and not dy.is_contiguous()
    N, C, HxW = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    _, mean, rstd = group_norm_forward(x, None, None, N, C, HxW, 3)
    _, mean_c, rstd_c = group_norm_forward(x.contiguous(), None, None, N, C, HxW, 3)
    np.testing.assert_array_equal(mean.asnumpy(), mean_c.asnumpy())
    np.testing.assert_array_equal(rstd.asnumpy(), rstd_c.asnumpy())
    got = group_norm_backward(dy, x, mean, rstd, None, N, C, HxW, 3)
    want = group_norm_backward(dy.contiguous(), x.contiguous(), mean, rstd, None, N, C, HxW, 3)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.asnumpy(), w.asnumpy())


# ------------------------------------------------------------------ dtype rules
VALID_DTYPES = [  # grad_out/input, mean/rstd/gamma
    (F32, F32), (F16, F16), (BF16, BF16), (F16, F32), (BF16, F32),
]
INVALID_DTYPES = [  # (grad_out, input, mean, rstd, gamma, rule fragment)
    (F64, F64, F64, F64, F64, "grad_out has dtype Float64"),
    (ms.int32, ms.int32, ms.int32, ms.int32, ms.int32, "grad_out has dtype Int32"),
    (ms.bool_, ms.bool_, F32, F32, F32, "grad_out has dtype Bool"),
    (F32, F16, F32, F32, F32, "input has dtype Float16, but it must equal the dtype of grad_out"),
    (F32, F32, F16, F16, F16, "mean has dtype Float16, but it must equal the dtype of grad_out"),
    (F16, F16, BF16, BF16, BF16, "mean has dtype BFloat16"),
    (F16, F16, F32, F16, F32, "rstd has dtype Float16, but it must equal the dtype of mean"),
    (BF16, BF16, F32, F32, BF16, "gamma has dtype BFloat16, but it must equal the dtype of mean"),
    (F16, F16, F16, F16, F32, "gamma has dtype Float32, but it must equal the dtype of mean"),
]


def dtype_case(dtypes):
    shape = (2, 4, 3)
    return [Tensor(np.ones(s, np.float32)).astype(dt) for s, dt in zip((shape, shape, (2, 2), (2, 2), (4,)), dtypes)]


@pytest.mark.parametrize("data,stat", VALID_DTYPES)
def test_valid_dtype_combinations(mode, data, stat):
    dy, x, mean, rstd, gamma = dtype_case((data, data, stat, stat, stat))
    dx, dgamma, dbeta = call_backward(mode, dy, x, mean, rstd, gamma, 2, 4, 3, 2)
    assert (dx.dtype, dgamma.dtype, dbeta.dtype) == (data, stat, stat)


@pytest.mark.parametrize("case", INVALID_DTYPES, ids=[c[-1] for c in INVALID_DTYPES])
def test_invalid_dtype_combinations(mode, case):
    *dtypes, rule = case
    with pytest.raises(ParamInvalidError, match=rule) as info:
        call_backward(mode, *dtype_case(dtypes), 2, 4, 3, 2)
    assert info.value.code == 161002
    assert str(info.value).startswith("ACLNN_ERR_PARAM_INVALID (161002): ")


# ------------------------------------------------------------------ the error table
def ones(*shape):
    return Tensor(np.ones(shape, np.float32))


GOOD = dict(dy=(2, 6, 4), x=(2, 6, 4), mean=(2, 3), rstd=(2, 3), gamma=(6,), N=2, C=6, HxW=4, G=3,
            mask=(True, True, True))
ERROR_TABLE = [  # (changes to GOOD, error class, message after the status prefix)
    (dict(dy=None), ParamNullptrError, "grad_out is a required tensor and must not be None"),
    (dict(x=None), ParamNullptrError, "input is a required tensor and must not be None"),
    (dict(mean=None), ParamNullptrError, "mean is a required tensor and must not be None"),
    (dict(rstd=None), ParamNullptrError, "rstd is a required tensor and must not be None"),
    (dict(mask=(True, True)), ParamInvalidError, "output_mask must be a sequence of 3 bools"),
    (dict(mask=(True, 1, True)), ParamInvalidError, "output_mask must hold 3 bools"),
    (dict(G=0), ParamInvalidError, "group=0 must be an int > 0"),
    (dict(G=-2), ParamInvalidError, "group=-2 must be an int > 0"),
    (dict(G=4, mean=(2, 4), rstd=(2, 4)), ParamInvalidError, "C=6 is not divisible by group=4"),
    (dict(N=-1), ParamInvalidError, "N=-1 must be an int >= 0"),
    (dict(dy=(2, 6, 5)), ParamInvalidError, r"numel\(grad_out\)=60 \(shape \(2, 6, 5\)\) must equal N\*C\*HxW=48"),
    (dict(x=(2, 6, 2)), ParamInvalidError, r"numel\(input\)=24 \(shape \(2, 6, 2\)\) must equal N\*C\*HxW=48"),
    (dict(mean=(2, 2)), ParamInvalidError, r"numel\(mean\)=4 \(shape \(2, 2\)\) must equal N\*group=6"),
    (dict(rstd=(3, 3)), ParamInvalidError, r"numel\(rstd\)=9 \(shape \(3, 3\)\) must equal N\*group=6"),
    (dict(gamma=(5,)), ParamInvalidError, r"numel\(gamma\)=5 \(shape \(5,\)\) must equal C=6"),
    (dict(dy=(2, 6, 1, 1, 1, 1, 1, 1, 4), x=(2, 6, 1, 1, 1, 1, 1, 1, 4)), ParamInvalidError,
     r"grad_out has rank 9, but the rank must be in \[1, 8\]"),
]


@pytest.mark.parametrize("changes,error,message", ERROR_TABLE, ids=[e[2][:40] for e in ERROR_TABLE])
def test_error_table(mode, changes, error, message):
    case = dict(GOOD, **changes)
    tensors = [None if case[k] is None else ones(*case[k]) for k in ("dy", "x", "mean", "rstd", "gamma")]
    with pytest.raises(error, match=message) as info:
        call_backward(mode, *tensors, case["N"], case["C"], case["HxW"], case["G"], case["mask"])
    assert isinstance(info.value, ValueError)
    assert info.value.code == {ParamNullptrError: 161001, ParamInvalidError: 161002}[error]
    assert str(info.value).startswith(f"{error.status} ({error.code}): ")


def test_the_good_case_of_the_error_table_passes(mode):
    tensors = [ones(*GOOD[k]) for k in ("dy", "x", "mean", "rstd", "gamma")]
    dx, dgamma, dbeta = call_backward(mode, *tensors, 2, 6, 4, 3)
    assert dx.shape == (2, 6, 4) and dgamma.shape == dbeta.shape == (6,)


FORWARD_ERRORS = [  # (x shape, gamma shape, beta shape, N, C, HxW, G, eps, message)
    ((2, 6, 4), (6,), (6,), 2, 6, 4, 4, 1e-5, "C=6 is not divisible by group=4"),
    ((2, 6, 4), (6,), (6,), 2, 6, 4, 3, 0.0, "eps=0.0 must be a number > 0"),
    ((2, 6, 4), (5,), (6,), 2, 6, 4, 3, 1e-5, r"numel\(gamma\)=5"),
    ((2, 6, 4), (6,), (7,), 2, 6, 4, 3, 1e-5, r"numel\(beta\)=7"),
    ((48,), (6,), (6,), 2, 6, 4, 3, 1e-5, r"input has rank 1, but the rank must be in \[2, 8\]"),
    ((2, 6, 5), (6,), (6,), 2, 6, 4, 3, 1e-5, r"numel\(input\)=60"),
]


@pytest.mark.parametrize("case", FORWARD_ERRORS, ids=[c[-1][:30] for c in FORWARD_ERRORS])
def test_forward_errors(mode, case):
    x, gamma, beta, N, C, HxW, G, eps, message = case
    with pytest.raises(ParamInvalidError, match=message):
        if mode == "graph":
            Forward(N, C, HxW, G, eps)(ones(*x), ones(*gamma), ones(*beta))
        else:
            group_norm_forward(ones(*x), ones(*gamma), ones(*beta), N, C, HxW, G, eps)


def test_errors_are_exported_value_errors():
    assert issubclass(ms_groupnorm.ParamInvalidError, ValueError)
    assert issubclass(ms_groupnorm.ParamNullptrError, ValueError)
    assert (ParamNullptrError.code, ParamInvalidError.code) == (161001, 161002)


class GroupNormOfNone(nn.Cell):
    def construct(self, dy, x, mean, rstd):
        return group_norm_backward(dy, None, mean, rstd, None, 2, 6, 4, 3)


def test_graph_mode_error_raised_at_compile_time():
    """In GRAPH_MODE the check runs while the graph is compiled: no kernel ever starts."""
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ParamNullptrError, match=r"^ACLNN_ERR_PARAM_NULLPTR \(161001\): input is a required"):
            GroupNormOfNone()(ones(2, 6, 4), ones(2, 6, 4), ones(2, 3), ones(2, 3))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)

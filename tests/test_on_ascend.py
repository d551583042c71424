"""The installed AscendC operators on a real Ascend device (run by kernels/ascendc/check_on_ascend.sh).

Tests marked ``ascend`` need an Ascend device, CANN and the installed operators
(ASCEND_CUSTOM_OPP_PATH); elsewhere conftest.py skips them with a one-line reason. They run
our backward (``routing.backward_op``: in GRAPH_MODE AscendBackward -> ops.Custom with the C++
infer, jit_level O0 as MindSpore documents for aclnn custom operators; in PYNATIVE_MODE the
CustomOpBuilder(backend="Ascend") module) for every tiling mode x dtype pair x output mask,
GRAPH_MODE with dynamic shapes and an unknown rank, the GroupNorm layer in float16/bfloat16
with float32 statistics (our GroupNormSiluMs forward), the fused GroupNorm + SiLU
(GroupNormSiluMs with SiLU on, GroupNormSiluGradMs; ms_groupnorm.backends.ascend) forward and
backward in both modes for every tiling-mode shape x dtype pair x swish_scale, its masks,
the GroupNormSiLU layer and GRAPH dynamic shapes, against the float64
reference (reference for the fused op) and against MindSpore's built-in GroupNormGrad (aclnnGroupNormBackward; its 910B
kernel takes one dtype for all tensors, so the mixed pairs are compared with the reference
only), then print a timing table against the built-in (no timed assertion).

The one test without the marker checks, on any machine, that each shape below really
forces its tiling mode on the 910B's unified buffer.
"""
import itertools
import time

import mindspore as ms
import numpy as np
import pytest

import ms_groupnorm
from cases import assert_close, make_inputs, tensor, to_numpy
from ms_groupnorm import reference
from ms_groupnorm.backends import ascend_pyboost
from ms_groupnorm.ops import routing
from ms_groupnorm.backends import ascend
from ms_groupnorm.backends.ascend_operators import NOT_INSTALLED
import twin

# (x shape, G) per tiling mode of the host tiling on a 192 KiB UB with 40 or 48 vector cores.
MODE_SHAPES = {
    "group_resident": ((8, 32, 8, 8), 8),
    # N*G tasks that spread evenly over 40 and 48 cores (240, 192): an uneven spread (64 groups on 48
    # cores) takes the channel split instead
    "channel_two_pass": ((15, 64, 64, 64), 16),
    "hw_chunks": ((3, 64, 99, 100), 64),
    "hw_one": ((8, 64), 8),
    "channel_split": ((1, 64, 64, 64), 4),  # N*G < cores: (n, c) tasks, dx after SyncAll
    # N*G < cores, but a group over every n is small: one core per group, dgamma/dbeta without stage 2
    "group_across_n": ((1, 64, 10, 10), 4),
}
DTYPE_PAIRS = {
    "fp32": (ms.float32, ms.float32), "fp16": (ms.float16, ms.float16), "bf16": (ms.bfloat16, ms.bfloat16),
    "fp16-fp32stats": (ms.float16, ms.float32), "bf16-fp32stats": (ms.bfloat16, ms.float32),
}
MASKS = [m for m in itertools.product((True, False), repeat=3) if any(m)]
NUMPY_NAME = {ms.float32: "float32", ms.float16: "float16", ms.bfloat16: "bfloat16"}


@pytest.mark.parametrize("mode", list(MODE_SHAPES))
@pytest.mark.parametrize("cores", [40, 48])
def test_each_shape_forces_its_tiling_mode_on_910b(mode, cores):
    shape, G = MODE_SHAPES[mode]
    hxw = int(np.prod(shape[2:], dtype=np.int64))
    for name, (data, stat) in DTYPE_PAIRS.items():
        t = twin.twin_tiling(shape[0], shape[1], hxw, G, NUMPY_NAME[data], NUMPY_NAME[stat],
                                     twin.UB_910B, cores)
        if mode == "channel_split":
            assert t["splitByChannel"] == 1 and t["groupAcrossN"] == 0, name
        elif mode == "group_across_n":
            assert t["groupAcrossN"] == 1 and t["splitByChannel"] == 0, name
        else:
            assert twin.MODE_NAMES[t["mode"]] == mode and t["splitByChannel"] == 0, name


# ---------------------------------------------------------------- on the device
def _set_mode(exec_mode):
    if ms.get_context("device_target") != "Ascend":
        ms.set_device("Ascend")
    if exec_mode == "graph":
        ms.set_context(mode=ms.GRAPH_MODE, jit_config=ascend.GRAPH_JIT_CONFIG)
    else:
        ms.set_context(mode=ms.PYNATIVE_MODE)


class _Ours(ms.nn.Cell):
    """Our backward as the package picks it in the current mode (create after _set_mode)."""

    def __init__(self, G, mask):
        super().__init__()
        self.op = routing.backward_op(G, mask)

    def construct(self, dy, x, mean, rstd, gamma):
        return self.op(dy, x, mean, rstd, gamma)


class _BuiltIn(ms.nn.Cell):
    """MindSpore's own GroupNormGrad primitive (aclnnGroupNormBackward on Ascend)."""

    def __init__(self, G, mask):
        super().__init__()
        from mindspore.ops.auto_generate import GroupNormGrad
        self.op = GroupNormGrad()
        self.G, self.mask = G, mask

    def construct(self, dy, x, mean, rstd, gamma):
        return self.op(dy, x, mean, rstd, gamma, self.G, self.mask[0], self.mask[1], self.mask[2])


def _inputs(shape, G, data, stat, seed=0):
    x, dy, gamma, _, mean, rstd = make_inputs(np.random.default_rng(seed), shape, G, data, stat)
    tensors = (tensor(dy, data), tensor(x, data), tensor(mean.reshape(shape[0], G), stat),
               tensor(rstd.reshape(shape[0], G), stat), tensor(gamma, stat))
    return (dy, x, mean.reshape(shape[0], G), rstd.reshape(shape[0], G), gamma), tensors


@pytest.mark.ascend
@pytest.mark.parametrize("exec_mode", ["graph", "pynative"])
@pytest.mark.parametrize("mask", MASKS, ids=lambda m: "".join("1" if b else "0" for b in m))
@pytest.mark.parametrize("pair", list(DTYPE_PAIRS))
@pytest.mark.parametrize("mode", list(MODE_SHAPES))
def test_backward_on_ascend_matches_reference_and_builtin(mode, pair, mask, exec_mode):
    _set_mode(exec_mode)
    shape, G = MODE_SHAPES[mode]
    data, stat = DTYPE_PAIRS[pair]
    arrays, tensors = _inputs(shape, G, data, stat)
    want = reference.backward(*arrays, G)
    got = _Ours(G, mask)(*tensors)
    builtin = _BuiltIn(G, mask)(*tensors) if data == stat else None
    for k, (name, dtype) in enumerate((("dx", data), ("dgamma", stat), ("dbeta", stat))):
        if not mask[k]:
            assert got[k].shape == (0,), f"{name} is masked off and must be empty"
            continue
        assert_close(got[k], want[k], dtype, f"{name} vs reference")
        if builtin is not None:
            assert_close(got[k], to_numpy(builtin[k]), dtype, f"{name} vs built-in GroupNormGrad")


def _time(cell, tensors, repeats=20):
    cell(*tensors)  # compile / warm up
    ms.runtime.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        cell(*tensors)
    ms.runtime.synchronize()
    return (time.perf_counter() - start) / repeats


@pytest.mark.ascend
def test_timing_table_against_the_builtin():
    """Prints per-call time of our operator and of the built-in, PYNATIVE, full mask. A
    table, not a check: it fails only if either operator fails to run."""
    _set_mode("pynative")
    rows = []
    for mode, pair in itertools.product(MODE_SHAPES, ("fp32", "fp16", "bf16")):
        shape, G = MODE_SHAPES[mode]
        data, stat = DTYPE_PAIRS[pair]
        _, tensors = _inputs(shape, G, data, stat)
        ours = _time(_Ours(G, (True, True, True)), tensors)
        theirs = _time(_BuiltIn(G, (True, True, True)), tensors)
        rows.append((mode, pair, shape, ours, theirs))
    print("\nGroupNormGradMs vs built-in GroupNormGrad (PYNATIVE, mean of 20 calls)")
    print(f"{'mode':<18}{'dtype':<7}{'shape':<22}{'ours us':>10}{'built-in us':>13}{'ratio':>8}")
    for mode, pair, shape, ours, theirs in rows:
        print(f"{mode:<18}{pair:<7}{str(shape):<22}{ours * 1e6:>10.1f}{theirs * 1e6:>13.1f}{ours / theirs:>8.2f}")


@pytest.mark.ascend
def test_pynative_uses_the_ascend_module():
    _set_mode("pynative")
    op = routing.backward_op(4, (True, True, True))
    assert isinstance(op, ascend.PynativeAscendBackward)
    assert op.grad == ascend_pyboost.module().group_norm_grad


@pytest.mark.ascend
def test_graph_dynamic_shapes_and_rank():
    """set_inputs with unknown dimensions, then with an unknown rank: the C++ infer."""
    _set_mode("graph")
    G = 4
    for dynamic in ([None, 16, None, None], None):
        net = _Ours(G, (True, True, True))
        spec = ms.Tensor(shape=dynamic, dtype=ms.float32)
        stat = ms.Tensor(shape=[None, G], dtype=ms.float32)
        net.set_inputs(spec, spec, stat, stat, ms.Tensor(shape=[16], dtype=ms.float32))
        for shape in ((2, 16, 5, 6), (3, 16, 7, 2)):
            arrays, tensors = _inputs(shape, G, ms.float32, ms.float32, seed=sum(shape))
            want = reference.backward(*arrays, G)
            got = net(*tensors)
            for k, name in enumerate(("dx", "dgamma", "dbeta")):
                assert_close(got[k], want[k], ms.float32, f"{name} {shape} dynamic={dynamic}")


@pytest.mark.ascend
@pytest.mark.parametrize("exec_mode", ["graph", "pynative"])
@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16], ids=["fp16", "bf16"])
def test_layer_low_precision_with_float32_statistics(dtype, exec_mode):
    """fp16/bf16 input through ms_groupnorm.GroupNorm (float32 parameters): gradients vs the
    float64 reference; in PYNATIVE_MODE the forward is our GroupNormSiluMs, whose mean/rstd
    are float32, so the backward runs the mixed (data, float32) kernels."""
    _set_mode(exec_mode)
    if exec_mode == "pynative":
        assert ascend_pyboost.forward_installed(), "GroupNormSiluMs is not installed (build.sh builds it)"
        _, mean, _ = ms_groupnorm.group_norm_forward(ms.Tensor(np.ones((2, 8, 3), np.float32), dtype),
                                                     ms.Tensor(np.ones(8, np.float32)),
                                                     ms.Tensor(np.zeros(8, np.float32)), 2, 8, 3, 4)
        assert mean.dtype == ms.float32
    rng = np.random.default_rng(5)
    N, C, H, W, G = 2, 8, 6, 5, 4
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    x_in = to_numpy(ms.Tensor(x, dtype))  # what the kernels see
    w = rng.standard_normal((N, C, H, W)).astype(np.float32)
    net = ms_groupnorm.GroupNorm(G, C)

    def loss(t):
        return (net(t).astype(ms.float32) * ms.Tensor(w)).sum()

    dx, (dgamma, dbeta) = ms.grad(loss, grad_position=0, weights=net.trainable_params())(ms.Tensor(x, dtype))
    gamma = net.gamma.asnumpy().astype(np.float64)
    _, mean, rstd = reference.forward(x_in, gamma, np.zeros(C), G)
    dy = to_numpy(ms.Tensor(w, dtype))
    want = reference.backward(dy, x_in, mean, rstd, gamma, G)
    assert_close(dx, want[0], dtype, "dx")
    assert_close(dgamma, want[1], ms.float32, "dgamma")
    assert_close(dbeta, want[2], ms.float32, "dbeta")


# ---------------------------------------------------------------- the fused GroupNorm + SiLU on the device
class _SiluForward(ms.nn.Cell):
    """group_norm_silu_forward as a Cell (compiled in GRAPH_MODE): GroupNormSiluMs, SiLU on."""

    def __init__(self, N, C, HxW, G, swish_scale):
        super().__init__()
        self.args = (N, C, HxW, G, 1e-5, swish_scale)

    def construct(self, x, gamma, beta):
        return ms_groupnorm.group_norm_silu_forward(x, gamma, beta, *self.args)


class _SiluBackward(ms.nn.Cell):
    """group_norm_silu_backward as a Cell: GroupNormSiluGradMs."""

    def __init__(self, N, C, HxW, G, mask, swish_scale):
        super().__init__()
        self.args = (N, C, HxW, G, mask, swish_scale)

    def construct(self, dz, x, mean, rstd, gamma, beta):
        return ms_groupnorm.group_norm_silu_backward(dz, x, mean, rstd, gamma, beta, *self.args)


def _check_fused_on_device(shape, G, data, stat, mask, swish_scale, seed=0):
    assert routing.fused_backend() == "ascend", NOT_INSTALLED
    N, C, HxW = shape[0], shape[1], int(np.prod(shape[2:], dtype=np.int64))
    x, dz, gamma, beta, _, _ = make_inputs(np.random.default_rng(seed), shape, G, data, stat)
    z, mean, rstd = _SiluForward(N, C, HxW, G, swish_scale)(tensor(x, data), tensor(gamma, stat), tensor(beta, stat))
    want_z, want_mean, want_rstd = reference.silu_forward(x, gamma, beta, G, 1e-5, swish_scale)
    assert (z.dtype, mean.dtype, tuple(mean.shape)) == (data, stat, (N, G))
    assert_close(z, want_z, data, "z vs reference")
    assert_close(mean, want_mean, stat, "mean vs reference")
    assert_close(rstd, want_rstd, stat, "rstd vs reference")
    mean, rstd = to_numpy(mean), to_numpy(rstd)
    got = _SiluBackward(N, C, HxW, G, mask, swish_scale)(tensor(dz, data), tensor(x, data), tensor(mean, stat),
                                                         tensor(rstd, stat), tensor(gamma, stat), tensor(beta, stat))
    want = reference.silu_backward(dz, x, mean, rstd, gamma, beta, G, swish_scale)
    for k, (name, dtype) in enumerate((("dx", data), ("dgamma", stat), ("dbeta", stat))):
        if not mask[k]:
            assert got[k] is None, f"{name} is masked off"
            continue
        assert got[k].dtype == dtype, name
        assert_close(got[k], want[k], dtype, f"{name} vs reference")


@pytest.mark.ascend
@pytest.mark.parametrize("exec_mode", ["graph", "pynative"])
@pytest.mark.parametrize("swish_scale", [1.0, 1.7])
@pytest.mark.parametrize("pair", list(DTYPE_PAIRS))
@pytest.mark.parametrize("mode", list(MODE_SHAPES))
def test_fused_silu_on_ascend_matches_reference(mode, pair, swish_scale, exec_mode):
    """group_norm_silu_forward/backward on GroupNormSiluMs + GroupNormSiluGradMs for each
    tiling-mode shape, dtype pair and swish_scale (1.7: the scale inside sigmoid' matters)."""
    _set_mode(exec_mode)
    shape, G = MODE_SHAPES[mode]
    _check_fused_on_device(shape, G, *DTYPE_PAIRS[pair], (True, True, True), swish_scale)


@pytest.mark.ascend
@pytest.mark.parametrize("exec_mode", ["graph", "pynative"])
@pytest.mark.parametrize("mask", [m for m in MASKS if m != (True, True, True)],
                         ids=lambda m: "".join("1" if b else "0" for b in m))
@pytest.mark.parametrize("pair", ["fp32", "bf16-fp32stats"])
def test_fused_silu_masks_on_ascend(pair, mask, exec_mode):
    _set_mode(exec_mode)
    _check_fused_on_device((4, 32, 9, 7), 8, *DTYPE_PAIRS[pair], mask, 0.8, seed=1)


@pytest.mark.ascend
@pytest.mark.parametrize("exec_mode", ["graph", "pynative"])
@pytest.mark.parametrize("dtype", [ms.float32, ms.float16, ms.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_fused_layer_trains_on_ascend(dtype, exec_mode):
    """GroupNormSiLU (float32 parameters) on the fused operators: float32 statistics for every
    input dtype, gradients vs the float64 reference."""
    _set_mode(exec_mode)
    assert routing.fused_backend() == "ascend", NOT_INSTALLED
    rng = np.random.default_rng(6)
    N, C, H, W, G = 2, 32, 6, 5, 8
    x_in = to_numpy(ms.Tensor(rng.standard_normal((N, C, H, W)).astype(np.float32), dtype))
    w = rng.standard_normal((N, C, H, W)).astype(np.float32)
    net = ms_groupnorm.GroupNormSiLU(G, C)
    net.gamma.set_data(ms.Tensor((rng.standard_normal(C) + 1).astype(np.float32)))
    net.beta.set_data(ms.Tensor(rng.standard_normal(C).astype(np.float32)))

    def loss(t):
        return (net(t).astype(ms.float32) * ms.Tensor(w)).sum()

    dx, (dgamma, dbeta) = ms.grad(loss, grad_position=0, weights=net.trainable_params())(ms.Tensor(x_in, dtype))
    gamma, beta = net.gamma.asnumpy().astype(np.float64), net.beta.asnumpy().astype(np.float64)
    _, mean, rstd = reference.silu_forward(x_in, gamma, beta, G)
    want = reference.silu_backward(to_numpy(ms.Tensor(w, dtype)), x_in, mean, rstd, gamma, beta, G)
    assert_close(dx, want[0], dtype, "dx")
    assert_close(dgamma, want[1], ms.float32, "dgamma")
    assert_close(dbeta, want[2], ms.float32, "dbeta")


class _FusedOps(ms.nn.Cell):
    """The fused forward, then the fused backward from its mean/rstd, as the package picks
    them in the current mode (GRAPH_MODE: AscendOwnForward with SiLU on / AscendSiluBackward)."""

    def __init__(self, G, swish_scale):
        super().__init__()
        self.forward = routing.silu_forward_op(G, 1e-5, swish_scale)
        self.backward = routing.silu_backward_op(G, swish_scale)

    def construct(self, x, gamma, beta, dz):
        z, mean, rstd = self.forward(x, gamma, beta)
        dx, dgamma, dbeta = self.backward(dz, x, mean, rstd, gamma, beta)
        return z, mean, rstd, dx, dgamma, dbeta


@pytest.mark.ascend
def test_fused_graph_dynamic_shapes_and_rank():
    """One compiled net of the fused forward and backward with set_inputs of unknown
    dimensions, then of an unknown rank, run on two shapes: the C++ infers of GroupNormSiluMs
    and GroupNormSiluGradMs."""
    _set_mode("graph")
    assert routing.fused_backend() == "ascend", NOT_INSTALLED
    G, C, k = 4, 16, 1.7
    for dynamic in ([None, C, None, None], None):
        net = _FusedOps(G, k)
        spec = ms.Tensor(shape=dynamic, dtype=ms.float32)
        param = ms.Tensor(shape=[C], dtype=ms.float32)
        net.set_inputs(spec, param, param, spec)
        for shape in ((2, C, 5, 6), (3, C, 7, 2)):
            x, dz, gamma, beta, _, _ = make_inputs(np.random.default_rng(sum(shape)), shape, G, ms.float32,
                                                   ms.float32)
            z, mean, rstd, *got = net(tensor(x, ms.float32), tensor(gamma, ms.float32), tensor(beta, ms.float32),
                                      tensor(dz, ms.float32))
            want_z, want_mean, want_rstd = reference.silu_forward(x, gamma, beta, G, 1e-5, k)
            assert_close(z, want_z, ms.float32, f"z {shape} dynamic={dynamic}")
            assert_close(mean, want_mean, ms.float32, f"mean {shape} dynamic={dynamic}")
            want = reference.silu_backward(dz, x, want_mean, want_rstd, gamma, beta, G, k)
            for i, name in enumerate(("dx", "dgamma", "dbeta")):
                assert_close(got[i], want[i], ms.float32, f"{name} {shape} dynamic={dynamic}")

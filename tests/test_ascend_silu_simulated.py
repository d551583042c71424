"""The fused GroupNorm + SiLU on a simulated Ascend device (the simulation of
tests/test_ascend_simulated.py: MindSpore's ops.Custom taking its Ascend branch with a
pyboost_custom_ext that refuses non-tensors, CustomOpBuilder.load intercepted by a stand-in
module that checks every argument as pybind11 would and computes with the float64
reference, a fake CANN tree with the aclnn headers generated from op_host's OpDefs).

PYNATIVE_MODE must reach the device only through the Ascend module's fused functions
(group_norm_silu, group_norm_silu_autograd, group_norm_silu_grad) with the scalars the
operators take (swish_scale included); GRAPH_MODE must build ops.Custom for
GroupNormSiluMs/GroupNormSiluGradMs through MindSpore's Ascend branch, with C++ infers for
static, unknown-dimension and unknown-rank shapes. Without the fused backward operator
installed, the unfused pair runs as before and group_norm_silu_backward says what is missing.
"""
import subprocess

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

import ms_groupnorm
from cases import assert_close
from ms_groupnorm.ops import routing
from ms_groupnorm.ops import double_backward
from ms_groupnorm.backends import ascend
from ms_groupnorm.backends import ascend_pyboost
from ms_groupnorm import reference
from test_ascend_simulated import NP, WeightedSum, simulated  # noqa: F401  (simulated: the fixture)

FUSED = {"with_forward": True, "with_silu_grad": True}


def _set_params(net, gamma, beta):
    for param, value in zip(net.trainable_params(), (gamma, beta)):
        param.set_data(Tensor(value.astype(np.float32)))


@pytest.mark.parametrize("layer_cls", [ms_groupnorm.GroupNormSiLU, ms_groupnorm.mint.GroupNormSiLU],
                         ids=["GroupNormSiLU", "mint"])
@pytest.mark.parametrize("dtype,tol", [(ms.float32, 1e-5), (ms.float16, 3e-3)], ids=["fp32", "fp16"])
def test_pynative_training_step_runs_the_fused_operators(simulated, layer_cls, dtype, tol):
    """A training step of the fused layer: forward group_norm_silu_autograd (GroupNormSiluMs,
    SiLU on), backward group_norm_silu_grad (GroupNormSiluGradMs) with float32 statistics and
    parameters for float16 data; gradients and the SGD update as the float64 reference's."""
    module = simulated(**FUSED)
    rng = np.random.default_rng(0)
    N, C, H, W, G, lr = 2, 6, 3, 4, 3, 0.1
    x = (rng.standard_normal((N, C, H, W)) + 0.5).astype(NP[dtype]).astype(np.float64)
    weight = rng.standard_normal((N, C, H, W)).astype(np.float32)
    gamma0 = (rng.standard_normal(C) + 1).astype(np.float32).astype(np.float64)
    beta0 = rng.standard_normal(C).astype(np.float32).astype(np.float64)
    net = layer_cls(G, C)
    _set_params(net, gamma0, beta0)
    loss = WeightedSum(net, weight)
    grad_x = ms.grad(loss, grad_position=0)(Tensor(x, dtype))
    nn.TrainOneStepCell(loss, nn.SGD(net.trainable_params(), learning_rate=lr))(Tensor(x, dtype))
    dz = weight.astype(NP[dtype]).astype(np.float64)
    _, mean, rstd = reference.silu_forward(x, gamma0, beta0, G)
    dx, dgamma, dbeta = reference.silu_backward(dz, x, mean, rstd, gamma0, beta0, G)
    assert np.abs(grad_x.asnumpy().astype(np.float64) - dx).max() / max(1.0, np.abs(dx).max()) < tol
    gamma1, beta1 = (p.asnumpy() for p in net.trainable_params())
    np.testing.assert_allclose(gamma1, gamma0 - lr * dgamma, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(beta1, beta0 - lr * dbeta, rtol=1e-4, atol=1e-4)
    names = [c[0] for c in module.calls]
    assert "group_norm_silu_autograd" in names and "group_norm_silu_grad" in names
    assert not {"group_norm", "group_norm_autograd", "group_norm_grad"} & set(names), "the unfused pair ran"
    for call in (c for c in module.calls if c[0] == "group_norm_silu_grad"):
        assert call[1:4] == (dtype, ms.float32, ms.float32) and call[4] == G and call[5] == 1.0


@pytest.mark.parametrize("mask", [(True, False, True), (False, True, False)])
def test_pynative_functional_backward_with_mask_and_swish_scale(simulated, mask):
    """group_norm_silu_backward on GroupNormSiluGradMs: swish_scale 1.7 and the mask reach
    the operator's scalar arguments; a None gamma goes as ones; masked outputs are None."""
    module = simulated(**FUSED)
    rng = np.random.default_rng(1)
    N, C, HxW, G, k = 2, 4, 5, 2, 1.7
    x = rng.standard_normal((N, C, HxW)).astype(np.float32)
    dz = rng.standard_normal((N, C, HxW)).astype(np.float32)
    beta = rng.standard_normal(C).astype(np.float32)
    _, mean, rstd = reference.silu_forward(x, None, beta, G)
    mean, rstd = mean.reshape(N, G).astype(np.float32), rstd.reshape(N, G).astype(np.float32)
    got = ms_groupnorm.group_norm_silu_backward(Tensor(dz), Tensor(x), Tensor(mean), Tensor(rstd), None,
                                                Tensor(beta), N, C, HxW, G, mask, swish_scale=k)
    want = reference.silu_backward(dz, x, mean, rstd, None, beta, G, k)
    for bit, out, ref, name in zip(mask, got, want, ("dx", "dgamma", "dbeta")):
        if bit:
            assert_close(out, ref, ms.float32, name)
        else:
            assert out is None, name
    assert module.calls[-1][0] == "group_norm_silu_grad"
    assert module.calls[-1][4:] == (G, k, mask)
    # the reference with swish_scale 1 differs: the scale did matter
    assert np.abs(reference.silu_backward(dz, x, mean, rstd, None, beta, G)[2] - want[2]).max() > 1e-2


@pytest.mark.parametrize("dtype,stat", [(ms.float32, ms.float32), (ms.bfloat16, ms.float32),
                                        (ms.float16, ms.float16)], ids=["fp32", "bf16-fp32", "fp16-fp16"])
def test_pynative_functional_forward_and_its_gradient_with_swish_scale(simulated, dtype, stat):
    """group_norm_silu_forward with swish_scale 0.6: z, mean/rstd (gamma's dtype) from
    GroupNormSiluMs with SiLU on; its gradient through the recorded autograd function
    (GroupNormSiluGradMs with the same scale)."""
    from cases import to_numpy

    module = simulated(**FUSED)
    rng = np.random.default_rng(2)
    N, C, HxW, G, k = 2, 6, 7, 3, 0.6
    x = to_numpy(Tensor(rng.standard_normal((N, C, HxW)).astype(np.float32), dtype))
    gamma = to_numpy(Tensor(rng.standard_normal(C).astype(np.float32), stat))
    beta = to_numpy(Tensor(rng.standard_normal(C).astype(np.float32), stat))
    w = rng.standard_normal((N, C, HxW)).astype(np.float32)
    args = (Tensor(x, dtype), Tensor(gamma, stat), Tensor(beta, stat))
    z, mean, rstd = ms_groupnorm.group_norm_silu_forward(*args, N, C, HxW, G, 1e-5, k)
    want_z, want_mean, want_rstd = reference.silu_forward(x, gamma, beta, G, 1e-5, k)
    assert (z.dtype, mean.dtype, rstd.dtype, mean.shape) == (dtype, stat, stat, (N, G))
    assert_close(z, want_z, dtype, "z")
    assert_close(mean, want_mean, stat, "mean")
    assert_close(rstd, want_rstd, stat, "rstd")
    assert ("group_norm_silu", dtype, ms.float32, ms.float32, G, k) in module.calls

    def loss(x, gamma, beta):
        out = ms_groupnorm.group_norm_silu_forward(x, gamma, beta, N, C, HxW, G, 1e-5, k)[0]
        return (out.astype(ms.float32) * Tensor(w)).sum()

    got = ms.grad(loss, grad_position=(0, 1, 2))(*args)
    dz = to_numpy(Tensor(w, dtype))
    want = reference.silu_backward(dz, x, want_mean, want_rstd, gamma, beta, G, k)
    for out, ref, out_dtype, name in zip(got, want, (dtype, stat, stat), ("dx", "dgamma", "dbeta")):
        assert out.dtype == out_dtype, name
        assert_close(out, ref, out_dtype if stat == ms.float32 else stat, name)
    grads = [c for c in module.calls if c[0] == "group_norm_silu_grad"]
    assert grads and all(c[2] == ms.float32 and c[5] == k for c in grads)


@pytest.mark.parametrize("installed", [{}, {"with_forward": True}, {"with_silu_grad": True}],
                         ids=["none", "forward only", "backward only"])
def test_without_the_fused_operators_the_unfused_pair_runs(simulated, installed):
    """GroupNormSiluGradMs (or both) not installed: the layer runs our GroupNorm then SiLU as
    before, and group_norm_silu_backward raises naming the missing operators."""
    module = simulated(**installed)
    assert routing.fused_backend() is None
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 6, 5)).astype(np.float32)
    net = ms_groupnorm.GroupNormSiLU(3, 6)
    grad_x = ms.grad(WeightedSum(net, np.ones((2, 6, 5), np.float32)), grad_position=0)(Tensor(x))
    _, mean, rstd = reference.silu_forward(x, None, None, 3)
    want = reference.silu_backward(np.ones_like(x), x, mean, rstd, None, None, 3)[0]
    assert_close(grad_x, want, ms.float32, "dx")
    names = {c[0] for c in module.calls}
    assert "group_norm_grad" in names and not any(n.startswith("group_norm_silu") for n in names)
    t = Tensor(x)
    s = Tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(NotImplementedError, match="GroupNormSiluGradMs.*build.sh"):
        ms_groupnorm.group_norm_silu_backward(t, t, s, s, None, None, 2, 6, 5, 3)


# ---------------------------------------------------------------- GRAPH_MODE
SILU_GRAD_INFER_DRIVER = r"""
#include <dlfcn.h>
#include <cstdio>
#include <vector>
#include <cstdint>
using Shape = std::vector<std::vector<int64_t>> (*)(int *, int64_t **, void *);
using Type = std::vector<int> (*)(std::vector<int>, void *);
int main(int, char **argv) {
  void *lib = dlopen(argv[1], RTLD_NOW);
  auto shape = lib ? reinterpret_cast<Shape>(dlsym(lib, "aclnnGroupNormSiluGradMsInferShape")) : nullptr;
  auto type = lib ? reinterpret_cast<Type>(dlsym(lib, "aclnnGroupNormSiluGradMsInferType")) : nullptr;
  if (!shape || !type) { std::printf("no hooks\n"); return 1; }
  // dy, mean, rstd, x, gamma, beta (+ 5 scalars): static, dynamic dims, dynamic rank
  int64_t x1[] = {2, 6, 4, 5}, x2[] = {-1, 6, -1}, x3[] = {-2}, st[] = {2, 3}, g[] = {6}, none[] = {0};
  int64_t *cases[3] = {x1, x2, x3};
  int ranks[3] = {4, 3, 1};
  for (int c = 0; c < 3; ++c) {
    int nd[] = {ranks[c], 2, 2, ranks[c], 1, 1, 0, 0, 0, 0, 0};
    int64_t *sh[] = {cases[c], st, st, cases[c], g, g, none, none, none, none, none};
    for (const auto &out : shape(nd, sh, nullptr)) {
      for (auto d : out) std::printf("%lld ", static_cast<long long>(d));
      std::printf("|");
    }
    std::printf("\n");
  }
  // bfloat16 (46) data with float32 (43) statistics
  for (int t : type({46, 43, 43, 46, 43, 43, 35, 43, 30, 30, 30}, nullptr)) std::printf("%d ", t);
  std::printf("\n");
  return 0;
}
"""


def test_graph_silu_backward_op_under_the_simulated_device(simulated, tmp_path):
    """GroupNormSiluGradMs in GRAPH_MODE, built by MindSpore's own Ascend branch: C++ infer
    (func "<group_norm_ascend_infer.cc>:aclnnGroupNormSiluGradMs"), the callback compiled
    from the installed header, its parameter types; the infer passes unknown dims and an
    unknown rank through and gives dx x's dtype, dgamma/dbeta the statistics'."""
    simulated(**FUSED)
    op = ascend.silu_backward_custom()
    assert op.is_ascend_c and hasattr(op, "custom_pyboost")
    so_path, func_name = op.func.rsplit(":", 1)
    assert func_name == "aclnnGroupNormSiluGradMs" and so_path.endswith("group_norm_ascend_infer.cc.so")
    assert op.attrs["cpp_infer_shape"] and op.attrs["cpp_infer_type"]
    assert list(op.attrs["custom_inputs_type"]) == ["aclTensor*"] * 6 + ["int64_t", "double", "bool", "bool",
                                                                          "bool"] + ["aclTensor*"] * 3
    driver = tmp_path / "driver.cc"
    driver.write_text(SILU_GRAD_INFER_DRIVER)
    subprocess.run(["g++", "-std=c++17", "-o", str(tmp_path / "driver"), str(driver), "-ldl"], check=True)
    out = subprocess.run([str(tmp_path / "driver"), so_path], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["2 6 4 5 |6 |6 |", "-1 6 -1 |6 |6 |", "-2 |6 |6 |", "46 43 43 "]


def test_graph_picks_the_fused_cells_and_pynative_the_module(simulated):
    """GRAPH_MODE: AscendOwnForward (SiLU on) on GroupNormSiluMs (infer for num_groups 3) whose bprop is
    AscendSiluBackward on GroupNormSiluGradMs, both with the swish_scale asked for; the
    functional backward is that Cell too. PYNATIVE_MODE: the module's functions."""
    simulated(**FUSED)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        fwd = routing.silu_forward_op(3, 1e-5, 1.7, (True, False, True))
        assert isinstance(fwd, ascend.AscendOwnForward) and fwd.activate_silu and fwd.swish_scale == 1.7
        assert fwd.op.func.endswith("group_norm_silu_infer_g3.cc.so:aclnnGroupNormSiluMs")
        assert isinstance(fwd.backward, ascend.AscendSiluBackward)
        assert (fwd.backward.swish_scale, fwd.backward.mask) == (1.7, (True, False, True))
        assert fwd.backward.grad.op.func.endswith(":aclnnGroupNormSiluGradMs")
        bwd = routing.silu_backward_op(3, 0.5, (False, True, True))
        assert isinstance(bwd, ascend.AscendSiluBackward) and bwd.swish_scale == 0.5
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert isinstance(routing.silu_forward_op(3, 1e-5, 1.7), ascend.PynativeAscendForward)
    assert isinstance(routing.silu_backward_op(3, 1.7), ascend.PynativeAscendBackward)


class ForwardInCannOrder(nn.Cell):
    """Stands in for GroupNormSiluMs at the operator boundary: CANN's argument order and
    call-time scalars, which pick the CPU op computing it (a wrong swish_scale gives wrong
    numbers; activate_silu False, plain GroupNorm, would give z = 0 here, so a wrong flag
    fails the test too)."""

    def construct(self, x, gamma, beta, num_groups, eps, activate_silu, swish_scale):
        op = routing._forward_op(routing.GROUP_NORM_SILU, (num_groups, eps, swish_scale), (True, True, True), "cpu")
        z, mean, rstd = op(x, gamma, beta)
        if not activate_silu:
            z = z * 0
        return z, mean, rstd


class SiluGradInCannOrder(nn.Cell):
    """Stands in for GroupNormSiluGradMs: CANN's order (dy, mean, rstd, x, gamma, beta, then
    num_groups, swish_scale and the three output flags), the CPU fused backward computing."""

    def construct(self, dy, mean, rstd, x, gamma, beta, num_groups, swish_scale, dx_req, dgamma_req, dbeta_req):
        op = routing._backward_op(routing.GROUP_NORM_SILU.backward, (num_groups, swish_scale),
                                  (dx_req, dgamma_req, dbeta_req), "cpu")
        return op(dy, x, mean, rstd, gamma, beta)


class Net(nn.Cell):
    def __init__(self, forward, gamma, beta):
        super().__init__()
        self.forward = forward
        self.gamma = ms.Parameter(Tensor(gamma), name="gamma")
        self.beta = ms.Parameter(Tensor(beta), name="beta")

    def construct(self, x, w):
        return (self.forward(x, self.gamma, self.beta)[0].astype(ms.float32) * w).sum()


def test_graph_cells_train_with_float32_statistics_and_swish_scale(mode, rng):
    """AscendOwnForward (SiLU on) / AscendSiluBackward (the GRAPH_MODE route) with CPU stand-ins in
    CANN's order at the operator boundary: float16 data, float32 statistics and parameters,
    swish_scale 1.7; gradients as the float64 reference's, in both modes."""
    G, shape, k = 3, (2, 6, 4, 5), 1.7
    backward = ascend.AscendSiluBackward(G, k, (True, True, True),
                                            double_backward.group_norm_silu_backward_bprop(
                                                G, k, (True, True, True), double_backward.OF_X),
                                            op=SiluGradInCannOrder())
    forward = ascend.AscendOwnForward((G, 1e-5, True, k), backward, backward_takes_beta=True, op=ForwardInCannOrder())
    gamma = (rng.standard_normal(shape[1]) + 1).astype(np.float32)
    beta = rng.standard_normal(shape[1]).astype(np.float32)
    net = Net(forward, gamma, beta)
    x = rng.standard_normal(shape).astype(np.float16)
    w = rng.standard_normal(shape).astype(np.float32)
    z, mean, _ = forward(Tensor(x), net.gamma, net.beta)
    assert mean.dtype == ms.float32 and z.dtype == ms.float16
    x64 = x.astype(np.float64)
    want_z, want_mean, want_rstd = reference.silu_forward(x64, gamma, beta, G, 1e-5, k)
    assert_close(z, want_z, ms.float16, "z")
    dx, (dgamma, dbeta) = ms.grad(net, grad_position=0, weights=[net.gamma, net.beta])(Tensor(x), Tensor(w))
    want = reference.silu_backward(w.astype(np.float16).astype(np.float64), x64, want_mean, want_rstd, gamma, beta,
                                   G, k)
    assert_close(dx, want[0], ms.float16, "dx")
    assert_close(dgamma, want[1], ms.float32, "dgamma")
    assert_close(dbeta, want[2], ms.float32, "dbeta")


@pytest.fixture
def graph_route_with_stand_ins(monkeypatch):
    """The GRAPH_MODE Ascend route of the package as a user's layer reaches it
    (MS_GROUPNORM_BACKEND=ascend, both fused operators "installed"), with the two ops.Custom
    replaced by the CPU stand-ins in CANN's order above (MindSpore's Ascend ops.Custom
    cannot run here)."""
    monkeypatch.setenv(routing.BACKEND_ENV, "ascend")
    monkeypatch.setattr(ascend_pyboost, "installed", lambda op_type: True)
    monkeypatch.setattr(ascend, "ascend_forward_custom", lambda group: ForwardInCannOrder())
    monkeypatch.setattr(ascend, "silu_backward_custom", SiluGradInCannOrder)
    routing.clear_op_caches()
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)
    routing.clear_op_caches()


def test_graph_layer_and_functional_backward_take_the_fused_route(graph_route_with_stand_ins, rng):
    """GRAPH_MODE: GroupNormSiLU's compiled construct picks AscendOwnForward with SiLU on (bprop
    AscendSiluBackward): float16 input, float32 statistics and parameters, the reference's
    gradients; a compiled group_norm_silu_backward with a mask, a None gamma and
    swish_scale 1.2 runs AscendSiluBackward."""
    G, shape = 3, (2, 6, 4, 5)
    net = ms_groupnorm.GroupNormSiLU(G, shape[1])
    gamma = (rng.standard_normal(shape[1]) + 1).astype(np.float32)
    beta = rng.standard_normal(shape[1]).astype(np.float32)
    _set_params(net, gamma, beta)
    x = rng.standard_normal(shape).astype(np.float16)
    w = rng.standard_normal(shape).astype(np.float32)
    loss = WeightedSum(net, w)
    dx, (dgamma, dbeta) = ms.grad(loss, grad_position=0, weights=net.trainable_params())(Tensor(x))
    x64 = x.astype(np.float64)
    _, mean, rstd = reference.silu_forward(x64, gamma, beta, G)
    want = reference.silu_backward(w.astype(np.float16).astype(np.float64), x64, mean, rstd, gamma, beta, G)
    assert_close(dx, want[0], ms.float16, "dx")
    assert_close(dgamma, want[1], ms.float32, "dgamma")
    assert_close(dbeta, want[2], ms.float32, "dbeta")
    # the compile created the fused Cells (and nothing else could have run: the unfused
    # route's GroupNorm ops need CANN's environment, which is not set here)
    hits = routing._forward_op.cache_info().hits
    op = routing._forward_op(routing.GROUP_NORM_SILU, (G, 1e-5, 1.0), (True, True, True), "ascend")
    assert routing._forward_op.cache_info().hits == hits + 1  # created by the compile, not now
    assert isinstance(op, ascend.AscendOwnForward) and op.activate_silu
    assert isinstance(op.backward, ascend.AscendSiluBackward)

    class Backward(nn.Cell):
        def construct(self, dz, x, mean, rstd, beta):
            return ms_groupnorm.group_norm_silu_backward(dz, x, mean, rstd, None, beta, 2, 6, 20, G,
                                                         (True, False, True), 1.2)

    dz = rng.standard_normal(shape).astype(np.float32)
    x32 = x.astype(np.float32)
    _, mean, rstd = reference.silu_forward(x32, None, beta, G)
    mean, rstd = mean.reshape(2, G).astype(np.float32), rstd.reshape(2, G).astype(np.float32)
    got = Backward()(Tensor(dz), Tensor(x32), Tensor(mean), Tensor(rstd), Tensor(beta))
    want = reference.silu_backward(dz, x32, mean, rstd, None, beta, G, 1.2)
    assert got[1] is None
    assert_close(got[0], want[0], ms.float32, "dx")
    assert_close(got[2], want[2], ms.float32, "dbeta")


def test_the_silu_grad_description_matches_its_op_def():
    import ascend_fake_cann

    op = ascend_fake_cann.op_definitions()["silu_grad"]
    d = ascend.GROUP_NORM_SILU_GRAD_MS
    assert op["op_type"] == d.op_type
    assert [n for n, _ in op["inputs"]] == list(d.inputs) and [n for n, _ in op["outputs"]] == list(d.outputs)
    assert [(n, t.lower()) for n, t in op["attrs"]] == list(d.attrs)
    assert ascend.GROUP_NORM_SILU_GRAD_MS.aclnn_func == "aclnn" + d.op_type
    assert ascend.GROUP_NORM_GRAD_MS.infer_source.is_file()

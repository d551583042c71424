"""ms_groupnorm's Ascend routes, run on CPU against a simulated device.

What is simulated, and the rules each stand-in enforces (from MindSpore 2.10's sources):
* ``$MS_GROUPNORM_BACKEND=ascend`` selects the Ascend routes (documented as simulation).
* MindSpore's ``ops.Custom`` takes its Ascend branch: ``custom_ops.context`` reports device
  target "Ascend", so ``__init__`` sets ``is_ascend_c`` and ``custom_pyboost`` and
  generates/compiles the aclnn callback from the installed header, as on a 910B. Its
  PyNative call, ``pyboost_custom_ext``, is replaced by one that raises the TypeError the
  real one raises for any non-tensor argument (its op is declared tensors-only) and
  otherwise refuses to run (there is no device).
* ``ops.CustomOpBuilder(..., backend="Ascend").load()`` returns a stand-in module with the
  C++ module's function signatures, checked as pybind11 checks them (a tensor where
  ms::Tensor is declared, int for int64_t, bool for bool, int/float for double), computing
  with the float64 numpy reference and returning the dtypes the operators return.
* A fake CANN tree (tests/ascend_fake_cann.py): $ASCEND_OPP_PATH, and
  $ASCEND_CUSTOM_OPP_PATH with the aclnn headers generated from op_host.
"""
import subprocess

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn, ops
from mindspore.ops.operations import custom_ops

import ascend_fake_cann
import ms_groupnorm
from cases import assert_close
from ms_groupnorm import reference
from ms_groupnorm._compat import recording_gradient
from ms_groupnorm.backends import ascend_pyboost
from ms_groupnorm.ops import routing
from ms_groupnorm.backends import ascend

NP = {ms.float32: np.float32, ms.float16: np.float16}


class _AscendContext:
    """custom_ops' view of ``mindspore.context`` with device target "Ascend"."""

    def __init__(self, real):
        self._real = real

    def get_context(self, key):
        return "Ascend" if key == "device_target" else self._real.get_context(key)

    def __getattr__(self, name):
        return getattr(self._real, name)


def strict_pyboost_custom_ext(prim, args):
    (inputs,) = args
    for value in inputs:
        if not isinstance(value, Tensor):
            raise TypeError(f"Failed calling CustomExt with {type(value).__name__} argument (tensors only)")
    raise RuntimeError("simulated device: an ops.Custom call with tensors would launch here")


def _check(value, kind, name):
    ok = {"tensor": isinstance(value, Tensor), "int": type(value) is int, "bool": type(value) is bool,
          "double": type(value) in (int, float), "callable": callable(value)}[kind]
    if not ok:
        raise TypeError(f"{name}: incompatible function arguments ({kind} expected, got {type(value).__name__})")


_MS_DTYPE = {"F32_Default": ms.float32, "F16_Default": ms.float16, "BF16_Default": ms.bfloat16}
# The (data, parameter/statistics) dtype columns of the OpDefs: no launch with another pair.
FORWARD_PAIRS = {(_MS_DTYPE[row[0]], _MS_DTYPE[row[1]]) for row in ascend.GROUP_NORM_SILU_MS.dtype_rows}
GRAD_PAIRS = {(_MS_DTYPE[row[0]], _MS_DTYPE[row[1]]) for row in ascend.GROUP_NORM_GRAD_MS.dtype_rows}


def _check_pair(data, stat, pairs, op):
    if (data, stat) not in pairs:
        raise RuntimeError(f"{op}: no kernel for the dtype pair ({data}, {stat}) (not a column of its OpDef)")


class FakeAscendModule:
    """The functions of group_norm_ascend_pyboost.cc, computed with the float64 reference."""

    def __init__(self):
        self.calls = []
        self.differentiable_backward = None

    def set_differentiable_backward(self, function):
        _check(function, "callable", "function")
        self.differentiable_backward = function

    def group_norm_grad(self, dy, x, mean, rstd, gamma, group, m0, m1, m2):
        for v, k, n in zip((dy, x, mean, rstd, gamma, group, m0, m1, m2), ["tensor"] * 5 + ["int"] + ["bool"] * 3,
                           ("dy", "x", "mean", "rstd", "gamma", "group", "m0", "m1", "m2")):
            _check(v, k, n)
        assert gamma.shape == (x.shape[1],), "the operator takes a real gamma"
        _check_pair(x.dtype, mean.dtype, GRAD_PAIRS, "GroupNormGradMs")
        assert dy.dtype == x.dtype and gamma.dtype == rstd.dtype == mean.dtype, "one dtype per OpDef column"
        self.calls.append(("group_norm_grad", x.dtype, mean.dtype, gamma.dtype, group, (m0, m1, m2)))
        f = lambda t: t.asnumpy().astype(np.float64)  # noqa: E731
        dx, dgamma, dbeta = reference.backward(f(dy), f(x), f(mean), f(rstd), f(gamma), group)
        return (Tensor(dx, x.dtype), Tensor(dgamma, mean.dtype), Tensor(dbeta, mean.dtype))

    def group_norm(self, x, gamma, beta, group, eps):
        for v, k, n in zip((x, gamma, beta, group, eps), ["tensor"] * 3 + ["int", "double"],
                           ("x", "gamma", "beta", "group", "eps")):
            _check(v, k, n)
        _check_pair(x.dtype, gamma.dtype, FORWARD_PAIRS, "GroupNormSiluMs")
        assert beta.dtype == gamma.dtype, "one dtype per OpDef column"
        self.calls.append(("group_norm", x.dtype, gamma.dtype))
        f = lambda t: t.asnumpy().astype(np.float64)  # noqa: E731
        y, mean, rstd = reference.forward(f(x), f(gamma), f(beta), group, eps)
        n = x.shape[0]
        return (Tensor(y, x.dtype), Tensor(mean.reshape(n, group), ms.float32),
                Tensor(rstd.reshape(n, group), ms.float32))

    def group_norm_autograd(self, x, gamma, beta, group, eps, gamma_grad, beta_grad):
        _check(gamma_grad, "bool", "gamma_grad")
        _check(beta_grad, "bool", "beta_grad")
        self.calls.append(("group_norm_autograd", gamma_grad, beta_grad))
        return _FunctionStandIn(self, group, eps, gamma_grad, beta_grad)(x, gamma, beta)


    # ---- the fused GroupNorm + swish (GroupNormSiluMs with SiLU on, GroupNormSiluGradMs)
    def group_norm_silu(self, x, gamma, beta, group, eps, swish_scale):
        for v, k, n in zip((x, gamma, beta, group, eps, swish_scale), ["tensor"] * 3 + ["int", "double", "double"],
                           ("x", "gamma", "beta", "group", "eps", "swish_scale")):
            _check(v, k, n)
        assert gamma.shape == beta.shape == (x.shape[1],), "the operator takes a real gamma and beta"
        _check_pair(x.dtype, gamma.dtype, FORWARD_PAIRS, "GroupNormSiluMs")
        assert beta.dtype == gamma.dtype, "one dtype per OpDef column"
        self.calls.append(("group_norm_silu", x.dtype, gamma.dtype, beta.dtype, group, swish_scale))
        f = lambda t: t.asnumpy().astype(np.float64)  # noqa: E731
        z, mean, rstd = reference.silu_forward(f(x), f(gamma), f(beta), group, eps, swish_scale)
        n = x.shape[0]
        return (Tensor(z, x.dtype), Tensor(mean.reshape(n, group), ms.float32),
                Tensor(rstd.reshape(n, group), ms.float32))

    def group_norm_silu_autograd(self, x, gamma, beta, group, eps, swish_scale, gamma_grad, beta_grad):
        _check(gamma_grad, "bool", "gamma_grad")
        _check(beta_grad, "bool", "beta_grad")
        self.calls.append(("group_norm_silu_autograd", gamma_grad, beta_grad))
        return _SiluFunctionStandIn(self, group, eps, swish_scale, gamma_grad, beta_grad)(x, gamma, beta)

    def group_norm_silu_grad(self, dz, x, mean, rstd, gamma, beta, group, swish_scale, m0, m1, m2):
        for v, k, n in zip((dz, x, mean, rstd, gamma, beta, group, swish_scale, m0, m1, m2),
                           ["tensor"] * 6 + ["int", "double"] + ["bool"] * 3,
                           ("dz", "x", "mean", "rstd", "gamma", "beta", "group", "swish_scale", "m0", "m1", "m2")):
            _check(v, k, n)
        assert gamma.shape == beta.shape == (x.shape[1],), "the operator takes a real gamma and beta"
        _check_pair(x.dtype, mean.dtype, GRAD_PAIRS, "GroupNormSiluGradMs")
        assert dz.dtype == x.dtype and gamma.dtype == beta.dtype == rstd.dtype == mean.dtype, "one dtype per column"
        self.calls.append(("group_norm_silu_grad", x.dtype, mean.dtype, gamma.dtype, group, swish_scale, (m0, m1, m2)))
        f = lambda t: t.asnumpy().astype(np.float64)  # noqa: E731
        dx, dgamma, dbeta = reference.silu_backward(f(dz), f(x), f(mean), f(rstd), f(gamma), f(beta), group,
                                                    swish_scale)
        return (Tensor(dx, x.dtype), Tensor(dgamma, mean.dtype), Tensor(dbeta, mean.dtype))


class _SiluFunctionStandIn(nn.Cell):
    """What GroupNormSiluFunction records: forward group_norm_silu, backward
    group_norm_silu_grad from x, the saved float32 mean/rstd, gamma and beta."""

    def __init__(self, module, group, eps, swish_scale, gamma_grad, beta_grad):
        super().__init__()
        self.module, self.args, self.flags = module, (group, eps, swish_scale), (gamma_grad, beta_grad)

    def construct(self, x, gamma, beta):
        return self.module.group_norm_silu(x, gamma, beta, *self.args)

    def bprop(self, x, gamma, beta, out, dout):
        group, _, swish_scale = self.args
        if recording_gradient():  # differentiated itself: the C++ Backward calls the hook (second_order.h)
            dx, dgamma, dbeta = self.module.differentiable_backward(
                "group_norm_silu", [dout[0], x, out[1], out[2], gamma, beta], (float(group), swish_scale),
                (True,) + self.flags)
        else:
            dx, dgamma, dbeta = self.module.group_norm_silu_grad(dout[0], x, out[1], out[2], gamma, beta, group,
                                                                 swish_scale, True, *self.flags)
        return (dx, dgamma if self.flags[0] else ops.zeros_like(gamma), dbeta if self.flags[1] else ops.zeros_like(beta))


class _FunctionStandIn(nn.Cell):
    """What the C++ Function records: forward group_norm, backward group_norm_grad with the
    saved float32 mean/rstd; no gradient for a ones/zeros stand-in gamma/beta."""

    def __init__(self, module, group, eps, gamma_grad, beta_grad):
        super().__init__()
        self.module, self.group, self.eps, self.flags = module, group, eps, (gamma_grad, beta_grad)

    def construct(self, x, gamma, beta):
        return self.module.group_norm(x, gamma, beta, self.group, self.eps)

    def bprop(self, x, gamma, beta, out, dout):
        if recording_gradient():  # differentiated itself: the C++ Backward calls the hook (second_order.h)
            dx, dgamma, dbeta = self.module.differentiable_backward(
                "group_norm", [dout[0], x, out[1], out[2], gamma], (float(self.group),), (True,) + self.flags)
        else:
            dx, dgamma, dbeta = self.module.group_norm_grad(dout[0], x, out[1], out[2], gamma, self.group, True,
                                                            *self.flags)
        return (dx, dgamma if self.flags[0] else ops.zeros_like(gamma), dbeta if self.flags[1] else ops.zeros_like(beta))


@pytest.fixture
def simulated(tmp_path, monkeypatch):
    """Returns a function installing the simulation; with_forward also installs GroupNormSiluMs,
    with_silu_grad GroupNormSiluGradMs (the fused backward); socs: the SoCs the package lists."""
    def install(with_forward=False, with_silu_grad=False, socs=ascend_fake_cann.BUILT_FOR):
        ops_defs = ascend_fake_cann.op_definitions()
        if not with_forward:
            del ops_defs["forward"]
        if not with_silu_grad:
            del ops_defs["silu_grad"]
        cann_root, vendor = ascend_fake_cann.make(tmp_path / "tree", ops_defs, socs)
        monkeypatch.setenv("ASCEND_OPP_PATH", str(cann_root / "opp"))
        monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", str(vendor))
        monkeypatch.setenv("MS_COMPILER_CACHE_PATH", str(tmp_path / "kernel_meta"))
        monkeypatch.setenv(routing.BACKEND_ENV, "ascend")
        monkeypatch.setattr(custom_ops, "context", _AscendContext(custom_ops.context))
        monkeypatch.setattr(custom_ops, "pyboost_custom_ext", strict_pyboost_custom_ext)
        module = FakeAscendModule()
        builders = []

        class FakeBuilder:
            def __init__(self, name, sources, backend=None, include_paths=None, **kwargs):
                builders.append((name, sources, backend, include_paths))

            def load(self):
                return module

        monkeypatch.setattr(ms.ops, "CustomOpBuilder", FakeBuilder)
        module.builders = builders
        return module

    caches = (routing._forward_op, routing._backward_op, ascend_pyboost.module, ascend_pyboost._installed)
    for cache in caches:
        cache.cache_clear()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield install
    for cache in caches:
        cache.cache_clear()
    ms.set_context(mode=ms.PYNATIVE_MODE)


class WeightedSum(nn.Cell):
    def __init__(self, net, weight):
        super().__init__()
        self.net, self.weight = net, Tensor(weight)

    def construct(self, x):
        return (self.net(x).astype(ms.float32) * self.weight).sum()


def _training_step(dtype, tol):
    rng = np.random.default_rng(0)
    N, C, H, W, G, lr = 2, 6, 3, 4, 3, 0.1
    x = (rng.standard_normal((N, C, H, W)) + 0.5).astype(NP[dtype]).astype(np.float64)
    weight = rng.standard_normal((N, C, H, W)).astype(np.float32)
    net = ms_groupnorm.GroupNorm(G, C, gamma_init=Tensor(rng.standard_normal(C).astype(np.float32) + 1),
                                 beta_init=Tensor(rng.standard_normal(C).astype(np.float32)))
    gamma0, beta0 = net.gamma.asnumpy().astype(np.float64), net.beta.asnumpy().astype(np.float64)
    loss = WeightedSum(net, weight)
    grad_x = ms.grad(loss, grad_position=0)(Tensor(x, dtype))
    nn.TrainOneStepCell(loss, nn.SGD(net.trainable_params(), learning_rate=lr))(Tensor(x, dtype))
    dy = weight.astype(NP[dtype]).astype(np.float64)
    _, mean, rstd = reference.forward(x, gamma0, beta0, G)
    dx, dgamma, dbeta = reference.backward(dy, x, mean, rstd, gamma0, G)
    assert np.abs(grad_x.asnumpy().astype(np.float64) - dx).max() / max(1.0, np.abs(dx).max()) < tol
    np.testing.assert_allclose(net.gamma.asnumpy(), gamma0 - lr * dgamma, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(net.beta.asnumpy(), beta0 - lr * dbeta, rtol=1e-4, atol=1e-4)


def test_pynative_training_step_reaches_the_ascend_module_only(simulated):
    """Without our forward operator: MindSpore's GroupNorm forward, our backward through the
    module; ops.Custom is never called in PyNative (it would get scalars)."""
    module = simulated(with_forward=False)
    _training_step(ms.float32, 1e-5)
    (name, sources, backend, include_paths), = module.builders
    assert backend == "Ascend" and sources == [str(ascend_pyboost.SOURCE)]
    assert any(p.endswith("op_api/include") for p in include_paths)
    grads = [c for c in module.calls if c[0] == "group_norm_grad"]
    assert grads and all(c[4] == 3 and c[5] == (True, True, True) for c in grads)


def test_pynative_step_with_our_forward_uses_float32_statistics(simulated):
    """With GroupNormSiluMs installed, a float16 layer's step runs our forward (C++ Function
    API) and hands float32 mean/rstd to the backward: the (fp16, fp32) kernel pair."""
    module = simulated(with_forward=True)
    _training_step(ms.float16, 3e-3)
    names = {c[0] for c in module.calls}
    assert {"group_norm_autograd", "group_norm", "group_norm_grad"} <= names
    grads = [c for c in module.calls if c[0] == "group_norm_grad"]
    assert all(c[1] == ms.float16 and c[2] == ms.float32 and c[3] == ms.float32 for c in grads)


def test_functional_backward_with_mask_and_no_gamma(simulated):
    module = simulated()
    rng = np.random.default_rng(1)
    N, C, HxW, G = 2, 4, 5, 2
    x = rng.standard_normal((N, C, HxW)).astype(np.float32)
    dy = rng.standard_normal((N, C, HxW)).astype(np.float32)
    _, mean, rstd = reference.forward(x, None, None, G)
    mean, rstd = mean.reshape(N, G).astype(np.float32), rstd.reshape(N, G).astype(np.float32)
    dx, dgamma, dbeta = ms_groupnorm.group_norm_backward(Tensor(dy), Tensor(x), Tensor(mean), Tensor(rstd), None,
                                                         N, C, HxW, G, (True, False, True))
    want = reference.backward(dy, x, mean, rstd, None, G)
    assert dgamma is None
    assert_close(dx, want[0], ms.float32, "dx")
    assert_close(dbeta, want[2], ms.float32, "dbeta")
    assert module.calls[-1][5] == (True, False, True)


def test_old_route_ops_custom_with_scalars_is_what_the_device_refuses(simulated):
    """The stand-in enforces MindSpore's rule: ops.Custom in PyNative on Ascend with the
    scalar arguments GRAPH_MODE uses raises (what every backward call did before)."""
    simulated()
    op = ascend.backward_custom()
    assert op.is_ascend_c and hasattr(op, "custom_pyboost")
    t = Tensor(np.ones((2, 4, 3), np.float32))
    s = Tensor(np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match="Failed calling CustomExt"):
        op(t, s, s, t, Tensor(np.ones(4, np.float32)), 2, True, True, True)


def test_missing_operator_or_cann_is_a_clear_error(simulated, monkeypatch):
    simulated()
    monkeypatch.delenv("ASCEND_CUSTOM_OPP_PATH")
    with pytest.raises(RuntimeError, match="GroupNormGradMs is not installed.*build.sh"):
        ascend_pyboost.module()
    monkeypatch.delenv("ASCEND_OPP_PATH")
    with pytest.raises(RuntimeError, match="set_env.sh"):
        ascend_pyboost.module()


INFER_DRIVER = r"""
#include <dlfcn.h>
#include <cstdio>
#include <vector>
#include <cstdint>
using Shape = std::vector<std::vector<int64_t>> (*)(int *, int64_t **, void *);
int main(int, char **argv) {
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { std::printf("dlopen failed\n"); return 1; }
  auto f = reinterpret_cast<Shape>(dlsym(lib, "aclnnGroupNormGradMsInferShape"));
  if (!f) { std::printf("no hook\n"); return 1; }
  // dy, mean, rstd, x, gamma (+ a scalar): static, dynamic dims, dynamic rank
  int64_t x1[] = {2, 6, 4, 5}, x2[] = {-1, 6, -1, -1}, x3[] = {-2}, st[] = {2, 3}, g[] = {6}, none[] = {0};
  int64_t *cases[3] = {x1, x2, x3};
  int ranks[3] = {4, 4, 1};
  for (int c = 0; c < 3; ++c) {
    int nd[] = {ranks[c], 2, 2, ranks[c], 1, 0};
    int64_t *sh[] = {cases[c], st, st, cases[c], g, none};
    for (const auto &out : f(nd, sh, nullptr)) {
      for (auto d : out) std::printf("%lld ", static_cast<long long>(d));
      std::printf("|");
    }
    std::printf("\n");
  }
  return 0;
}
"""


def test_graph_op_under_the_simulated_device(simulated, tmp_path):
    """ops.Custom built by MindSpore's own Ascend branch: the C++ infer compiled from our
    .cc (func "<so>:aclnnGroupNormGradMs", cpp infer on), the callback compiled from the
    installed header into an absolute cache path, the header's parameter types recorded;
    the infer hook passes unknown dims and an unknown rank through."""
    simulated()
    op = ascend.backward_custom()
    so_path, func_name = op.func.rsplit(":", 1)
    assert func_name == ascend.GROUP_NORM_GRAD_MS.aclnn_func and so_path.endswith("group_norm_ascend_infer.cc.so")
    attrs = op.attrs
    assert attrs["cpp_infer_shape"] and attrs["cpp_infer_type"]
    callback = attrs["custom_callback_func"].rsplit(":", 1)[0]
    assert callback.startswith(str(tmp_path)) and subprocess.run(["test", "-f", callback]).returncode == 0
    assert list(attrs["custom_inputs_type"]) == ["aclTensor*"] * 5 + ["int64_t", "bool", "bool", "bool"] + \
        ["aclTensor*"] * 3
    driver = tmp_path / "driver.cc"
    driver.write_text(INFER_DRIVER)
    subprocess.run(["g++", "-std=c++17", "-o", str(tmp_path / "driver"), str(driver), "-ldl"], check=True)
    out = subprocess.run([str(tmp_path / "driver"), so_path], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["2 6 4 5 |6 |6 |", "-1 6 -1 -1 |6 |6 |", "-2 |6 |6 |"]


FORWARD_INFER_DRIVER = r"""
#include <dlfcn.h>
#include <cstdio>
#include <vector>
#include <cstdint>
using Shape = std::vector<std::vector<int64_t>> (*)(int *, int64_t **, void *);
using Type = std::vector<int> (*)(std::vector<int>, void *);
int main(int, char **argv) {
  void *lib = dlopen(argv[1], RTLD_NOW);
  auto shape = lib ? reinterpret_cast<Shape>(dlsym(lib, "aclnnGroupNormSiluMsInferShape")) : nullptr;
  auto type = lib ? reinterpret_cast<Type>(dlsym(lib, "aclnnGroupNormSiluMsInferType")) : nullptr;
  if (!shape || !type) { std::printf("no hooks\n"); return 1; }
  // x, gamma, beta (+ 4 scalars): static, dynamic dims, dynamic rank
  int64_t x1[] = {2, 6, 4, 5}, x2[] = {-1, 6, -1}, x3[] = {-2}, g[] = {6}, none[] = {0};
  int64_t *cases[3] = {x1, x2, x3};
  int ranks[3] = {4, 3, 1};
  for (int c = 0; c < 3; ++c) {
    int nd[] = {ranks[c], 1, 1, 0, 0, 0, 0};
    int64_t *sh[] = {cases[c], g, g, none, none, none, none};
    for (const auto &out : shape(nd, sh, nullptr)) {
      for (auto d : out) std::printf("%lld ", static_cast<long long>(d));
      std::printf("|");
    }
    std::printf("\n");
  }
  for (int t : type({42, 43, 43, 35, 43, 30, 43}, nullptr)) std::printf("%d ", t);
  std::printf("\n");
  return 0;
}
"""


def test_graph_forward_op_under_the_simulated_device(simulated, tmp_path):
    """Our GroupNormSiluMs in GRAPH_MODE: MindSpore's Ascend branch builds it (callback from
    the installed header, infer compiled for num_groups=3); mean/rstd are (N, 3) float32
    (43) whatever x's dtype (float16 = 42), with unknown N and unknown rank too."""
    simulated(with_forward=True)
    op = ascend.ascend_forward_custom(3)
    so_path, func_name = op.func.rsplit(":", 1)
    assert func_name == "aclnnGroupNormSiluMs" and so_path.endswith("group_norm_silu_infer_g3.cc.so")
    assert list(op.attrs["custom_inputs_type"]) == ["aclTensor*"] * 3 + ["int64_t", "double", "bool", "double"] + \
        ["aclTensor*"] * 3
    driver = tmp_path / "driver.cc"
    driver.write_text(FORWARD_INFER_DRIVER)
    subprocess.run(["g++", "-std=c++17", "-o", str(tmp_path / "driver"), str(driver), "-ldl"], check=True)
    out = subprocess.run([str(tmp_path / "driver"), so_path], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["2 6 4 5 |2 3 |2 3 |", "-1 6 -1 |-1 3 |-1 3 |", "-2 |-1 3 |-1 3 |", "42 43 43 "]


def test_graph_picks_our_forward_when_installed(simulated):
    simulated(with_forward=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        assert type(routing.forward_op(3, 1e-5)).__name__ == "AscendOwnForward"
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_the_stand_in_module_refuses_what_pybind11_refuses():
    """The stand-in's argument rules (never more lenient than pybind11's casters: a float is
    no int64_t, a non-tensor no ms::Tensor; it is stricter on bool/int, which is safe)."""
    module = FakeAscendModule()
    t = Tensor(np.ones((2, 4, 3), np.float32))
    s = Tensor(np.ones((2, 2), np.float32))
    g = Tensor(np.ones(4, np.float32))
    with pytest.raises(TypeError, match="group"):
        module.group_norm_grad(t, t, s, s, g, 2.0, True, True, True)
    with pytest.raises(TypeError, match="gamma"):
        module.group_norm_grad(t, t, s, s, np.ones(4, np.float32), 2, True, True, True)
    with pytest.raises(TypeError, match="eps"):
        module.group_norm(t, g, g, 2, "1e-5")
    with pytest.raises(TypeError, match="gamma_grad"):
        module.group_norm_autograd(t, g, g, 2, 1e-5, None, True)
    with pytest.raises(TypeError, match="swish_scale"):
        module.group_norm_silu_grad(t, t, s, s, g, g, 2, "1.0", True, True, True)
    with pytest.raises(TypeError, match="beta"):
        module.group_norm_silu(t, g, None, 2, 1e-5, 1.0)
    # a dtype pair no OpDef column has: bf16 data with float16 statistics
    b = Tensor(np.ones((2, 4, 3), np.float32)).astype(ms.bfloat16)
    h = Tensor(np.ones((2, 2), np.float16))
    with pytest.raises(RuntimeError, match="GroupNormSiluGradMs: no kernel for the dtype pair"):
        module.group_norm_silu_grad(b, b, h, h, g.astype(ms.float16), g.astype(ms.float16), 2, 1.0, True, True, True)
    with pytest.raises(RuntimeError, match="GroupNormSiluMs: no kernel for the dtype pair"):
        module.group_norm_silu(Tensor(np.ones((2, 4, 3), np.float32)), g.astype(ms.float16), g.astype(ms.float16),
                               2, 1e-5, 1.0)

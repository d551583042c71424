"""Second-order gradients (``ms.grad(ms.grad(f))``) through every GroupNorm form, in both
modes and on every CPU route (the PyNative fast path, the aot ops with
$MS_GROUPNORM_PYBOOST=0 in a subprocess), against torch's float64 double backward.

Before the backward ops had a bprop, PyNative's fast path returned zeros here (its autograd
node's Backward recorded nothing) and the aot ops raised "bprop not defined"."""
import os
import subprocess
import sys

import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import Tensor

import ms_groupnorm as mg
from cases import env_importing_this_package

torch_f = torch.nn.functional
EPS = 1e-5

# (form, x shape, groups, x dtype, parameter dtype, with gamma/beta)
CASES = [
    ("group_norm", (2, 4, 3), 2, "float32", "float32", True),
    ("GroupNorm", (2, 6, 2, 3), 3, "float32", "float32", True),
    ("GroupNormSiLU", (2, 4, 5), 2, "float32", "float32", True),
    ("group_norm_silu", (3, 4, 2, 2), 4, "float32", "float32", False),
    ("group_norm", (2, 4, 3), 1, "float16", "float32", True),      # mixed: 16-bit data, float32 statistics
    ("GroupNormSiLU", (2, 4, 3), 2, "bfloat16", "float32", True),
    ("group_norm", (2, 4, 3, 1, 2), 2, "float64", "float64", True),  # float64 (CPU kernels), rank 5
    ("mint.GroupNormSiLU", (1, 8, 4), 4, "float16", "float16", True),
]
MS_DTYPES = {"float32": ms.float32, "float16": ms.float16, "bfloat16": ms.bfloat16, "float64": ms.float64}
TOLERANCE = {"float32": 2e-3, "float64": 1e-9, "float16": 3e-2, "bfloat16": 1.5e-1}


def _to_ms(array, dtype):
    return Tensor(array.astype(np.float32), MS_DTYPES[dtype]) if dtype == "bfloat16" else \
        Tensor(array.astype(dtype), MS_DTYPES[dtype])


def _rounded(array, dtype):
    """array as the ms tensor of ``dtype`` holds it, in float64 (the reference sees the same inputs)."""
    return _to_ms(array, dtype).astype(ms.float32).asnumpy().astype(np.float64) if dtype != "float64" else array


def _forward_ms(form, groups, channels, gamma, beta):
    """x -> the form's output, with parameters gamma/beta (ms tensors or None)."""
    if form in ("GroupNorm", "GroupNormSiLU", "mint.GroupNormSiLU"):
        cls = {"GroupNorm": mg.GroupNorm, "GroupNormSiLU": mg.GroupNormSiLU,
               "mint.GroupNormSiLU": mg.mint.GroupNormSiLU}[form]
        layer = cls(groups, channels, eps=EPS)
        first, second = ("weight", "bias") if form.startswith("mint") else ("gamma", "beta")
        getattr(layer, first).set_data(gamma)
        getattr(layer, second).set_data(beta)
        return layer
    fn = mg.group_norm if form == "group_norm" else mg.group_norm_silu
    return lambda x: fn(x, groups, gamma, beta, EPS)


def _torch_forward(form, x, groups, gamma, beta):
    y = torch_f.group_norm(x, groups, gamma, beta, EPS)
    return torch_f.silu(y) if "SiLU" in form or "silu" in form else y


def _expected(form, x, groups, gamma, beta, c):
    """d/dx of sum(c * dx(x)**2), dx = d/dx sum(f(x)**3), in float64 (and d/dgamma where given)."""
    tx = torch.tensor(x, requires_grad=True)
    tg = None if gamma is None else torch.tensor(gamma, requires_grad=True)
    tb = None if beta is None else torch.tensor(beta)
    y = _torch_forward(form, tx, groups, tg, tb)
    (dx,) = torch.autograd.grad((y ** 3).sum(), tx, create_graph=True)
    wrt = (tx,) if tg is None else (tx, tg)
    return [g.detach().numpy() for g in torch.autograd.grad((torch.tensor(c) * dx ** 2).sum(), wrt)]


def run_case(form, shape, groups, dtype, param_dtype, affine, seed=0):
    """(ours, expected, tolerance scale) of the second-order gradient w.r.t. x (and gamma)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    c = rng.standard_normal(shape).astype(np.float32).astype(np.float64)
    channels = shape[1]
    gamma = 1 + 0.3 * rng.standard_normal(channels) if affine else None
    beta = 0.2 * rng.standard_normal(channels) if affine else None
    x = _rounded(x, dtype)
    if affine:
        gamma, beta = _rounded(gamma, param_dtype), _rounded(beta, param_dtype)
    gamma_ms = _to_ms(gamma, param_dtype) if affine else None
    beta_ms = _to_ms(beta, param_dtype) if affine else None
    c_ms = Tensor(c.astype(np.float32)).astype(MS_DTYPES[dtype])
    layer_form = form[0].isupper() or form.startswith("mint")
    forward = _forward_ms(form, groups, channels,
                          gamma_ms if affine else Tensor(np.ones(channels), MS_DTYPES[param_dtype]),
                          beta_ms if affine else Tensor(np.zeros(channels), MS_DTYPES[param_dtype]))
    if layer_form and not affine:
        gamma, beta = np.ones(channels), np.zeros(channels)

    wide = ms.float64 if dtype == "float64" else ms.float32  # MindSpore's CPU Pow/Mul bprops lack bfloat16

    def loss(x):
        return (forward(x).astype(wide) ** 3).sum()

    def outer(x):
        dx = ms.grad(loss)(x).astype(wide)
        return (c_ms.astype(wide) * dx * dx).sum()

    ours = ms.grad(outer)(_to_ms(x, dtype)).astype(wide).asnumpy().astype(np.float64)
    expected = _expected(form, x, groups, gamma, beta, _rounded(c, dtype))[0]
    return ours, expected


def check(form, shape, groups, dtype, param_dtype, affine):
    ours, expected = run_case(form, shape, groups, dtype, param_dtype, affine)
    scale = np.abs(expected).max()
    assert scale > 1e-3, "a reference this small cannot tell zeros from the answer"
    tol = TOLERANCE[dtype] if dtype != "float16" or param_dtype != "float16" else 5e-2
    err = np.abs(ours - expected).max() / scale
    assert err <= tol, (f"{form} {shape} {dtype}: max error {err:.3g} of the largest {scale:.3g} "
                        f"(ours {ours.ravel()[:4]}, float64 {expected.ravel()[:4]})")


@pytest.mark.default_sample(case=[0, 2, 4, 5])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_second_order_matches_torch_float64(mode, case):
    if mode == "graph" and CASES[case][3] == "bfloat16":
        # MindSpore's CPU backend lacks bfloat16 kernels that a graph's second-order gradient
        # uses (AddN in 2.10, which adds x's gradients; Mul too in 2.8): MindSpore's own ops
        # fail the same way (checked here, so that the day it works this case is run instead).
        unsupported = r"Select CPU operator\[\w+\] fail"
        with pytest.raises(TypeError, match=unsupported):
            check(*CASES[case])
        with pytest.raises(TypeError, match=unsupported):
            _pure_mindspore_second_order_bfloat16()
        return
    check(*CASES[case])


def _pure_mindspore_second_order_bfloat16():
    def loss(x):
        return ((x * x * x).astype(ms.float32) ** 3).sum()

    def outer(x):
        dx = ms.grad(loss)(x).astype(ms.float32)
        return (dx * dx).sum()

    return ms.grad(outer)(Tensor(np.ones((2, 4, 3), np.float32)).astype(ms.bfloat16))


def test_second_order_on_the_aot_ops_without_the_fast_path():
    """$MS_GROUPNORM_PYBOOST=0 in PyNative: the aot ops' bprops (they raised before)."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import mindspore as ms; ms.set_context(mode=ms.PYNATIVE_MODE)\n"
            "from test_second_order import CASES, check\n"
            "for i in (0, 3): check(*CASES[i])\n"
            "print('ok')\n") % os.path.dirname(os.path.abspath(__file__))
    env = env_importing_this_package()
    env["MS_GROUPNORM_PYBOOST"] = "0"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


# ---- the backward functions themselves, differentiated: mean and rstd are inputs there ----
def _torch_backward_formula(dy, x, mean, rstd, gamma, groups, silu_beta=None, k=1.0):
    """The backward kernels' formula in torch (float64): (dx, dgamma, dbeta) as functions of
    every input, mean and rstd included (ops.double_backward's docstring)."""
    N, C = x.shape[:2]
    xg = x.reshape(N, groups, C // groups, -1)
    dyg = dy.reshape(xg.shape)
    m = mean.reshape(N, groups, 1, 1)
    r = rstd.reshape(N, groups, 1, 1)
    w = gamma.reshape(1, groups, -1, 1)
    xc = xg - m
    if silu_beta is not None:
        y = w * xc * r + silu_beta.reshape(1, groups, -1, 1)
        sig = torch.sigmoid(k * y)
        dyg = dyg * (sig + k * y * sig * (1 - sig))
    M = xg.shape[2] * xg.shape[3]
    a = w * dyg
    dx = r * a - r / M * a.sum((2, 3), keepdim=True) - r ** 3 / M * xc * (a * xc).sum((2, 3), keepdim=True)
    dgamma = (dyg * xc * r).sum((0, 3)).reshape(-1)
    dbeta = dyg.sum((0, 3)).reshape(-1)
    return dx.reshape(x.shape), dgamma, dbeta


@pytest.mark.parametrize("fused", [False, True], ids=["group_norm_backward", "group_norm_silu_backward"])
def test_differentiating_the_backward_function(mode, fused):
    rng = np.random.default_rng(3)
    N, C, HxW, G = 2, 4, 3, 2
    arrays = [rng.standard_normal((N, C, HxW)), rng.standard_normal((N, C, HxW)), rng.standard_normal((N, G)),
              0.5 + rng.random((N, G)), 1 + 0.3 * rng.standard_normal(C), 0.3 * rng.standard_normal(C)]
    arrays = [a.astype(np.float32).astype(np.float64) for a in arrays]
    cot = [rng.standard_normal((N, C, HxW)), rng.standard_normal(C), rng.standard_normal(C)]

    def ours(dy, x, mean, rstd, gamma, beta):
        if fused:
            outs = mg.group_norm_silu_backward(dy, x, mean, rstd, gamma, beta, N, C, HxW, G)
        else:
            outs = mg.group_norm_backward(dy, x, mean, rstd, gamma, N, C, HxW, G)
        return sum((Tensor(w.astype(np.float32)) * o).sum() for w, o in zip(cot, outs))

    grads = ms.grad(ours, grad_position=(0, 1, 2, 3, 4, 5))(*[Tensor(a.astype(np.float32)) for a in arrays])
    t = [torch.tensor(a, requires_grad=True) for a in arrays]
    outs = _torch_backward_formula(*t[:5], G, t[5] if fused else None)
    loss = sum((torch.tensor(w) * o).sum() for w, o in zip(cot, outs))
    expected = torch.autograd.grad(loss, t, allow_unused=True)
    for name, g, e in zip(("dy", "x", "mean", "rstd", "gamma", "beta"), grads, expected):
        e = np.zeros(g.shape) if e is None else e.numpy()
        np.testing.assert_allclose(g.asnumpy(), e, rtol=2e-4, atol=2e-4 * max(1, np.abs(e).max()), err_msg=name)

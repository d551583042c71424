"""The float64 oracle of the fused GroupNorm + swish (ms_groupnorm/reference.py),
checked against central finite differences of its own forward (statistics recomputed, so
the backward's use of saved mean/rstd is checked too), swish_scale 1 and not 1."""
import numpy as np
import pytest

from ms_groupnorm import reference


def _numeric_grad(f, a, h=1e-6):
    grad = np.zeros_like(a)
    flat, gflat = a.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + h
        up = f()
        flat[i] = keep - h
        down = f()
        flat[i] = keep
        gflat[i] = (up - down) / (2 * h)
    return grad


@pytest.mark.parametrize("swish_scale", [1.0, 1.7, -0.6])
@pytest.mark.parametrize("shape,G", [((2, 6, 3, 2), 3), ((3, 4), 2), ((1, 2, 5), 1)])
def test_backward_matches_finite_differences(shape, G, swish_scale):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape) * 2 + 0.3
    gamma, beta = rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    w = rng.standard_normal(shape)

    def loss():
        return float((reference.silu_forward(x, gamma, beta, G, 1e-5, swish_scale)[0] * w).sum())

    _, mean, rstd = reference.silu_forward(x, gamma, beta, G, 1e-5, swish_scale)
    dx, dgamma, dbeta = reference.silu_backward(w, x, mean, rstd, gamma, beta, G, swish_scale)
    for got, wrt, name in ((dx, x, "dx"), (dgamma, gamma, "dgamma"), (dbeta, beta, "dbeta")):
        np.testing.assert_allclose(got, _numeric_grad(loss, wrt), rtol=1e-6, atol=1e-7, err_msg=name)


def test_swish_and_its_derivative():
    t = np.linspace(-60, 60, 2001)
    for k in (1.0, 2.5):
        np.testing.assert_allclose(reference.swish(t, k), t / (1 + np.exp(-k * t)), rtol=1e-14, atol=1e-300)
        h = 1e-6
        numeric = (reference.swish(t + h, k) - reference.swish(t - h, k)) / (2 * h)
        np.testing.assert_allclose(reference.swish_grad(t, k), numeric, rtol=1e-6, atol=1e-8)
    assert reference.swish(np.array([-800.0]))[0] == 0.0  # no overflow warning, right limit


def test_empty_input():
    x = np.zeros((0, 4, 3))
    dx, dgamma, dbeta = reference.silu_backward(x, x, np.zeros((0, 2)), np.zeros((0, 2)), None, None, 2)
    assert dx.shape == x.shape and not dgamma.any() and not dbeta.any()

"""The float64 numpy reference is itself checked: its backward against central finite
differences of its forward, its forward against the definition, and the known-answer
case of CANN's aclnnGroupNormBackward example."""
import numpy as np
import pytest

from ms_groupnorm import reference


def _loss_and_grads(x, gamma, beta, w, G, eps):
    """loss = sum(y * w); analytic grads from reference.backward with dy = w."""
    y, mean, rstd = reference.forward(x, gamma, beta, G, eps)
    dx, dgamma, dbeta = reference.backward(w, x, mean, rstd, gamma, G)
    return float((y * w).sum()), dx, dgamma, dbeta


def _numeric_grad(f, a, h=1e-6):
    grad = np.zeros_like(a)
    for index in np.ndindex(a.shape):
        saved = a[index]
        a[index] = saved + h
        plus = f()
        a[index] = saved - h
        minus = f()
        a[index] = saved
        grad[index] = (plus - minus) / (2 * h)
    return grad


@pytest.mark.parametrize("shape,G", [((2, 6, 3), 3), ((3, 4, 2, 2), 1), ((2, 4), 4), ((1, 6, 5), 2)])
def test_backward_matches_finite_differences(shape, G):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape) * 2 + 0.3
    w = rng.standard_normal(shape)
    gamma = rng.standard_normal(shape[1])
    beta = rng.standard_normal(shape[1])
    eps = 1e-3  # large enough that rstd has a visible derivative

    def loss():
        return float((reference.forward(x, gamma, beta, G, eps)[0] * w).sum())

    _, dx, dgamma, dbeta = _loss_and_grads(x, gamma, beta, w, G, eps)
    np.testing.assert_allclose(dx, _numeric_grad(loss, x), rtol=1e-6, atol=1e-7, err_msg="dx")
    np.testing.assert_allclose(dgamma, _numeric_grad(loss, gamma), rtol=1e-6, atol=1e-7, err_msg="dgamma")
    np.testing.assert_allclose(dbeta, _numeric_grad(loss, beta), rtol=1e-6, atol=1e-7, err_msg="dbeta")


def test_forward_definition():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 7))
    y, mean, rstd = reference.forward(x, None, None, 2, eps=1e-5)
    for n in range(2):
        for g in range(2):
            block = x[n, 3 * g:3 * g + 3]
            assert mean[n, g] == pytest.approx(block.mean(), rel=1e-12)
            assert rstd[n, g] == pytest.approx(1 / np.sqrt(block.var() + 1e-5), rel=1e-12)  # biased variance
            np.testing.assert_allclose(y[n, 3 * g:3 * g + 3], (block - block.mean()) * rstd[n, g], rtol=1e-12)


def test_known_answer_from_aclnn_example():
    x = np.arange(1, 25, dtype=np.float64).reshape(2, 3, 4)
    mean = np.array([[6.5], [18.5]])
    rstd = np.full((2, 1), 0.2896827)
    dx, dgamma, dbeta = reference.backward(x, x, mean, rstd, np.ones(3), 1)
    np.testing.assert_allclose(dgamma, [-75.8969, 2.8968, 155.8493], atol=1e-4)
    np.testing.assert_allclose(dbeta, [68, 100, 132], atol=1e-12)
    assert np.abs(dx).max() < 4e-7

"""Float64 numpy reference of the fused GroupNorm + swish (SiLU for swish_scale = 1): the
oracle of the fused kernels' tests and benchmarks. Arrays are (N, C, *); mean and rstd (N, G).

    y = gamma * xhat + beta,  z = y * sigmoid(k * y)              (k = swish_scale)
    dz/dy = s + k*y * s * (1 - s),  s = sigmoid(k * y)
Backward: the GroupNorm backward of ``reference`` applied to dy = dz * dz/dy, with y
recomputed from x, mean, rstd, gamma, beta (what the kernels do too).
"""
import numpy as np

from . import reference


def sigmoid(t):
    """1 / (1 + exp(-t)) in float64 without overflow warnings."""
    t = np.asarray(t, np.float64)
    e = np.exp(-np.abs(t))
    return np.where(t >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def swish(y, swish_scale=1.0):
    return y * sigmoid(swish_scale * np.asarray(y, np.float64))


def swish_grad(y, swish_scale=1.0):
    """d(y * sigmoid(k y)) / dy."""
    y = np.asarray(y, np.float64)
    s = sigmoid(swish_scale * y)
    return s + swish_scale * y * s * (1.0 - s)


def _recompute_y(x, mean, rstd, gamma, beta, num_groups):
    x = np.asarray(x, np.float64)
    N, C = x.shape[:2]
    G = num_groups
    bshape = (1, C) + (1,) * (x.ndim - 2)
    per_channel = (N, C) + (1,) * (x.ndim - 2)
    mean_c = np.repeat(np.asarray(mean, np.float64).reshape(N, G), C // G, axis=1).reshape(per_channel)
    rstd_c = np.repeat(np.asarray(rstd, np.float64).reshape(N, G), C // G, axis=1).reshape(per_channel)
    gamma = np.ones(C) if gamma is None else np.asarray(gamma, np.float64).reshape(C)
    beta = np.zeros(C) if beta is None else np.asarray(beta, np.float64).reshape(C)
    return (x - mean_c) * rstd_c * gamma.reshape(bshape) + beta.reshape(bshape)


def forward(x, gamma, beta, num_groups, eps=1e-5, swish_scale=1.0):
    """(z, mean, rstd) in float64; gamma/beta None mean ones/zeros."""
    y, mean, rstd = reference.forward(x, gamma, beta, num_groups, eps)
    return swish(y, swish_scale), mean, rstd


def backward(dz, x, mean, rstd, gamma, beta, num_groups, swish_scale=1.0):
    """(dx, dgamma, dbeta) in float64 from the saved mean/rstd."""
    x = np.asarray(x, np.float64)
    if x.size == 0:
        C = x.shape[1]
        return np.zeros(x.shape), np.zeros(C), np.zeros(C)
    y = _recompute_y(x, mean, rstd, gamma, beta, num_groups)
    dy = np.asarray(dz, np.float64).reshape(x.shape) * swish_grad(y, swish_scale)
    return reference.backward(dy, x, mean, rstd, gamma, num_groups)

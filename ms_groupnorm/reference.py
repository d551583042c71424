"""Float64 numpy references of the operators: GroupNorm forward and backward, and the fused
GroupNorm + swish (SiLU for swish_scale = 1). The oracle of tests, benchmarks and the demo.
Arrays are (N, C, *); mean and rstd are (N, G).

Backward (the formula CANN's kernels and PyTorch's native_group_norm_backward compute,
not the one in the public aclnn document), per group of M = (C/G)*HxW elements:
    xhat   = (x - mean) * rstd
    dbeta  = sum over N, HxW of dy
    dgamma = sum over N, HxW of dy * xhat
    dx     = rstd * (gamma*dy - mean_g(gamma*dy) - xhat * mean_g(gamma*dy*xhat))
where mean_g averages over the group.

Fused GroupNorm + swish:
    y = gamma * xhat + beta,  z = y * sigmoid(k * y)              (k = swish_scale)
    dz/dy = s + k*y * s * (1 - s),  s = sigmoid(k * y)
Backward: the GroupNorm backward applied to dy = dz * dz/dy, with y recomputed from x,
mean, rstd, gamma, beta (what the kernels do too).
"""
import numpy as np


def _grouped(a, N, G):
    """(N, C, *) -> (N, G, D*HxW); explicit sizes so that empty arrays reshape too."""
    return a.reshape(N, G, a.size // max(N * G, 1))


def forward(x, gamma, beta, num_groups, eps=1e-5):
    """(y, mean, rstd) in float64; gamma/beta None mean ones/zeros. Biased variance."""
    x = np.asarray(x, np.float64)
    N, C = x.shape[:2]
    grouped = _grouped(x, N, num_groups)
    mean = grouped.mean(axis=2)
    var = ((grouped - mean[..., None]) ** 2).mean(axis=2)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = ((grouped - mean[..., None]) * rstd[..., None]).reshape(x.shape)
    bshape = (1, C) + (1,) * (x.ndim - 2)
    gamma = np.ones(C) if gamma is None else np.asarray(gamma, np.float64)
    beta = np.zeros(C) if beta is None else np.asarray(beta, np.float64)
    y = xhat * gamma.reshape(bshape) + beta.reshape(bshape)
    return y, mean, rstd


def backward(dy, x, mean, rstd, gamma, num_groups):
    """(dx, dgamma, dbeta) in float64 from the saved mean/rstd; gamma None means ones."""
    x = np.asarray(x, np.float64)
    dy = np.asarray(dy, np.float64).reshape(x.shape)
    N, C = x.shape[:2]
    G = num_groups
    mean = np.asarray(mean, np.float64).reshape(N, G)
    rstd = np.asarray(rstd, np.float64).reshape(N, G)
    gamma = np.ones(C) if gamma is None else np.asarray(gamma, np.float64).reshape(C)
    hxw = int(np.prod(x.shape[2:], dtype=np.int64))
    x3 = x.reshape(N, C, hxw)
    dy3 = dy.reshape(N, C, hxw)
    per_channel_mean = np.repeat(mean, C // G, axis=1)[..., None]
    per_channel_rstd = np.repeat(rstd, C // G, axis=1)[..., None]
    xhat = (x3 - per_channel_mean) * per_channel_rstd
    dbeta = dy3.sum(axis=(0, 2))
    dgamma = (dy3 * xhat).sum(axis=(0, 2))
    gdy = _grouped(dy3 * gamma[None, :, None], N, G)
    gxhat = _grouped(xhat, N, G)
    group_size = max(gdy.shape[2], 1)  # an empty group has no terms (and no dx)
    term1 = gdy.sum(axis=2, keepdims=True) / group_size
    term2 = (gdy * gxhat).sum(axis=2, keepdims=True) / group_size
    dx = rstd[..., None] * (gdy - term1 - gxhat * term2)
    return dx.reshape(x.shape), dgamma, dbeta


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


def recompute_y(x, mean, rstd, gamma, beta, num_groups):
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


def silu_forward(x, gamma, beta, num_groups, eps=1e-5, swish_scale=1.0):
    """(z, mean, rstd) in float64; gamma/beta None mean ones/zeros."""
    y, mean, rstd = forward(x, gamma, beta, num_groups, eps)
    return swish(y, swish_scale), mean, rstd


def silu_backward(dz, x, mean, rstd, gamma, beta, num_groups, swish_scale=1.0):
    """(dx, dgamma, dbeta) in float64 from the saved mean/rstd."""
    x = np.asarray(x, np.float64)
    if x.size == 0:
        C = x.shape[1]
        return np.zeros(x.shape), np.zeros(C), np.zeros(C)
    y = recompute_y(x, mean, rstd, gamma, beta, num_groups)
    dy = np.asarray(dz, np.float64).reshape(x.shape) * swish_grad(y, swish_scale)
    return backward(dy, x, mean, rstd, gamma, num_groups)

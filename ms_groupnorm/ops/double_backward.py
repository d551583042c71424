"""The backward operators' own bprops: second- (and higher-) order gradients.

``ms.grad(ms.grad(f))`` through GroupNorm differentiates the first-order backward, i.e. the
backward kernel ``(dy, x, mean, rstd, gamma[, beta]) -> (dx, dgamma, dbeta)``. No kernel
does that; it is rare, so it is composed here from MindSpore ops, whose own autodiff then
serves any higher order. Everything runs in the statistics dtype (float32 for 16-bit data).

The backward kernel computes, per sample n and group g (M elements, s = 1/M, w = gamma or
ones, xc = x - mean, r = rstd, a = w * dy, sums over the group's elements)::

    dx     = r * a - r * s * sum(a) - r**3 * s * xc * sum(a * xc)
    dgamma = sum over n and the channel's elements of dy * xc * r
    dbeta  = sum over n and the channel's elements of dy

and the fused operator first turns dz into dy = dz * h(y), y = w * xc * r + beta,
h(y) = sig + k * y * sig * (1 - sig), sig = sigmoid(k * y) (k = swish_scale).

Two flavours of bprop (``statistics``):

* "partial": mean and rstd are independent inputs and get their own gradient (the public
  ``group_norm_backward`` / ``group_norm_silu_backward``, where the caller passes them);
* "of_x": mean and rstd are the statistics of x, as they are where a forward's bprop feeds
  its saved outputs to the backward (the forward's bprop sends no gradient to them: they
  are saved statistics). Their dependence on x is then part of x's gradient, and mean/rstd
  get none. mean and rstd are recomputed from x with MindSpore ops (rstd through
  ``(var(x) + eps')**-0.5``, eps' = 1/rstd**2 - var(x) held constant: the saved value and
  the derivative of the real one), so that every higher order sees them as functions of x.
"""
from mindspore import ops
from mindspore import dtype as mstype

PARTIAL = "partial"
OF_X = "of_x"
STATISTICS = (PARTIAL, OF_X)
_GROUP_AXES = (2, 3)
_CHANNEL_AXES = (0, 3)


def _as(t, dtype):
    return t if t.dtype == dtype else ops.cast(t, dtype)


def _grouped(t, N, group, dtype):
    """t (N*C*HxW elements) as (N, group, D, HxW) in ``dtype``."""
    return ops.reshape(_as(t, dtype), (N, group, -1, _hxw(t, N)))


def _hxw(t, N):
    shape = t.shape
    C = shape[1] if len(shape) > 1 else 1
    size = 1
    for dim in shape:
        size *= dim
    return size // max(N * C, 1) if N * C else 0


def _channel_param(param, group, dtype):
    """gamma/beta (C,) as (1, group, D, 1); None for the empty "none" tensor."""
    if param.size == 0:
        return None
    return ops.reshape(_as(param, dtype), (1, group, -1, 1))


def _cotangent(dout, mask_bit):
    """A backward output's incoming gradient, None where the output was masked off (empty)."""
    return dout if mask_bit and dout.size != 0 else None


def _stats(x, mean, rstd, group, statistics):
    """(N, group, 1, 1) mean and rstd: the given ones, or ("of_x") recomputed from x."""
    N = x.shape[0]
    m = ops.reshape(_as(mean, x.dtype), (N, group, 1, 1))
    r = ops.reshape(_as(rstd, x.dtype), (N, group, 1, 1))
    if statistics == PARTIAL:
        return m, r
    m = ops.mean(x, axis=_GROUP_AXES, keep_dims=True)
    xc = x - m
    var = ops.mean(xc * xc, axis=_GROUP_AXES, keep_dims=True)
    eps = ops.stop_gradient(1.0 / (r * r) - var)
    return m, ops.rsqrt(var + eps)


def _gn_vjp(dy, xc, r, w, s, u, p, q):
    """The vjp of GroupNorm's backward in the (N, group, D, HxW) layout: the gradients of
    <u, dx> + <p, dgamma> + <q, dbeta> w.r.t. dy, xc, r and w (w None: no gamma).
    u, p, q may be None (masked off or no gradient)."""
    a = dy if w is None else w * dy
    g_dy = None
    g_xc = None
    g_r = None
    g_a = None
    if u is not None:
        U = ops.sum(u, dim=_GROUP_AXES, keepdim=True)
        V = ops.sum(u * xc, dim=_GROUP_AXES, keepdim=True)
        Sa = ops.sum(a, dim=_GROUP_AXES, keepdim=True)
        Sb = ops.sum(a * xc, dim=_GROUP_AXES, keepdim=True)
        r3s = r * r * r * s
        g_a = r * (u - s * U) - r3s * V * xc
        g_xc = -r3s * (u * Sb + V * a)
        g_r = ops.sum(u * a, dim=_GROUP_AXES, keepdim=True) - s * U * Sa - 3.0 * r * r * s * V * Sb
        g_dy = g_a if w is None else w * g_a
    if p is not None:
        g_dy = _add(g_dy, p * r * xc)
        g_xc = _add(g_xc, p * r * dy)
        g_r = _add(g_r, ops.sum(p * dy * xc, dim=_GROUP_AXES, keepdim=True))
    if q is not None:
        g_dy = _add(g_dy, q + ops.zeros_like(dy))
    g_w = None if (w is None or g_a is None) else ops.sum(dy * g_a, dim=_CHANNEL_AXES, keepdim=True)
    return g_dy, g_xc, g_r, g_w


def _add(a, b):
    return b if a is None else (a if b is None else a + b)


def _sum_channels(t):
    return ops.sum(t, dim=_CHANNEL_AXES, keepdim=True)


def _finish(x_in, dy_in, mean_in, rstd_in, gamma_in, xc, r, s, g_dy, g_xc, g_r, g_w, statistics):
    """The bprop's gradients in the inputs' shapes and dtypes (zeros where none flows)."""
    if g_xc is None:
        g_xc = ops.zeros_like(xc)
    if g_r is None:
        g_r = ops.zeros_like(r)
    g_mean = -ops.sum(g_xc, dim=_GROUP_AXES, keepdim=True)
    if statistics == OF_X:  # mean and rstd are functions of x: their parts join x's gradient
        g_x = g_xc + s * g_mean - g_r * r * r * r * s * xc
        g_mean_out, g_rstd_out = ops.zeros_like(mean_in), ops.zeros_like(rstd_in)
    else:
        g_x = g_xc
        g_mean_out = _as(ops.reshape(g_mean, mean_in.shape), mean_in.dtype)
        g_rstd_out = _as(ops.reshape(g_r, rstd_in.shape), rstd_in.dtype)
    g_x = _as(ops.reshape(g_x, x_in.shape), x_in.dtype)
    g_dy = ops.zeros_like(dy_in) if g_dy is None else _as(ops.reshape(g_dy, dy_in.shape), dy_in.dtype)
    if gamma_in.size == 0 or g_w is None:
        g_gamma = ops.zeros_like(gamma_in)
    else:
        g_gamma = _as(ops.reshape(g_w, gamma_in.shape), gamma_in.dtype)
    return g_dy, g_x, g_mean_out, g_rstd_out, g_gamma


def _prepare(dy, x, mean, rstd, gamma, group, statistics):
    dtype = mean.dtype
    if dtype not in (mstype.float32, mstype.float64):
        dtype = mstype.float32
    N = x.shape[0]
    xg = _grouped(x, N, group, dtype)
    dyg = _grouped(dy, N, group, dtype)
    m, r = _stats(xg, mean, rstd, group, statistics)
    # 1/M as a tensor of the computing dtype: a Python float operand would be float32.
    s = ops.reciprocal(ops.full((), float(max(xg.shape[2] * xg.shape[3], 1)), dtype=dtype))
    return dtype, xg, dyg, xg - m, r, s, _channel_param(gamma, group, dtype)


def _douts(dout, xg, group, mask, dtype):
    """(u, p, q) of the backward's outputs (dx, dgamma, dbeta), laid out for _gn_vjp."""
    u = _cotangent(dout[0], mask[0])
    p = _cotangent(dout[1], mask[1])
    q = _cotangent(dout[2], mask[2])
    u = None if u is None else ops.reshape(_as(u, dtype), xg.shape)
    p = None if p is None else ops.reshape(_as(p, dtype), (1, group, -1, 1))
    q = None if q is None else ops.reshape(_as(q, dtype), (1, group, -1, 1))
    return u, p, q


def group_norm_backward_bprop(group, mask, statistics):
    """The bprop of GroupNorm's backward op (dy, x, mean, rstd, gamma) -> (dx, dgamma, dbeta)."""
    group = int(group)
    mask = tuple(bool(m) for m in mask)

    def bprop(dy, x, mean, rstd, gamma, out, dout):
        dtype, xg, dyg, xc, r, s, w = _prepare(dy, x, mean, rstd, gamma, group, statistics)
        u, p, q = _douts(dout, xg, group, mask, dtype)
        g_dy, g_xc, g_r, g_w = _gn_vjp(dyg, xc, r, w, s, u, p, q)
        return _finish(x, dy, mean, rstd, gamma, xc, r, s, g_dy, g_xc, g_r, g_w, statistics)

    return bprop


def group_norm_silu_backward_bprop(group, swish_scale, mask, statistics):
    """The bprop of the fused backward op (dz, x, mean, rstd, gamma, beta) -> (dx, dgamma, dbeta)."""
    group = int(group)
    k = float(swish_scale)
    mask = tuple(bool(m) for m in mask)

    def bprop(dz, x, mean, rstd, gamma, beta, out, dout):
        dtype, xg, dzg, xc, r, s, w = _prepare(dz, x, mean, rstd, gamma, group, statistics)
        b = _channel_param(beta, group, dtype)
        y = xc * r if w is None else w * xc * r
        if b is not None:
            y = y + b
        sig = ops.sigmoid(k * y)
        one_minus = 1.0 - sig
        h = sig + k * y * sig * one_minus
        dy = dzg * h
        u, p, q = _douts(dout, xg, group, mask, dtype)
        g_dy, g_xc, g_r, g_w = _gn_vjp(dy, xc, r, w, s, u, p, q)
        g_b = None
        g_dz = None
        if g_dy is not None:
            g_dz = g_dy * h
            dh = k * sig * one_minus * (2.0 + k * y * (1.0 - 2.0 * sig))
            g_y = g_dy * dzg * dh
            wr = r if w is None else w * r
            g_xc = _add(g_xc, g_y * wr)
            g_r = _add(g_r, ops.sum(g_y * (xc if w is None else w * xc), dim=_GROUP_AXES, keepdim=True))
            if w is not None:
                g_w = _add(g_w, _sum_channels(g_y * xc * r))
            g_b = _sum_channels(g_y)
        grads = _finish(x, dz, mean, rstd, gamma, xc, r, s, g_dz, g_xc, g_r, g_w, statistics)
        if beta.size == 0 or g_b is None:
            g_beta = ops.zeros_like(beta)
        else:
            g_beta = _as(ops.reshape(g_b, beta.shape), beta.dtype)
        return grads + (g_beta,)

    return bprop

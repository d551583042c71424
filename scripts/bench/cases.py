"""The per-shape cases: inputs of one (shape, dtype) for our kernel (ctypes), torch, the numpy
reference and MindSpore, and the MindSpore callables (PyNative ops, GRAPH_MODE cells) timed on them."""
import ctypes

import numpy as np

from .common import EPS, torch
from .timing import GraphCall


def bf16_bits(values):
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def storage(values, dtype):
    """The kernel's numpy storage for float32 `values` in `dtype`."""
    if dtype == "float32":
        return np.ascontiguousarray(values, np.float32)
    if dtype == "float16":
        return np.ascontiguousarray(values, np.float16)
    return bf16_bits(values)


def as_float32(array, dtype):
    return bf16_values(array) if dtype == "bfloat16" else array.astype(np.float32)


class KernelLib:
    def __init__(self):
        from ms_groupnorm.backends import cpu_kernels

        self.lib = cpu_kernels.cdll()

    def set_threads(self, threads):
        self.lib.MsGroupNormSetNumThreads(threads)

    def isa(self):
        return self.lib.MsGroupNormActiveIsa().decode()

    def select_isa(self, name):
        if self.lib.MsGroupNormSelectIsa(name.encode()) != 0:
            raise RuntimeError(f"the {name} kernel build cannot run here")


class Case:
    """Inputs of one (shape, dtype) in every framework's form, plus the callables."""

    def __init__(self, shape, dtype, kernel, with_ms):
        N, C, H, W, G = shape
        self.shape, self.dtype, self.N, self.C, self.HxW, self.G = shape, dtype, N, C, H * W, G
        rng = np.random.default_rng(0)
        x32 = (rng.standard_normal((N, C, H, W)) * 2 + 0.5).astype(np.float32)
        dy32 = rng.standard_normal((N, C, H, W)).astype(np.float32)
        g32 = (1 + 0.1 * rng.standard_normal(C)).astype(np.float32)
        b32 = (0.1 * rng.standard_normal(C)).astype(np.float32)
        self.x, self.dy = storage(x32, dtype), storage(dy32, dtype)
        self.gamma, self.beta = storage(g32, dtype), storage(b32, dtype)
        self.y, self.dx = np.empty_like(self.x), np.empty_like(self.x)
        self.mean = np.empty((N, G), self.x.dtype)
        self.rstd = np.empty((N, G), self.x.dtype)
        self.dgamma, self.dbeta = np.empty_like(self.gamma), np.empty_like(self.gamma)
        self.kernel = kernel
        code = dtype.encode()
        ptr = lambda a: a.ctypes.data
        self._fwd_args = (ptr(self.x), ptr(self.gamma), ptr(self.beta), ptr(self.y), ptr(self.mean), ptr(self.rstd),
                          N, C, self.HxW, G, ctypes.c_float(EPS), code, code)
        self._bwd_args = (ptr(self.dy), ptr(self.x), ptr(self.mean), ptr(self.rstd), ptr(self.gamma), ptr(self.dx),
                          ptr(self.dgamma), ptr(self.dbeta), N, C, self.HxW, G, code, code, 1, 1, 1)
        assert self.ours_forward() == 0 and self.ours_backward() == 0
        # float32 copies of the exact stored values, for the numpy reference
        self.x32, self.dy32 = as_float32(self.x, dtype), as_float32(self.dy, dtype)
        self.g32, self.b32 = as_float32(self.gamma, dtype), as_float32(self.beta, dtype)
        self.mean32, self.rstd32 = as_float32(self.mean, dtype), as_float32(self.rstd, dtype)
        if torch is not None:
            self._init_torch()
        if with_ms:
            self._init_ms()

    def numel(self):
        return self.N * self.C * self.HxW

    def itemsize(self):
        return self.x.itemsize

    # -- ours, kernel only
    def ours_forward(self):
        return self.kernel.lib.MsGroupNormForward(*self._fwd_args)

    def ours_backward(self):
        return self.kernel.lib.MsGroupNormBackward(*self._bwd_args)

    # -- torch
    def _init_torch(self):
        tdtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[self.dtype]
        to_t = lambda a: torch.from_numpy(a).to(tdtype)
        self.t_x = to_t(self.x32).contiguous()
        self.t_dy = to_t(self.dy32).contiguous()
        self.t_g, self.t_b = to_t(self.g32), to_t(self.b32)
        _, self.t_mean, self.t_rstd = self.torch_forward()

    def torch_forward(self):
        return torch.ops.aten.native_group_norm(self.t_x, self.t_g, self.t_b, self.N, self.C, self.HxW, self.G, EPS)

    def torch_backward(self):
        return torch.ops.aten.native_group_norm_backward(self.t_dy, self.t_x, self.t_mean, self.t_rstd, self.t_g,
                                                         self.N, self.C, self.HxW, self.G, [True, True, True])

    # -- numpy reference (float64 oracle)
    def numpy_forward(self):
        from ms_groupnorm import reference

        return reference.forward(self.x32, self.g32, self.b32, self.G, EPS)

    def numpy_backward(self):
        from ms_groupnorm import reference

        return reference.backward(self.dy32, self.x32, self.mean32, self.rstd32, self.g32, self.G)

    # -- MindSpore
    def _init_ms(self):
        import mindspore as ms
        from mindspore import Tensor

        mdtype = {"float32": ms.float32, "float16": ms.float16, "bfloat16": ms.bfloat16}[self.dtype]
        self.ms_dtype = mdtype
        to_ms = lambda a: Tensor(a, dtype=mdtype)
        self.m_x, self.m_dy = to_ms(self.x32), to_ms(self.dy32)
        self.m_g, self.m_b = to_ms(self.g32), to_ms(self.b32)
        self.m_mean, self.m_rstd = to_ms(self.mean32), to_ms(self.rstd32)
        self.m_x3 = Tensor(self.x32.reshape(self.N, self.C, -1), dtype=mdtype)


def graph_cells():
    from mindspore import nn
    import mindspore as ms

    class GraphForward(nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def construct(self, x):
            return self.net(x)

    class GraphGradStep(nn.Cell):
        """value_and_grad of the net w.r.t. its input and parameters (sens = ones)."""

        def __init__(self, net):
            super().__init__()
            self.net = net
            self.grad = ms.value_and_grad(net, grad_position=0, weights=net.trainable_params())

        def construct(self, x):
            return self.grad(x)

    class TrainStep(nn.Cell):
        def __init__(self, net, loss_fn, optimizer):
            super().__init__()
            self.optimizer = optimizer
            self.grad = ms.value_and_grad(nn.WithLossCell(net, loss_fn), None, optimizer.parameters)

        def construct(self, data, label):
            loss, grads = self.grad(data, label)
            self.optimizer(grads)
            return loss

    return GraphForward, GraphGradStep, TrainStep


def ms_callables(case):
    """name -> (callable) of the MindSpore-side implementations of one case."""
    import mindspore as ms
    from mindspore import nn, ops
    from mindspore.ops.auto_generate import group_norm_grad_op

    import ms_groupnorm
    from ms_groupnorm import functional as F

    GraphForward, GraphGradStep, _ = graph_cells()
    c = case
    out = {}
    out["bwd/ours_pynative"] = lambda: F.group_norm_backward(c.m_dy, c.m_x, c.m_mean, c.m_rstd, c.m_g, c.N, c.C, c.HxW,
                                                             c.G)
    out["bwd/ms_pynative"] = lambda: group_norm_grad_op(c.m_dy, c.m_x, c.m_mean, c.m_rstd, c.m_g, c.G, True, True,
                                                        True)
    out["fwd/ours_pynative"] = lambda: F.group_norm_forward(c.m_x, c.m_g, c.m_b, c.N, c.C, c.HxW, c.G, EPS)
    out["fwd/ms_pynative"] = lambda: ops.group_norm(c.m_x, c.G, c.m_g, c.m_b, EPS)

    for name, norm in (("ours", ms_groupnorm.GroupNorm(c.G, c.C)), ("ms", nn.GroupNorm(c.G, c.C))):
        fwd, step = GraphForward(norm), GraphGradStep(norm)
        out[f"graphfwd/{name}_graph"] = GraphCall(fwd, c.m_x)
        out[f"graphstep/{name}_graph"] = GraphCall(step, c.m_x)
    return out


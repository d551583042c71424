"""What one op costs inside a compiled graph, ours next to the built-in op."""
import numpy as np

from .common import EPS, MID, TINY
from .timing import GraphCall, pause, pynative_sync, timed


GRAPH_OP_REPS = 16


def graph_op_round(rnd, kernel, timer, raw):
    """What one op costs inside a compiled graph, ours (the aot Custom
    ops) next to the built-in GroupNorm/GroupNormGrad, on a tiny and a mid shape: a graph
    runs the op REPS times in a chain, so graph-launch overhead is shared."""
    import mindspore as ms
    from mindspore import Tensor

    if not hasattr(graph_op_round, "nets"):
        graph_op_round.nets = {}
        for shape in (TINY, MID):
            N, C, H, W, G = shape
            rng = np.random.default_rng(3)
            x = Tensor(rng.standard_normal((N, C, H, W)).astype(np.float32))
            gamma, beta = Tensor(np.ones(C, np.float32)), Tensor(np.zeros(C, np.float32))
            mean, rstd = Tensor(np.zeros((N, G), np.float32)), Tensor(np.ones((N, G), np.float32))
            for impl, net in graph_op_cells(G).items():
                args = (x, gamma, beta) if impl.startswith("graphop_fwd") else (x, x, mean, rstd, gamma)
                graph_op_round.nets[(shape, impl)] = GraphCall(net, *args)
    kernel.set_threads(1)
    for (shape, impl), call in graph_op_round.nets.items():
        seconds = timed(timer, call, pynative_sync)
        raw.append((rnd, shape, "float32", 1, impl, seconds / GRAPH_OP_REPS))
        pause()


def graph_op_cells(group):
    """GRAPH_MODE cells running one op GRAPH_OP_REPS times in a chain: ours and built-in,
    forward and backward."""
    from mindspore import nn
    from mindspore.ops.auto_generate import group_norm_grad_op, group_norm_op

    from ms_groupnorm.ops import routing

    full = (True, True, True)

    class OursForward(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = routing._forward_op(routing.GROUP_NORM, (group, EPS), full, "cpu")

        def construct(self, x, gamma, beta):
            for _ in range(GRAPH_OP_REPS):
                x = self.op(x, gamma, beta)[0]
            return x

    class BuiltinForward(nn.Cell):
        def construct(self, x, gamma, beta):
            for _ in range(GRAPH_OP_REPS):
                x = group_norm_op(x, group, gamma, beta, EPS)[0]
            return x

    class OursBackward(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = routing._backward_op(routing.GROUP_NORM.backward, (group,), full, "cpu")

        def construct(self, dy, x, mean, rstd, gamma):
            for _ in range(GRAPH_OP_REPS):
                dy = self.op(dy, x, mean, rstd, gamma)[0]
            return dy

    class BuiltinBackward(nn.Cell):
        def construct(self, dy, x, mean, rstd, gamma):
            for _ in range(GRAPH_OP_REPS):
                dy = group_norm_grad_op(dy, x, mean, rstd, gamma, group, True, True, True)[0]
            return dy

    return {"graphop_fwd/ours": OursForward(), "graphop_fwd/ms": BuiltinForward(),
            "graphop_bwd/ours": OursBackward(), "graphop_bwd/ms": BuiltinBackward()}


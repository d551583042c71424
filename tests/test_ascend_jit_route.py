"""``@ms.jit`` inside PYNATIVE_MODE on Ascend: while the graph compiles, the op getters pick
the aot Custom route ("ascend"), whose ops are graph nodes; eager calls keep the Ascend
PyNative module. Simulated: $MS_GROUPNORM_BACKEND=ascend makes the route choice Ascend's on
this machine, and MindSpore's own graph compiler calls the getter as it would there."""
import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from ms_groupnorm.ops import routing


def test_jit_in_pynative_compiles_the_aot_route_and_eager_calls_keep_the_module(monkeypatch):
    monkeypatch.setenv(routing.BACKEND_ENV, "ascend")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    seen = []

    @routing.evaluated_by_graph_compiler
    def op_getter(tag):
        # what forward_op/backward_op and the fused getters decide, from where they decide it
        seen.append((tag, routing._op_backend(), routing._mode_backend("ascend")))
        return ops.Abs()

    @ms.jit
    def compiled(x):
        return op_getter("jit")(x)

    x = Tensor(np.array([-1.0, 2.0], np.float32))
    np.testing.assert_array_equal(compiled(x).asnumpy(), [1.0, 2.0])
    op_getter("eager")
    assert seen == [("jit", "ascend", "ascend"),
                    ("eager", routing.ASCEND_PYBOOST_BACKEND, routing.ASCEND_PYBOOST_BACKEND)], seen

"""The op caches are bounded and the module builds happen once per process, also when
several threads ask at the same time."""
import threading
import time

import mindspore as ms
import numpy as np
from mindspore import Tensor

import ms_groupnorm as mg
from ms_groupnorm.backends import cpu_pyboost
from ms_groupnorm.backends.native_build import once
from ms_groupnorm.ops import routing


def test_a_new_eps_per_call_does_not_grow_the_op_cache_without_bound():
    """Each distinct eps kept an op (~13 KiB) for ever: an annealed eps leaked."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    x = Tensor(np.ones((1, 2, 3), np.float32))
    for i in range(routing.OP_CACHE_SIZE + 20):
        mg.group_norm(x, 1, eps=1e-5 * (1 + i))
    for getter in (routing._forward_op, routing._backward_op, cpu_pyboost.forwards):  # pylint: disable=protected-access
        assert getter.cache_info().maxsize == routing.OP_CACHE_SIZE
        assert getter.cache_info().currsize <= routing.OP_CACHE_SIZE


def test_once_runs_its_function_once_when_threads_race():
    calls = []

    @once
    def build():
        calls.append(1)
        time.sleep(0.2)  # a build in progress while the other threads ask
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(build())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1
    build.cache_clear()
    build()
    assert len(calls) == 2

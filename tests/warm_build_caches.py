"""Builds what the test run compiles on first use, in a background process of its own, so a
fresh clone's compiles run on the second core while the tests run on the first (conftest.py
starts it for a whole-suite run).

    python tests/warm_build_caches.py pyboost   # the PyNative fast-path module (GroupNorm and fused)
    python tests/warm_build_caches.py twin      # the AscendC twin libraries (backward, forward)

Only the public API is used: one PyNative training step of GroupNorm and of GroupNormSiLU,
on the default backend (which builds the fast-path module) or on
MS_GROUPNORM_BACKEND=ascendc_twin (which builds the twin libraries). Each lands in the cache
the tests use ($MS_GROUPNORM_CACHE, $MS_GROUPNORM_TWIN_CACHE): MindSpore's module builder waits
on a build another process holds, so nothing is compiled twice, and what is already built is
only re-checked. Nothing here checks a result: the tests do; a failure only means the tests
build it themselves.
"""
import os
import sys

WHAT = {"pyboost": "cpu", "twin": "ascendc_twin"}


def one_training_step_each():
    import mindspore as ms
    import numpy as np

    import ms_groupnorm

    ms.set_context(mode=ms.PYNATIVE_MODE)
    x = ms.Tensor(np.linspace(-1, 1, 2 * 4 * 3).reshape(2, 4, 3).astype(np.float32))
    # GroupNorm first: on the twin backend its (backward) library is the first one the tests need;
    # GroupNormSiLU adds the forward twin (on the default backend one module serves both).
    for layer in (ms_groupnorm.GroupNorm(2, 4), ms_groupnorm.GroupNormSiLU(2, 4)):
        ms.value_and_grad(lambda inp, layer=layer: layer(inp).sum(), grad_position=0,
                          weights=layer.trainable_params())(x)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in WHAT:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(WHAT)}}}")
    os.environ["MS_GROUPNORM_BACKEND"] = WHAT[sys.argv[1]]
    one_training_step_each()

"""Kernel calls reuse the calling thread's scratch buffer (kernels/cpu/call_scratch.h), and the
parameters converted into it each call (gamma and beta) are rewritten only where their bits changed
(StoreIfChanged), so that the other threads' cached copies survive a call with the same weights.
A call must never see the previous call's parameters: calls that alternate between two sets of
weights must each give the bits of the same call made on a scratch another shape has just
overwritten. (The weights also swap +0 and -0, which == cannot tell apart; no output here shows the
sign of a zero weight, so that part only runs the bitwise comparison, it does not prove it.)
Skipping the rewrites altogether fails 12 of the 16 cases."""
import numpy as np
import pytest

from kernel_placed_calls import OPERATORS, call_placed, operator_inputs

SIZES = (3, 24, 10, 6)  # (N, C, HxW, G)
OTHER = (2, 40, 7, 5)   # a call that leaves other bytes where SIZES keeps its parameters


def _second_weights(inputs):
    """inputs with gamma and beta changed in a few channels: new values, and +0 where they were -0
    and the other way round (equal under ==, not in their bits)."""
    changed = dict(inputs)
    for name in ("gamma", "beta"):
        values = inputs[name].copy()
        values[1] = values[0]
        values[[2, 3]] = values.dtype.type(0)
        zero_bits = np.zeros(2, values.dtype)
        if values.dtype == np.uint16:  # bf16 bits: +0 and -0
            zero_bits[:] = [0x0000, 0x8000]
        else:
            zero_bits[:] = [0.0, -0.0]
        values[[2, 3]] = zero_bits
        changed[name] = values
    first = dict(inputs)
    for name in ("gamma", "beta"):
        values = first[name].copy()
        values[[2, 3]] = changed[name][[3, 2]]  # the zeros of the other sign
        first[name] = values
    return first, changed


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_alternating_weights_give_the_bits_of_a_fresh_scratch(kernel_lib, op, dtype, threads):
    lib = kernel_lib
    lib.MsGroupNormSetNumThreads(threads)
    lib.MsGroupNormSetMinElementsPerThread(1)  # two threads split even this small call
    rng = np.random.default_rng(4)
    weights = _second_weights(operator_inputs(rng, SIZES, dtype))
    other = operator_inputs(rng, OTHER, dtype)
    plain = lambda name, a: a.copy()  # noqa: E731
    try:
        fresh = []
        for inputs in weights:
            call_placed(lib, op, OTHER, dtype, other, plain)  # the scratch now holds another call's bytes
            fresh.append(call_placed(lib, op, SIZES, dtype, inputs, plain))
        assert fresh[0] != fresh[1], "the two sets of weights give the same outputs: the test cannot see staleness"
        for k in range(6):
            assert call_placed(lib, op, SIZES, dtype, weights[k % 2], plain) == fresh[k % 2], (op, dtype, k)
    finally:
        lib.MsGroupNormSetMinElementsPerThread(0)

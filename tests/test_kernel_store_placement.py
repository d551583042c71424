"""Outputs placed just above an input in memory.

When an output lies up to kAliasWindowBytes above an input (modulo 4096 bytes), the
element-wise row loops compute their output ahead of their stores (row_kernels.h,
StoresAliasLoads), a loop order no other placement takes. Every build, dtype, operator and
row length must give there the bits the same call gives with unrelated buffers, with cached
and streamed stores."""
import numpy as np
import pytest

from kernel_placed_calls import OPERATORS, call_placed, operator_inputs

PAGE = 4096
# byte offsets of the output above the input, modulo a page: inside the window (16 .. 256),
# at its edge and just past it, and just below (-32: the plain loop's order)
DELTAS = [16, 32, 64, 192, 256, 288, -32]
# (N, C, HxW, G): rows shorter than one look-ahead chunk, rows of a few chunks with a vector
# and an element tail, and rows of many chunks
SIZES = [(2, 4, 37, 2), (1, 4, 1000, 2), (1, 2, 2048 + 19, 1)]


class Arena:
    """One page-aligned byte buffer handing out arrays at chosen offsets, so that an output
    can sit a chosen number of bytes above an input modulo a page."""

    def __init__(self, nbytes):
        self.raw = np.zeros(nbytes + PAGE, np.uint8)
        self.base = (-self.raw.ctypes.data) % PAGE
        self.used = 0

    def array(self, like, page_offset):
        start = self.base + (self.used + PAGE - 1) // PAGE * PAGE + page_offset % PAGE
        view = self.raw[start:start + like.nbytes].view(like.dtype).reshape(like.shape)
        self.used = start - self.base + like.nbytes
        view[...] = like
        return view


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_outputs_just_above_an_input_get_the_same_bits(kernel_lib, op, dtype):
    lib = kernel_lib
    lib.MsGroupNormSetNumThreads(1)
    rng = np.random.default_rng(11)
    checked = 0
    for sizes in SIZES:
        inputs = operator_inputs(rng, sizes, dtype)
        for isa in lib.isas:
            lib.MsGroupNormSelectIsa(isa.encode())
            for stream_min in (0, 1):  # the default (cached stores here), then every output streamed
                lib.MsGroupNormSetStreamMinBytes(stream_min)
                arena = Arena(16 * (inputs["x"].nbytes + 2 * PAGE))
                want = call_placed(lib, op, sizes, dtype, inputs, lambda name, a: arena.array(a, 64))
                # the output above x (every operator reads x), then above dy (the backwards)
                for under in ("x", "dy") if op.endswith("backward") else ("x",):
                    for delta in DELTAS:
                        arena = Arena(16 * (inputs["x"].nbytes + 2 * PAGE))
                        offsets = {under: 64, "out": 64 + delta}
                        got = call_placed(lib, op, sizes, dtype, inputs,
                                   lambda name, a: arena.array(a, offsets.get(name, 640 + 16 * len(name))))
                        assert got == want, f"{isa}, {op}, {dtype}, {sizes}: output {delta} bytes above {under}"
                        checked += 1
    assert checked == len(SIZES) * len(lib.isas) * 2 * len(DELTAS) * (2 if op.endswith("backward") else 1)

"""Settings shared by every section of the benchmark: shapes, dtypes, eps and the optional torch."""

ANCHOR_SHAPES = [(2, 64, 32, 32, 32), (8, 320, 64, 64, 32), (16, 128, 56, 56, 32), (32, 32, 28, 28, 8),
                 (4, 1280, 8, 8, 32), (1, 3, 224, 224, 1), (3, 60, 17, 19, 6)]
QUICK_SHAPES = [(2, 64, 32, 32, 32), (16, 128, 56, 56, 32), (3, 60, 17, 19, 6)]
DTYPES = ["float32", "float16", "bfloat16"]
BANDWIDTH_TARGET_SHAPES = [(8, 320, 64, 64, 32), (16, 128, 56, 56, 32)]
EPS = 1e-5

# The per-call and graph-op sections run on a tiny call and on a mid shape:
TINY = (2, 8, 4, 1, 4)  # N, C, H, W, G: a call that is pure overhead
MID = (4, 32, 16, 16, 8)
KERNEL_VS_TORCH_DTYPES = ("float32", "bfloat16")  # the kernel-only backward against torch, per ISA build

try:
    import torch
except ImportError:  # optional: the torch columns are left out
    torch = None


def shape_name(shape):
    return "x".join(str(v) for v in shape)

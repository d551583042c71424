"""numpy storage for kernel-only (ctypes) calls: bfloat16 travels as uint16 bit patterns."""
import mindspore as ms
import numpy as np

DTYPE_NAME = {ms.float32: "float32", ms.float16: "float16", ms.bfloat16: "bfloat16"}


def to_storage(values, dtype):
    """float64 values already representable in ``dtype`` -> the kernel's storage array."""
    if dtype == ms.float32:
        return np.ascontiguousarray(values, np.float32)
    if dtype == ms.float16:
        return np.ascontiguousarray(values, np.float16)
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    assert np.all(bits & 0xFFFF == 0), "value not representable in bfloat16"
    return (bits >> 16).astype(np.uint16)


def from_storage(array, dtype):
    if dtype == ms.bfloat16:
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return array.astype(np.float64)

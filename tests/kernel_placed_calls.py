"""The four CPU operators called through the C API with every array placed by the caller, for the
tests of where buffers lie in memory (test_kernel_store_placement.py, test_kernel_bounds.py)."""
import ctypes

import numpy as np

from ms_groupnorm.backends import cpu_kernels

OPERATORS = ["forward", "backward", "silu_forward", "silu_backward"]
STORAGE = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}


def stored_data(rng, shape, dtype):
    """Normal data (mean 0.5, spread 2) in ``dtype``'s storage (bf16 as uint16 bits)."""
    values = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    if dtype == "bfloat16":
        return (values.view(np.uint32) >> 16).astype(np.uint16)
    return values.astype(STORAGE[dtype])


def operator_inputs(rng, sizes, dtype):
    """x, dy, gamma, beta and the forward's mean and rstd of x, for ``sizes`` = (N, C, HxW, G)."""
    N, C, hxw, G = sizes
    inputs = {"x": stored_data(rng, (N, C, hxw), dtype), "dy": stored_data(rng, (N, C, hxw), dtype),
              "gamma": stored_data(rng, (C,), dtype), "beta": stored_data(rng, (C,), dtype)}
    inputs["mean"], inputs["rstd"] = cpu_kernels.forward(inputs["x"], inputs["gamma"], inputs["beta"], G,
                                                         data_dtype=dtype, stat_dtype=dtype)[1:]
    return inputs


def call_placed(lib, op, sizes, dtype, inputs, place):
    """Raw bytes of op's outputs, every array placed by place(name, array)."""
    N, C, hxw, G = sizes
    x, dy, gamma, beta, mean, rstd = (place(name, inputs[name]) for name in ("x", "dy", "gamma", "beta", "mean",
                                                                              "rstd"))
    out = place("out", np.zeros_like(inputs["x"]))
    stats = [place(name, np.zeros_like(inputs["gamma"] if op.endswith("backward") else inputs["mean"]))
             for name in ("stat0", "stat1")]
    p = lambda a: ctypes.c_void_p(a.ctypes.data)
    names = (dtype.encode(), dtype.encode())
    if op == "forward":
        status = lib.MsGroupNormForward(p(x), p(gamma), p(beta), p(out), p(stats[0]), p(stats[1]), N, C, hxw, G,
                                        ctypes.c_float(1e-5), *names)
    elif op == "backward":
        status = lib.MsGroupNormBackward(p(dy), p(x), p(mean), p(rstd), p(gamma), p(out), p(stats[0]), p(stats[1]),
                                         N, C, hxw, G, *names, 1, 1, 1)
    elif op == "silu_forward":
        status = lib.MsGroupNormSiluForward(p(x), p(gamma), p(beta), p(out), p(stats[0]), p(stats[1]), N, C, hxw, G,
                                            ctypes.c_float(1e-5), ctypes.c_float(1.0), *names)
    else:
        status = lib.MsGroupNormSiluBackward(p(dy), p(x), p(mean), p(rstd), p(gamma), p(beta), p(out), p(stats[0]),
                                             p(stats[1]), N, C, hxw, G, ctypes.c_float(1.0), *names, 1, 1, 1)
    assert status == 0, (op, sizes, dtype)
    return [a.tobytes() for a in (out, *stats)]

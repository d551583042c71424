"""MS_GROUPNORM_BACKEND=ascendc_twin runs GroupNorm's forward as Ascend does: GroupNormSiluMs with
SiLU off, through the forward twin's ``GroupNorm`` aot shim (kernels/ascendc/twin/twin_forward_aot.cc),
not the CPU kernel.

* The shim called directly: the same bits as a direct twin launch of the kernel with SiLU off,
  statistics rounded to gamma's dtype, and the CPU entry point's refusals.
* Through MindSpore, both modes: GroupNorm, group_norm and group_norm_forward give the bits of a
  direct twin launch on the same twin device; for float32 data those differ from the CPU kernel's
  (so the comparison tells the two routes apart)."""
import math

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor

import ms_groupnorm
from cases import make_inputs, tensor
from conftest import TWIN_CORES  # the twin device of the twin_backend fixture
from ms_groupnorm import group_norm, group_norm_forward
from ms_groupnorm.backends import cpu_kernels
import twin
from ms_groupnorm.ops import routing
from test_abi import aot_call, fake_extra_lib, make_extra  # noqa: F401  (fixtures)
from test_silu_ascendc_twin_backend import BAD_DTYPE, MS_DTYPES, OK, PAIRS, forward_buffers, load, store


@pytest.fixture(scope="module")
def twin_lib():
    import ctypes
    return ctypes.CDLL(twin.forward_library_path())


def direct_launch(x, gamma, beta, G, data, stat, eps=1e-5, core_num=48):
    """(y, mean, rstd) as float64 from twin_forward with SiLU off; statistics rounded to stat."""
    C = x.shape[1]
    gamma = np.ones(C) if gamma is None else gamma
    beta = np.zeros(C) if beta is None else beta
    y, mean, rstd, _ = twin.twin_forward(store(x, data), store(gamma, stat), store(beta, stat), G, eps,
                                         activate_silu=False, data_dtype=data, param_dtype=stat, core_num=core_num)
    return load(y, data), load(store(mean, stat), stat), load(store(rstd, stat), stat)


@pytest.mark.parametrize("data,stat", PAIRS, ids=[f"{d}-{s}" for d, s in PAIRS])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "no-params"])
def test_group_norm_shim_runs_the_kernel_with_silu_off(rng, twin_lib, make_extra, data, stat, affine):
    shape, G = (3, 8, 4, 5), 4
    x, _, gamma, beta, _, _ = make_inputs(rng, shape, G, MS_DTYPES[data], MS_DTYPES[stat])
    gamma, beta = (gamma, beta) if affine else (None, None)
    dtypes = [data, stat, stat, data, stat, stat]
    buffers = forward_buffers(x, gamma, beta, G, data, stat)
    assert aot_call("GroupNorm", buffers, dtypes, make_extra(group=G, eps=1e-5), lib=twin_lib) == OK
    for got, want, dtype in zip(buffers[3:], direct_launch(x, gamma, beta, G, data, stat), dtypes[3:]):
        np.testing.assert_array_equal(load(got, dtype), want)


@pytest.mark.parametrize("case", [
    ("nparam", {"nparam": 5}, ["float32"] * 6),
    ("no-eps", {"attrs": {"group": 3}}, ["float32"] * 6),
    ("group-not-dividing-C", {"attrs": {"group": 4, "eps": 1e-5}}, ["float32"] * 6),
    ("mean-dtype", {}, ["float32"] * 4 + ["float16", "float32"]),
    ("fp16-params-fp32-data", {}, ["float32", "float16", "float16", "float32", "float16", "float16"]),
    ("mean-numel", {"mean": (2, 4)}, ["float32"] * 6),
], ids=lambda c: c[0])
def test_group_norm_shim_refuses_what_the_cpu_entry_refuses(rng, twin_lib, make_extra, case):
    _, change, dtypes = case
    storage = {"float32": np.float32, "float16": np.float16}
    x = rng.standard_normal((2, 6, 7))
    shapes = [x.shape, (6,), (6,), x.shape, change.get("mean", (2, 3)), (2, 3)]
    statuses = []
    for lib in (twin_lib, None):
        arrays = [np.full(s, 7, storage[d]) for s, d in zip(shapes, dtypes)]
        extra = make_extra(**change.get("attrs", {"group": 3, "eps": 1e-5}))
        statuses.append(aot_call("GroupNorm", arrays, dtypes, extra, lib=lib,
                                 **{k: v for k, v in change.items() if k == "nparam"}))
        assert all(np.all(out == 7) for out in arrays[3:]), "a refused call wrote an output"
    assert statuses[0] == statuses[1] != OK, statuses


def test_group_norm_shim_refuses_float64(rng, twin_lib, make_extra):
    """float64 runs on the CPU kernels only (the layers and functions refuse it earlier, clearly)."""
    arrays = [np.full(s, 7.0) for s in [(2, 6, 7), (6,), (6,), (2, 6, 7), (2, 3), (2, 3)]]
    assert aot_call("GroupNorm", arrays, ["float64"] * 6, make_extra(group=3, eps=1e-5), lib=twin_lib) == BAD_DTYPE


# ---------------------------------------------------------------- through MindSpore
def test_the_twin_backend_runs_group_norm_forward_on_the_forward_twin(twin_backend):
    op = routing.forward_op(3, 1e-5)
    assert type(op) is ms.ops.Custom  # no PyNative fast path: the aot op in both modes
    assert op.func == twin.forward_aot_func("GroupNorm")


CASES = [("float32", "float32", (2, 6, 5, 7), 3), ("float16", "float32", (2, 8, 9), 4),
         ("bfloat16", "bfloat16", (3, 6, 4), 2)]


@pytest.mark.parametrize("data,stat,shape,G", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_group_norm_forward_gives_the_twin_launch_bits(mode, rng, twin_backend, data, stat, shape, G):
    data_dtype, stat_dtype = MS_DTYPES[data], MS_DTYPES[stat]
    x, _, gamma, beta, _, _ = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    x = load(store(x + 3.0, data), data)  # a mean the two kernels' roundings tell apart
    want_y, want_mean, want_rstd = direct_launch(x, gamma, beta, G, data, stat, core_num=TWIN_CORES)
    if data == "float32":  # 16-bit outputs both round correctly almost everywhere: the same bits
        cpu_y = cpu_kernels.forward(store(x, data), store(gamma, stat), store(beta, stat), G, 1e-5)[0]
        assert not np.array_equal(load(cpu_y, data), want_y), "these inputs cannot tell the routes apart"

    args = (tensor(x, data_dtype), tensor(gamma, stat_dtype), tensor(beta, stat_dtype))
    y, mean, rstd = group_norm_forward(*args, shape[0], shape[1], math.prod(shape[2:]), G, 1e-5)
    as_f64 = lambda t: t.astype(ms.float32).asnumpy().astype(np.float64)  # noqa: E731
    np.testing.assert_array_equal(as_f64(y), want_y)
    np.testing.assert_array_equal(as_f64(mean), want_mean)
    np.testing.assert_array_equal(as_f64(rstd), want_rstd)
    np.testing.assert_array_equal(as_f64(group_norm(*args[:1], G, *args[1:])), want_y)
    layer = ms_groupnorm.GroupNorm(G, shape[1], dtype=stat_dtype)
    layer.gamma.set_data(args[1])
    layer.beta.set_data(args[2])
    np.testing.assert_array_equal(as_f64(layer(args[0])), want_y)


def test_group_norm_without_parameters_on_the_twin(mode, rng, twin_backend):
    """group_norm without weight/bias hands the shim empty gamma/beta: ones and zeros."""
    x = make_inputs(rng, (2, 6, 11), 3, ms.float32, ms.float32)[0] + 3.0
    want = direct_launch(x, None, None, 3, "float32", "float32", core_num=TWIN_CORES)[0]
    np.testing.assert_array_equal(group_norm(Tensor(x, ms.float32), 3).asnumpy().astype(np.float64), want)

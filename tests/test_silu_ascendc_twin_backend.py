"""MS_GROUPNORM_BACKEND=ascendc_twin for the fused GroupNorm + SiLU: the AscendC kernels
GroupNormSiluMs (forward) and GroupNormSiluGradMs (backward) run by their CPU twins behind aot
shims with the CPU kernels' ABI.

* The forward shim (kernels/ascendc/twin/twin_forward_aot.cc, ``GroupNormSilu``) called
  directly: its results against the float64 reference and the CPU entry point, every refusal
  the same status as the CPU entry point, its device configuration from the environment, and
  a kernel fault (a mutated kernel) as status 7.
* Through MindSpore, GRAPH and PYNATIVE: group_norm_silu_forward, group_norm_silu,
  GroupNormSiLU against the reference and the CPU fused op, swish_scale != 1, training steps,
  gradients (through the backward twin's shim ``GroupNormSiluGrad``; a twin library without
  it fails them with cpu_aot's NotImplementedError, not silently). The masked backward runs on
  both backends in test_silu_mindspore.py."""
import ctypes
import shutil
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

from cases import assert_close, make_inputs, tensor, to_numpy
from ms_groupnorm import GroupNormSiLU, group_norm_silu
from ms_groupnorm.backends import cpu_kernels
from ms_groupnorm.ops import routing
import twin
from ms_groupnorm import reference
from test_abi import aot_call, fake_extra_lib, make_extra  # noqa: F401  (fixtures)
from test_silu_mindspore import Forward, sizes

OK, BAD_PARAMS, NULL_POINTER, BAD_RANK, BAD_DTYPE, BAD_SHAPE, BAD_ATTR, KERNEL_FAULT = range(8)
PAIRS = [("float32", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16"), ("float16", "float32"),
         ("bfloat16", "float32")]
MS_DTYPES = {"float32": ms.float32, "float16": ms.float16, "bfloat16": ms.bfloat16}


# ---------------------------------------------------------------- numpy storage of the aot buffers
def store(values, dtype):
    """float64 values as the buffer an aot kernel gets: bfloat16 as uint16 bits (round to
    nearest even), the others as their numpy dtype."""
    if dtype != "bfloat16":
        return np.ascontiguousarray(values, {"float32": np.float32, "float16": np.float16,
                                             "float64": np.float64}[dtype])
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def load(array, dtype):
    if dtype == "bfloat16":
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return array.astype(np.float64)


@pytest.fixture(scope="module")
def twin_lib():
    return ctypes.CDLL(twin.forward_library_path())


def forward_buffers(x, gamma, beta, G, data, stat, fill=7.0):
    """x, gamma, beta | z, mean, rstd for GroupNormSilu; None gamma/beta become empty (0,) arrays."""
    N = x.shape[0]
    empty = np.zeros((0,), np.float64)
    return [store(x, data), store(empty if gamma is None else gamma, stat),
            store(empty if beta is None else beta, stat),
            store(np.full(x.shape, fill), data), store(np.full((N, G), fill), stat),
            store(np.full((N, G), fill), stat)]


def call_forward(lib, buffers, dtypes, extra, **kwargs):
    return aot_call("GroupNormSilu", buffers, dtypes, extra, lib=lib, **kwargs)


# ---------------------------------------------------------------- the forward shim, called directly
@pytest.mark.parametrize("data,stat", PAIRS, ids=[f"{d}-{s}" for d, s in PAIRS])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "no-params"])
@pytest.mark.parametrize("shape,G,swish", [((2, 6, 7), 3, 1.0), ((3, 8, 4, 5), 8, 1.5), ((4, 12), 3, 0.7),
                                           ((2, 4, 0), 2, 1.0)], ids=["rank3", "G==C-scale1.5", "HxW==1", "HxW==0"])
def test_forward_shim_matches_the_reference_and_the_cpu_entry(rng, twin_lib, make_extra, data, stat, affine, shape,
                                                              G, swish):
    x, _, gamma, beta, _, _ = make_inputs(rng, shape, G, MS_DTYPES[data], MS_DTYPES[stat])
    gamma, beta = (gamma, beta) if affine else (None, None)
    extra = make_extra(group=G, eps=1e-5, swish_scale=swish)
    dtypes = [data, stat, stat, data, stat, stat]
    on_twin = forward_buffers(x, gamma, beta, G, data, stat)
    cpu = forward_buffers(x, gamma, beta, G, data, stat)
    assert call_forward(twin_lib, on_twin, dtypes, extra) == OK
    assert call_forward(None, cpu, dtypes, extra) == OK
    want = reference.silu_forward(x, gamma, beta, G, 1e-5, swish)
    for index, ref, dtype, name in ((3, want[0], data if stat == "float32" else stat, "z"), (4, want[1], stat, "mean"),
                                    (5, want[2], stat, "rstd")):
        got = load(on_twin[index], dtypes[index])
        assert got.shape == ref.shape, name
        if x.size == 0:  # empty groups: mean 0, rstd NaN, as the CPU kernel writes them
            assert np.array_equal(got, load(cpu[index], dtypes[index]), equal_nan=True), name
            continue
        assert_close(got, ref, MS_DTYPES[dtype], f"{name} vs reference")
        # against the CPU kernel: both round one float32 result, so at most about 2 ulps apart
        assert_close(got, load(cpu[index], dtypes[index]), MS_DTYPES[dtype], f"{name} vs cpu")


def _broken_forward_cases():
    """(id, change, dtypes override) of calls the CPU entry point refuses."""
    f32 = ["float32"] * 6
    return [
        ("nparam", {"nparam": 5}, f32),
        ("null-params", {"null": ("params",)}, f32),
        ("null-shapes", {"null": ("shapes",)}, f32),
        ("null-dtypes", {"null": ("dtypes",)}, f32),
        ("rank1", {"x_shape": (12,)}, f32),
        ("no-group", {"attrs": {"eps": 1e-5, "swish_scale": 1.0}}, f32),
        ("no-eps", {"attrs": {"group": 3, "swish_scale": 1.0}}, f32),
        ("no-swish-scale", {"attrs": {"group": 3, "eps": 1e-5}}, f32),
        ("group-not-dividing-C", {"attrs": {"group": 4, "eps": 1e-5, "swish_scale": 1.0}}, f32),
        ("group-zero", {"attrs": {"group": 0, "eps": 1e-5, "swish_scale": 1.0}}, f32),
        ("z-dtype", {}, ["float32"] * 3 + ["float16"] + ["float32"] * 2),
        ("mean-dtype", {}, ["float32"] * 4 + ["float16", "float32"]),
        ("beta-dtype", {}, ["float32", "float32", "float16"] + ["float32"] * 3),
        ("fp16-params-fp32-data", {}, ["float32", "float16", "float16", "float32", "float16", "float16"]),
        ("bf16-params-fp16-data", {}, ["float16", "bfloat16", "bfloat16", "float16", "bfloat16", "bfloat16"]),
        ("float64", {}, ["float64"] * 6),
        ("int32", {}, ["int32"] * 6),
        ("unknown-dtype", {}, ["float32", "complex64"] + ["float32"] * 4),
        ("gamma-numel", {"gamma": 5}, f32),
        ("beta-numel", {"beta": 7}, f32),
        ("z-numel", {"z_shape": (2, 6, 6)}, f32),
        ("mean-numel", {"mean": (2, 4)}, f32),
        ("rstd-numel", {"rstd": (3, 3)}, f32),
        ("null-x", {"null_tensor": 0}, f32),
        ("null-mean", {"null_tensor": 4}, f32),
    ]


@pytest.mark.parametrize("case", _broken_forward_cases(), ids=lambda c: c[0])
def test_forward_shim_refuses_what_the_cpu_entry_refuses(rng, twin_lib, make_extra, case):
    _, change, dtypes = case
    x = rng.standard_normal(change.get("x_shape", (2, 6, 7)))
    storage = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16, "float64": np.float64,
               "int32": np.int32, "complex64": np.float32}
    shapes = [x.shape, (change.get("gamma", 6),), (change.get("beta", 6),), change.get("z_shape", x.shape),
              change.get("mean", (2, 3)), change.get("rstd", (2, 3))]

    def buffers():
        out = [np.full(s, 7, storage[d]) for s, d in zip(shapes, dtypes)]
        out[0][...] = x.astype(out[0].dtype) if dtypes[0] != "bfloat16" else 0
        if "null_tensor" in change:
            out[change["null_tensor"]] = None
        return out

    attrs = change.get("attrs", {"group": 3, "eps": 1e-5, "swish_scale": 1.0})
    kwargs = {k: v for k, v in change.items() if k in ("nparam", "null")}
    statuses = []
    for lib in (twin_lib, None):
        arrays = buffers()
        if "null_tensor" in change:  # aot_call gives a None tensor rank 0: this one keeps its shape
            statuses.append(_call_with_null_tensor(lib, arrays, shapes, dtypes, make_extra(**attrs)))
        else:
            statuses.append(call_forward(lib, arrays, dtypes, make_extra(**attrs), **kwargs))
            for out in arrays[3:]:
                assert np.all(out == 7), "a refused call wrote an output"
    assert statuses[0] == statuses[1] != OK, statuses


def _call_with_null_tensor(lib, arrays, shapes, dtypes, extra):
    """Like aot_call, where a None tensor is a null data pointer of a non-empty shape."""
    lib = lib or cpu_kernels.cdll()
    count = len(arrays)
    params = (ctypes.c_void_p * count)(*[None if a is None else a.ctypes.data for a in arrays])
    ndims = (ctypes.c_int * count)(*[len(s) for s in shapes])
    shape_arrays = [np.array(s, np.int64) for s in shapes]
    shape_ptrs = (ctypes.POINTER(ctypes.c_int64) * count)(
        *[s.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)) for s in shape_arrays])
    names = (ctypes.c_char_p * count)(*[d.encode() for d in dtypes])
    entry = lib.GroupNormSilu
    entry.restype = ctypes.c_int
    entry.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 6
    return entry(count, params, ndims, shape_ptrs, names, None, extra)


def test_forward_shim_reads_the_twin_device_from_the_environment(rng, twin_lib, make_extra, monkeypatch):
    """MS_GROUPNORM_TWIN_UB/CORES/POLICY reach the launch: a UB too small for any tiling is
    refused (status 5, as the backward shim does); other core counts and block orders give
    the same bits (the kernel is deterministic by construction)."""
    shape, G = (2, 64, 96), 4
    x, _, gamma, beta, _, _ = make_inputs(rng, shape, G, ms.float32, ms.float32)
    dtypes = ["float32"] * 6
    extra = make_extra(group=G, eps=1e-5, swish_scale=1.0)
    default = forward_buffers(x, gamma, beta, G, "float32", "float32")
    assert call_forward(twin_lib, default, dtypes, extra) == OK
    for name, value in (("MS_GROUPNORM_TWIN_CORES", "3"), ("MS_GROUPNORM_TWIN_POLICY", "3"),
                        ("MS_GROUPNORM_TWIN_UB", "65536")):
        monkeypatch.setenv(name, value)
        other = forward_buffers(x, gamma, beta, G, "float32", "float32")
        assert call_forward(twin_lib, other, dtypes, extra) == OK, name
        for a, b in zip(default[3:], other[3:]):
            assert np.array_equal(a, b), name
        monkeypatch.delenv(name)
    monkeypatch.setenv("MS_GROUPNORM_TWIN_UB", "1024")  # below any real UB: the tiling refuses
    refused = forward_buffers(x, gamma, beta, G, "float32", "float32")
    assert call_forward(twin_lib, refused, dtypes, extra) == BAD_SHAPE
    assert np.all(refused[3] == 7)


@pytest.mark.exhaustive
def test_a_kernel_fault_is_status_7(tmp_path, rng, make_extra, monkeypatch, capfd):
    """A copy of the sources whose kernel asks for 1 MiB more UB than the tiling planned: the
    twin stops it, and the shim returns kKernelFault (7) with the fault on stderr."""
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    root = Path(twin.ascendc_dir())
    copy = tmp_path / "kernels"
    shutil.copytree(root, copy / "ascendc")
    shutil.copytree(root.parent / "cpu", copy / "cpu")
    kernel = copy / "ascendc" / "op_kernel" / "group_norm_silu_ms.h"
    source = kernel.read_text()
    line = "pipe_->InitBuffer(statBuf_, 2 * t_->statBatch * sizeof(float));"
    assert line in source
    kernel.write_text(source.replace(line, "pipe_->InitBuffer(statBuf_, 2 * t_->statBatch * sizeof(float) + 1048576);"))
    monkeypatch.setenv(twin.ASCENDC_DIR_ENV, str(copy / "ascendc"))
    monkeypatch.setenv(twin.TWIN_CACHE_ENV, str(tmp_path / "cache"))
    lib = ctypes.CDLL(twin.library_path.__wrapped__("forward"))
    x, _, gamma, beta, _, _ = make_inputs(rng, (2, 6, 7), 3, ms.float32, ms.float32)
    buffers = forward_buffers(x, gamma, beta, 3, "float32", "float32")
    capfd.readouterr()
    assert call_forward(lib, buffers, ["float32"] * 6, make_extra(group=3, eps=1e-5, swish_scale=1.0)) == KERNEL_FAULT
    assert "kernel fault" in capfd.readouterr().err


# ---------------------------------------------------------------- through MindSpore
def test_the_twin_backend_runs_the_twin_libraries(twin_backend):
    assert routing.fused_backend() == "ascendc_twin"
    op = routing.silu_forward_op(3, 1e-5)
    assert type(op) is ms.ops.Custom  # no PyNative fast path: the aot op in both modes
    assert op.func == twin.forward_aot_func("GroupNormSilu")
    assert routing.silu_backward_op(3).func == twin.twin_aot_func("GroupNormSiluGrad")


FORWARD_CASES = [("float32", "float32", (2, 6, 5, 3), 3, 1.0), ("float16", "float16", (2, 8, 9), 4, 1.0),
                 ("bfloat16", "bfloat16", (3, 6, 4), 2, 1.0), ("float16", "float32", (2, 6, 7), 3, 1.7),
                 ("bfloat16", "float32", (4, 12), 3, 1.0), ("float32", "float32", (2, 4, 3, 2), 1, 0.6)]


# The default tier: every case once, the modes alternating.
@pytest.mark.default_sample(shape=[c[2] for c in FORWARD_CASES], mode=["graph", "pynative"])
@pytest.mark.parametrize("data,stat,shape,G,swish", FORWARD_CASES,
                         ids=[f"{c[0]}-{c[1]}-scale{c[4]}" for c in FORWARD_CASES])
def test_forward_against_the_reference_and_the_cpu_fused_op(mode, rng, monkeypatch, twin_backend, data, stat, shape,
                                                            G, swish):
    data_dtype, stat_dtype = MS_DTYPES[data], MS_DTYPES[stat]
    x, _, gamma, beta, _, _ = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    args = (tensor(x, data_dtype), tensor(gamma, stat_dtype), tensor(beta, stat_dtype))
    z, mean, rstd = Forward(*sizes(shape), G, 1e-5, swish)(*args)
    assert (z.dtype, mean.dtype, rstd.dtype, z.shape, mean.shape) == (data_dtype, stat_dtype, stat_dtype, shape,
                                                                       (shape[0], G))
    want = reference.silu_forward(x, gamma, beta, G, 1e-5, swish)
    out_dtype = data_dtype if stat_dtype == ms.float32 else stat_dtype
    for got, ref, dtype, name in zip((z, mean, rstd), want, (out_dtype, stat_dtype, stat_dtype), ("z", "mean", "rstd")):
        assert_close(got, ref, dtype, name)
    monkeypatch.setenv(routing.BACKEND_ENV, "cpu")
    cpu = Forward(*sizes(shape), G, 1e-5, swish)(*args)
    for got, ref, dtype, name in zip((z, mean, rstd), cpu, (out_dtype, stat_dtype, stat_dtype), ("z", "mean", "rstd")):
        assert_close(got, to_numpy(ref), dtype, f"{name} vs cpu")


def test_group_norm_silu_and_the_layer_forward(mode, rng, twin_backend):
    shape, G = (2, 6, 4, 3), 3
    x, _, gamma, beta, _, _ = make_inputs(rng, shape, G, ms.float16, ms.float32)
    want = reference.silu_forward(x, gamma, beta, G)[0]
    z = group_norm_silu(tensor(x, ms.float16), G, tensor(gamma, ms.float32), tensor(beta, ms.float32))
    assert z.dtype == ms.float16
    assert_close(z, want, ms.float16, "group_norm_silu")
    layer = GroupNormSiLU(G, 6, gamma_init=tensor(gamma, ms.float32), beta_init=tensor(beta, ms.float32))
    assert_close(layer(tensor(x, ms.float16)), want, ms.float16, "GroupNormSiLU")


class WeightedSum(nn.Cell):
    def __init__(self, net, weight):
        super().__init__()
        self.net = net
        self.weight = ms.Tensor(weight, ms.float32)

    def construct(self, x):
        return (self.net(x).astype(ms.float32) * self.weight).sum()


# The default tier: every dtype pair once, the modes alternating.
@pytest.mark.default_sample(data=["float32", "float16", "bfloat16", "float16"],
                            stat=["float32", "float32", "float32", "float16"], mode=["graph", "pynative"])
@pytest.mark.parametrize("data,stat", [("float32", "float32"), ("float16", "float32"), ("bfloat16", "float32"),
                                       ("float16", "float16")])
def test_training_step_through_the_twin(mode, rng, twin_backend, data, stat):
    data_dtype, stat_dtype = MS_DTYPES[data], MS_DTYPES[stat]
    shape, G, lr = (2, 6, 5, 3), 3, 0.1
    x, w, gamma, beta, _, _ = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    net = GroupNormSiLU(G, 6, gamma_init=tensor(gamma, stat_dtype), beta_init=tensor(beta, stat_dtype),
                        dtype=stat_dtype)
    loss_net = WeightedSum(net, w)
    grad_x = ms.grad(loss_net, grad_position=0)(tensor(x, data_dtype))
    nn.TrainOneStepCell(loss_net, nn.SGD(net.trainable_params(), learning_rate=lr))(tensor(x, data_dtype))
    _, mean, rstd = reference.silu_forward(x, gamma, beta, G)
    # the backward gets the statistics the forward saved, rounded to their dtype
    mean, rstd = to_numpy(tensor(mean, stat_dtype)), to_numpy(tensor(rstd, stat_dtype))
    dx, dgamma, dbeta = reference.silu_backward(w, x, mean, rstd, gamma, beta, G)
    assert grad_x.dtype == data_dtype
    assert_close(grad_x, dx, data_dtype if stat_dtype == ms.float32 else stat_dtype, "dx")
    for param, start, grad, name in ((net.gamma, gamma, dgamma, "gamma"), (net.beta, beta, dbeta, "beta")):
        assert_close(param.value(), start - lr * grad, stat_dtype, name)


@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_silu_gradients(mode, rng, twin_backend, affine):
    shape, G = (3, 8, 5, 3), 4
    x, w, gamma, beta, _, _ = make_inputs(rng, shape, G, ms.bfloat16, ms.float32)

    class Loss(nn.Cell):
        def construct(self, x, w, gamma, beta):
            z = group_norm_silu(x, G, gamma, beta) if affine else group_norm_silu(x, G)
            return (z.astype(ms.float32) * w).sum()

    args = (tensor(x, ms.bfloat16), tensor(w, ms.float32), tensor(gamma, ms.float32), tensor(beta, ms.float32))
    dx, dgamma, dbeta = ms.grad(Loss(), grad_position=(0, 2, 3))(*args)
    gamma_ref, beta_ref = (gamma, beta) if affine else (None, None)
    _, mean, rstd = reference.silu_forward(x, gamma_ref, beta_ref, G)
    mean, rstd = (to_numpy(tensor(a, ms.float32)) for a in (mean, rstd))
    want = reference.silu_backward(w, x, mean, rstd, gamma_ref, beta_ref, G)
    assert_close(dx, want[0], ms.bfloat16, "dx")
    if affine:
        assert_close(dgamma, want[1], ms.float32, "dgamma")
        assert_close(dbeta, want[2], ms.float32, "dbeta")
    else:
        assert not np.any(to_numpy(dgamma)) and not np.any(to_numpy(dbeta))

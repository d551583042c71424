"""The aot entry points of libms_groupnorm_cpu.so called directly through ctypes with
broken arguments: each must return a non-zero status (and touch nothing), and a correct
call through the same harness must compute the right values."""
import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ms_groupnorm import reference
from ms_groupnorm.backends import cpu_kernels

KERNELS = Path(__file__).resolve().parents[1] / "kernels" / "cpu"
OK, BAD_PARAMS, NULL_POINTER, BAD_RANK, BAD_DTYPE, BAD_SHAPE, BAD_ATTR = range(7)


@pytest.fixture(scope="module")
def fake_extra_lib(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("needs g++ to build the fake AotExtra")
    out = tmp_path_factory.mktemp("abi") / "libfake_aot_extra.so"
    subprocess.run(["g++", "-std=c++17", "-shared", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=0", f"-I{KERNELS}",
                    str(Path(__file__).parent / "abi" / "fake_aot_extra.cc"), "-o", str(out)], check=True)
    lib = ctypes.CDLL(str(out))
    lib.FakeExtraNew.restype = ctypes.c_void_p
    lib.FakeExtraSetInt.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64]
    lib.FakeExtraSetBool.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.FakeExtraSetFloat.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_float]
    lib.FakeExtraDelete.argtypes = [ctypes.c_void_p]
    return lib


@pytest.fixture
def make_extra(fake_extra_lib):
    made = []

    def make(**attrs):
        extra = fake_extra_lib.FakeExtraNew()
        made.append(extra)
        for name, value in attrs.items():
            if isinstance(value, bool):
                fake_extra_lib.FakeExtraSetBool(extra, name.encode(), int(value))
            elif isinstance(value, int):
                fake_extra_lib.FakeExtraSetInt(extra, name.encode(), value)
            else:
                fake_extra_lib.FakeExtraSetFloat(extra, name.encode(), value)
        return extra

    yield make
    for extra in made:
        fake_extra_lib.FakeExtraDelete(extra)


def aot_call(function, tensors, dtypes, extra, nparam=None, null=(), lib=None):
    """Call an aot entry point with numpy ``tensors``; ``null`` names argument arrays to pass as NULL;
    ``lib``: another library with the same ABI (the AscendC twin's shims), default the CPU kernels'."""
    lib = cpu_kernels.cdll() if lib is None else lib
    count = len(tensors)
    params = (ctypes.c_void_p * count)(*[None if t is None else t.ctypes.data for t in tensors])
    ndims = (ctypes.c_int * count)(*[0 if t is None else t.ndim for t in tensors])
    shape_arrays = [np.array([0] if t is None else t.shape, np.int64) for t in tensors]
    shapes = (ctypes.POINTER(ctypes.c_int64) * count)(
        *[s.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)) for s in shape_arrays])
    dtype_strings = (ctypes.c_char_p * count)(*[None if d is None else d.encode() for d in dtypes])
    entry = getattr(lib, function)
    entry.restype = ctypes.c_int
    entry.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_void_p, ctypes.c_void_p]
    args = {"params": params, "ndims": ndims, "shapes": shapes, "dtypes": dtype_strings}
    for name in null:
        args[name] = None
    return entry(count if nparam is None else nparam, args["params"], args["ndims"], args["shapes"],
                 args["dtypes"], None, extra)


def backward_tensors(rng, shape=(2, 6, 5), G=3):
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    gamma = rng.standard_normal(shape[1]).astype(np.float32)
    _, mean, rstd = reference.forward(x, gamma, None, G)
    mean, rstd = mean.astype(np.float32), rstd.astype(np.float32)
    outputs = [np.full(shape, 7.0, np.float32), np.full(shape[1], 7.0, np.float32),
               np.full(shape[1], 7.0, np.float32)]
    return [dy, x, mean, rstd, gamma] + outputs


F32x8 = ["float32"] * 8


def test_valid_backward_call_computes_the_reference(rng, make_extra):
    tensors = backward_tensors(rng)
    assert aot_call("GroupNormGrad", tensors, F32x8, make_extra(group=3)) == OK
    want = reference.backward(*tensors[:5], 3)
    for got, ref in zip(tensors[5:], want):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


BACKWARD_BREAKAGES = [  # (description, change, expected status)
    ("nparam 7", dict(nparam=7), BAD_PARAMS),
    ("nparam 9", dict(nparam=9), BAD_PARAMS),
    ("params NULL", dict(null=("params",)), BAD_PARAMS),
    ("ndims NULL", dict(null=("ndims",)), BAD_PARAMS),
    ("shapes NULL", dict(null=("shapes",)), BAD_PARAMS),
    ("dtypes NULL", dict(null=("dtypes",)), BAD_PARAMS),
    ("dtype string NULL", dict(dtypes={1: None}), BAD_PARAMS),
    ("float64 data, float32 stats", dict(dtypes={0: "float64", 1: "float64", 5: "float64"}), BAD_DTYPE),
    ("float32 data, float64 stats", dict(dtypes={2: "float64", 3: "float64", 4: "float64", 6: "float64",
                                                 7: "float64"}), BAD_DTYPE),
    ("int8", dict(dtypes={1: "int8"}), BAD_DTYPE),
    ("unknown string", dict(dtypes={2: "float33"}), BAD_DTYPE),
    ("empty string", dict(dtypes={0: ""}), BAD_DTYPE),
    ("fp16 stats with fp32 data", dict(dtypes={2: "float16", 3: "float16", 4: "float16", 6: "float16",
                                               7: "float16"}), BAD_DTYPE),
    ("no group attr", dict(attrs={}), BAD_ATTR),
    ("group 0", dict(attrs={"group": 0}), BAD_SHAPE),
    ("group -3", dict(attrs={"group": -3}), BAD_SHAPE),
    ("C % group", dict(attrs={"group": 4}), BAD_SHAPE),
    ("x rank 1", dict(tensors={1: np.zeros(60, np.float32)}), BAD_RANK),
    ("x rank 9", dict(tensors={1: np.zeros((2, 6, 5, 1, 1, 1, 1, 1, 1), np.float32)}), BAD_PARAMS),
    ("dy numel", dict(tensors={0: np.zeros((2, 6, 4), np.float32)}), BAD_SHAPE),
    ("mean numel", dict(tensors={2: np.zeros((2, 2), np.float32)}), BAD_SHAPE),
    ("rstd numel", dict(tensors={3: np.zeros((3, 3), np.float32)}), BAD_SHAPE),
    ("gamma numel", dict(tensors={4: np.zeros(5, np.float32)}), BAD_SHAPE),
    ("dx numel", dict(tensors={5: np.zeros((2, 6, 4), np.float32)}), BAD_SHAPE),
    ("dgamma numel", dict(tensors={6: np.zeros(4, np.float32)}), BAD_SHAPE),
    ("dbeta numel", dict(tensors={7: np.zeros(7, np.float32)}), BAD_SHAPE),
    ("x data NULL", dict(tensors={1: None}), BAD_RANK),
    ("x pointer NULL, shape kept", dict(null_data=1), NULL_POINTER),
    ("dx pointer NULL", dict(null_data=5), NULL_POINTER),
    ("negative dim", dict(shape_override=(1, (2, 6, -5))), BAD_RANK),
]


@pytest.mark.parametrize("change,status", [b[1:] for b in BACKWARD_BREAKAGES], ids=[b[0] for b in BACKWARD_BREAKAGES])
def test_broken_backward_calls_return_errors_and_touch_nothing(rng, make_extra, change, status):
    tensors = backward_tensors(rng)
    outputs = tensors[5:]
    dtypes = list(F32x8)
    for index, value in change.get("tensors", {}).items():
        tensors[index] = value
    for index, value in change.get("dtypes", {}).items():
        dtypes[index] = value
    extra = make_extra(**change.get("attrs", {"group": 3}))
    if "null_data" in change or "shape_override" in change:
        status_got = call_with_pointer_tricks(tensors, dtypes, extra, change)
    else:
        status_got = aot_call("GroupNormGrad", tensors, dtypes, extra, nparam=change.get("nparam"),
                              null=change.get("null", ()))
    assert status_got == status
    for out in outputs:  # the output buffers keep their sentinel value: nothing was written
        assert np.all(out == 7.0)


def call_with_pointer_tricks(tensors, dtypes, extra, change):
    """A NULL data pointer with a real shape, or a shape with a negative dim."""
    lib = cpu_kernels.cdll()
    count = len(tensors)
    pointers = [t.ctypes.data for t in tensors]
    shapes_np = [np.array(t.shape, np.int64) for t in tensors]
    if "null_data" in change:
        pointers[change["null_data"]] = None
    if "shape_override" in change:
        index, shape = change["shape_override"]
        shapes_np[index] = np.array(shape, np.int64)
    params = (ctypes.c_void_p * count)(*pointers)
    ndims = (ctypes.c_int * count)(*[len(s) for s in shapes_np])
    shapes = (ctypes.POINTER(ctypes.c_int64) * count)(*[s.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
                                                        for s in shapes_np])
    dtype_strings = (ctypes.c_char_p * count)(*[d.encode() for d in dtypes])
    return lib.GroupNormGrad(count, params, ndims, shapes, dtype_strings, None, ctypes.c_void_p(extra))


def test_masked_outputs_may_be_null(rng, make_extra):
    tensors = backward_tensors(rng)
    tensors[6] = tensors[7] = None  # dgamma, dbeta not requested: no buffers at all
    extra = make_extra(group=3, dgamma_is_require=False, dbeta_is_require=False)
    dtypes = list(F32x8)
    assert aot_call("GroupNormGrad", tensors, dtypes, extra) == OK
    np.testing.assert_allclose(tensors[5], reference.backward(*tensors[:5], 3)[0], rtol=1e-5, atol=1e-5)


def forward_tensors(rng, shape=(2, 6, 5), G=3):
    x = rng.standard_normal(shape).astype(np.float32)
    gamma = rng.standard_normal(shape[1]).astype(np.float32)
    beta = rng.standard_normal(shape[1]).astype(np.float32)
    return [x, gamma, beta, np.zeros(shape, np.float32), np.zeros((2, G), np.float32), np.zeros((2, G), np.float32)]


def test_valid_forward_call_computes_the_reference(rng, make_extra):
    tensors = forward_tensors(rng)
    assert aot_call("GroupNorm", tensors, ["float32"] * 6, make_extra(group=3, eps=1e-5)) == OK
    for got, ref in zip(tensors[3:], reference.forward(*tensors[:3], 3, 1e-5)):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


FORWARD_BREAKAGES = [
    ("nparam 5", dict(nparam=5), BAD_PARAMS),
    ("no eps", dict(attrs={"group": 3}), BAD_ATTR),
    ("no group", dict(attrs={"eps": 1e-5}), BAD_ATTR),
    ("bool dtype", dict(dtypes={0: "bool"}), BAD_DTYPE),
    ("y dtype differs", dict(dtypes={3: "float16"}), BAD_DTYPE),
    ("mean numel", dict(tensors={4: np.zeros((2, 2), np.float32)}), BAD_SHAPE),
    ("y numel", dict(tensors={3: np.zeros((2, 6, 4), np.float32)}), BAD_SHAPE),
    ("beta numel", dict(tensors={2: np.zeros(5, np.float32)}), BAD_SHAPE),
]


@pytest.mark.parametrize("change,status", [b[1:] for b in FORWARD_BREAKAGES], ids=[b[0] for b in FORWARD_BREAKAGES])
def test_broken_forward_calls_return_errors(rng, make_extra, change, status):
    tensors = forward_tensors(rng)
    dtypes = ["float32"] * 6
    for index, value in change.get("tensors", {}).items():
        tensors[index] = value
    for index, value in change.get("dtypes", {}).items():
        dtypes[index] = value
    extra = make_extra(**change.get("attrs", {"group": 3, "eps": 1e-5}))
    assert aot_call("GroupNorm", tensors, dtypes, extra, nparam=change.get("nparam")) == status
    assert not tensors[3].any()


def test_negative_eps_is_computed_as_mindspore_does(rng, make_extra):
    """mindspore.ops.group_norm takes any eps: rstd = 1/sqrt(var + eps), NaN where that is
    negative. The kernel does the same (it used to refuse eps < 0 with a status code)."""
    tensors = forward_tensors(rng)
    var = tensors[0].astype(np.float64).reshape(2, 3, -1).var(axis=2)
    eps = -float(np.median(var))  # some groups below, some above
    assert aot_call("GroupNorm", tensors, ["float32"] * 6, make_extra(group=3, eps=eps)) == OK
    rstd = tensors[5]
    below = var + np.float32(eps) < 0
    assert below.any() and (~below).any()
    assert np.isnan(rstd[below]).all()
    np.testing.assert_allclose(rstd[~below], 1 / np.sqrt(var[~below] + np.float32(eps)), rtol=1e-4)


PLAIN_API_BREAKAGES = [
    ("group 0", dict(group=0), BAD_SHAPE),
    ("negative N", dict(N=-1), BAD_SHAPE),
    ("size overflow", dict(N=2 ** 40, HxW=2 ** 40), BAD_SHAPE),
    ("unknown dtype", dict(data_dtype=b"float8"), BAD_DTYPE),
    ("null x", dict(null="x"), NULL_POINTER),
    ("null dgamma requested", dict(null="dgamma"), NULL_POINTER),
]


@pytest.mark.parametrize("change,status", [b[1:] for b in PLAIN_API_BREAKAGES],
                         ids=[b[0] for b in PLAIN_API_BREAKAGES])
def test_broken_plain_api_calls_return_errors(rng, change, status):
    dy, x, mean, rstd, gamma, dx, dgamma, dbeta = backward_tensors(rng)
    pointers = dict(dy=dy, x=x, mean=mean, rstd=rstd, gamma=gamma, dx=dx, dgamma=dgamma, dbeta=dbeta)
    if "null" in change:
        pointers[change["null"]] = None
    sizes = dict(N=2, C=6, HxW=5, group=3)
    sizes.update({k: v for k, v in change.items() if k in sizes})
    result = cpu_kernels.cdll().MsGroupNormBackward(
        *[None if a is None else a.ctypes.data for a in pointers.values()], sizes["N"], sizes["C"], sizes["HxW"],
        sizes["group"], change.get("data_dtype", b"float32"), b"float32", 1, 1, 1)
    assert result == status
    assert np.all(dx == 7.0)


# ---- run-time num_groups / eps (GroupNormRuntimeGroup, GroupNormGradRuntimeGroup) ----
# group and eps arrive as one-element tensors; mean/rstd are (N, C) buffers holding the
# N*group statistics first and zeros after (what a graph variable num_groups needs).
BAD_RUNTIME_SCALAR = 8


def runtime_forward_tensors(rng, shape=(2, 6, 5), G=3, eps=1e-5):
    x, gamma, beta = forward_tensors(rng, shape, G)[:3]
    N, C = shape[:2]
    return [x, gamma, beta, np.array([G], np.int64), np.array([eps], np.float32),
            np.full(shape, 7.0, np.float32), np.full((N, C), 7.0, np.float32), np.full((N, C), 7.0, np.float32)]


RUNTIME_FORWARD_DTYPES = ["float32"] * 3 + ["int64", "float32"] + ["float32"] * 3


def test_runtime_group_forward_matches_the_attribute_op_bitwise(rng, make_extra):
    tensors = runtime_forward_tensors(rng)
    assert aot_call("GroupNormRuntimeGroup", tensors, RUNTIME_FORWARD_DTYPES, None) == OK
    static = forward_tensors(rng)
    static[:3] = tensors[:3]
    assert aot_call("GroupNorm", static, ["float32"] * 6, make_extra(group=3, eps=1e-5)) == OK
    y, mean, rstd = tensors[5:]
    assert np.array_equal(y, static[3])
    for padded, exact in ((mean, static[4]), (rstd, static[5])):  # (N, C) buffer: N*G statistics, then zeros
        flat = padded.reshape(-1)
        assert np.array_equal(flat[:6], exact.reshape(-1)) and not flat[6:].any()


RUNTIME_FORWARD_BREAKAGES = [
    ("nparam 6", dict(nparam=6), BAD_PARAMS),
    ("group 0", dict(tensors={3: np.array([0], np.int64)}), BAD_RUNTIME_SCALAR),
    ("group -3", dict(tensors={3: np.array([-3], np.int64)}), BAD_RUNTIME_SCALAR),
    ("C % group", dict(tensors={3: np.array([4], np.int64)}), BAD_RUNTIME_SCALAR),
    ("group > C", dict(tensors={3: np.array([12], np.int64)}), BAD_RUNTIME_SCALAR),
    ("group int32", dict(tensors={3: np.array([3], np.int32)}, dtypes={3: "int32"}), BAD_RUNTIME_SCALAR),
    ("group two elements", dict(tensors={3: np.array([3, 3], np.int64)}), BAD_RUNTIME_SCALAR),
    ("group no data", dict(tensors={3: None}), BAD_RUNTIME_SCALAR),
    ("eps float64", dict(tensors={4: np.array([1e-5])}, dtypes={4: "float64"}), BAD_RUNTIME_SCALAR),
    ("mean (N, group)", dict(tensors={6: np.full((2, 3), 7.0, np.float32)}), BAD_SHAPE),
    ("rstd numel", dict(tensors={7: np.full((2, 5), 7.0, np.float32)}), BAD_SHAPE),
    ("y dtype", dict(dtypes={5: "float16"}), BAD_DTYPE),
]


@pytest.mark.parametrize("change,status", [b[1:] for b in RUNTIME_FORWARD_BREAKAGES],
                         ids=[b[0] for b in RUNTIME_FORWARD_BREAKAGES])
def test_broken_runtime_group_forward_calls_return_errors_and_touch_nothing(rng, change, status):
    tensors = runtime_forward_tensors(rng)
    dtypes = list(RUNTIME_FORWARD_DTYPES)
    for index, value in change.get("tensors", {}).items():
        tensors[index] = value
    for index, value in change.get("dtypes", {}).items():
        dtypes[index] = value
    assert aot_call("GroupNormRuntimeGroup", tensors, dtypes, None, nparam=change.get("nparam")) == status
    for out in tensors[5:]:
        assert np.all(out == 7.0)


def runtime_backward_tensors(rng, shape=(2, 6, 5), G=3):
    dy, x, mean, rstd, gamma, dx, dgamma, dbeta = backward_tensors(rng, shape, G)
    N, C = shape[:2]
    pad = np.zeros(N * C - N * G, np.float32)
    mean_nc = np.concatenate([mean.reshape(-1), pad]).reshape(N, C)
    rstd_nc = np.concatenate([rstd.reshape(-1), pad]).reshape(N, C)
    return [dy, x, mean_nc, rstd_nc, gamma, np.array([G], np.int64), dx, dgamma, dbeta]


RUNTIME_BACKWARD_DTYPES = ["float32"] * 5 + ["int64"] + ["float32"] * 3


def test_runtime_group_backward_matches_the_attribute_op_bitwise(rng, make_extra):
    tensors = runtime_backward_tensors(rng)
    assert aot_call("GroupNormGradRuntimeGroup", tensors, RUNTIME_BACKWARD_DTYPES, make_extra()) == OK
    static = backward_tensors(rng)
    static[:2], static[4] = tensors[:2], tensors[4]
    static[2], static[3] = tensors[2].reshape(-1)[:6].reshape(2, 3), tensors[3].reshape(-1)[:6].reshape(2, 3)
    assert aot_call("GroupNormGrad", static, F32x8, make_extra(group=3)) == OK
    for got, want in zip(tensors[6:], static[5:]):
        assert np.array_equal(got, want)


RUNTIME_BACKWARD_BREAKAGES = [
    ("nparam 8", dict(nparam=8), BAD_PARAMS),
    ("group 0", dict(tensors={5: np.array([0], np.int64)}), BAD_RUNTIME_SCALAR),
    ("C % group", dict(tensors={5: np.array([4], np.int64)}), BAD_RUNTIME_SCALAR),
    ("group float32", dict(tensors={5: np.array([3.0], np.float32)}, dtypes={5: "float32"}), BAD_RUNTIME_SCALAR),
    ("mean (N, group)", dict(tensors={2: np.zeros((2, 3), np.float32)}), BAD_SHAPE),
    ("dgamma numel", dict(tensors={7: np.full(4, 7.0, np.float32)}), BAD_SHAPE),
]


@pytest.mark.parametrize("change,status", [b[1:] for b in RUNTIME_BACKWARD_BREAKAGES],
                         ids=[b[0] for b in RUNTIME_BACKWARD_BREAKAGES])
def test_broken_runtime_group_backward_calls_return_errors_and_touch_nothing(rng, make_extra, change, status):
    tensors = runtime_backward_tensors(rng)
    dtypes = list(RUNTIME_BACKWARD_DTYPES)
    for index, value in change.get("tensors", {}).items():
        tensors[index] = value
    for index, value in change.get("dtypes", {}).items():
        dtypes[index] = value
    assert aot_call("GroupNormGradRuntimeGroup", tensors, dtypes, make_extra(), nparam=change.get("nparam")) == status
    for out in tensors[6:]:
        assert np.all(out == 7.0)

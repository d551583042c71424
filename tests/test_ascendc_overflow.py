"""What the AscendC kernel's outputs become with special values (NaN, inf) in its inputs and
with results beyond the output dtype's range, in each float overflow mode of the device:
"inf_nan" (the Atlas A2 default, CANN aclrtFloatOverflowMode; MindSpore 2.10 keeps it on 910B
unless MS_ASCEND_CHECK_OVERFLOW_MODE=SATURATION_MODE: mindspore/amp.py `_all_finite`,
nn/wrap/loss_scale.py) and "saturation" (inf -> +-max, NaN -> 0 for every vector result and
narrowing cast). The twin applies the mode (kernels/ascendc/twin/kernel_operator.h, Saturating)."""
import numpy as np
import pytest

from ms_groupnorm import reference
import twin
from test_ascendc_twin import CASES, DTYPES, as_float64, check_against_reference, make_inputs

MODES_OF_THE_KERNEL = ["resident_unaligned_hw", "channel_two_pass", "hw_chunks_unaligned_n3", "channel_split_n47",
                       "hw_one"]


def run(case, dtype_key, arrays, overflow):
    N, C, HxW, G, cores, mode, _ = CASES[case]
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    got = twin.twin_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"], G,
                                     data_dtype=data_dtype, stat_dtype=stat_dtype, core_num=cores, overflow=overflow)
    assert twin.MODE_NAMES[got[3]["mode"]] == mode
    return [as_float64(o, data_dtype if i == 0 else stat_dtype) for i, o in enumerate(got[:3])]


def poison(arrays, name, dtype, index, value):
    values = as_float64(arrays[name], dtype).copy()
    values[index] = value
    out = dict(arrays)
    if dtype == "bfloat16":
        bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
        out[name] = (bits >> 16).astype(np.uint16)  # exact for inf/NaN and for bf16 values
    else:
        out[name] = values.astype(arrays[name].dtype)
    return out


@pytest.mark.parametrize("dtype_key", ["fp32", "bf16"])
@pytest.mark.parametrize("case", MODES_OF_THE_KERNEL)
def test_nan_in_dy(case, dtype_key):
    N, C, HxW, G, _, _, _ = CASES[case]
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs((N, C, HxW), G, data_dtype, stat_dtype, 11)
    n, c = N - 1, C - 1  # the last channel of the last group of the last sample
    bad = poison(arrays, "dy", data_dtype, (n, c, 0), np.nan)
    D = C // G
    group = slice(c - c % D, c - c % D + D)

    dx, dgamma, dbeta = run(case, dtype_key, bad, "inf_nan")
    # IEEE: the NaN reaches the whole (n, g) group's dx (through c1, c2) and channel c's sums
    assert np.isnan(dx[n, group]).all()
    assert np.isnan(dgamma[c]) and np.isnan(dbeta[c])
    others = np.ones(C, bool)
    others[c] = False
    assert np.isfinite(dgamma[others]).all() and np.isfinite(dbeta[others]).all()
    clean = np.ones(dx.shape, bool)
    clean[n, group] = False
    assert np.isfinite(dx[clean]).all()

    # saturation: the first vector instruction that touches the NaN makes it 0, so the outputs
    # are those of dy with a 0 there
    zeroed = dict(exact)
    zeroed["dy"] = exact["dy"].copy()
    zeroed["dy"][n, c, 0] = 0.0
    want = reference.backward(zeroed["dy"], zeroed["x"], zeroed["mean"], zeroed["rstd"], zeroed["gamma"], G)
    got = run(case, dtype_key, bad, "saturation")
    assert all(np.isfinite(o).all() for o in got)
    check_against_reference([ascendc_twin_storage(o, t) for o, t in zip(got, (data_dtype, stat_dtype, stat_dtype))],
                            want, dtype_key, (True, True, True))


def ascendc_twin_storage(values, dtype):
    """float64 values back to the storage the check expects (bf16 as bits)."""
    if dtype == "bfloat16":
        return (np.ascontiguousarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return values.astype({"float32": np.float32, "float16": np.float16}[dtype])


@pytest.mark.parametrize("case", ["resident_unaligned_hw", "hw_one"])
def test_inf_in_x(case):
    N, C, HxW, G, _, _, _ = CASES[case]
    arrays, _ = make_inputs((N, C, HxW), G, "float16", "float16", 13)
    bad = poison(arrays, "x", "float16", (0, 0, 0), np.inf)
    dx, dgamma, dbeta = run(case, "fp16", bad, "inf_nan")
    assert not np.isfinite(dx[0, :C // G]).all() and not np.isfinite(dgamma[0])  # inf - inf = NaN, inf * 0 ...
    assert np.isfinite(dbeta).all()  # dbeta does not see x
    got = run(case, "fp16", bad, "saturation")
    assert all(np.isfinite(o).all() for o in got)


@pytest.mark.parametrize("case", ["resident_unaligned_hw", "channel_two_pass", "hw_one"])
def test_dbeta_beyond_the_fp16_range(case):
    # dy = 60000 everywhere: dbeta_c = N * HxW * 60000 > 65504, computed in fp32 and narrowed
    N, C, HxW, G, _, _, _ = CASES[case]
    arrays, _ = make_inputs((N, C, HxW), G, "float16", "float16", 17)
    arrays["dy"] = np.full_like(arrays["dy"], 60000.0)
    _, _, dbeta = run(case, "fp16", arrays, "inf_nan")
    assert (dbeta == np.inf).all()
    _, _, dbeta = run(case, "fp16", arrays, "saturation")
    assert (dbeta == 65504.0).all()

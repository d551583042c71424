"""The launches that judge a mutant of the AscendC kernels (test_ascendc_sync_mutations.py): for
each kernel a small set of launches, one per tiling mode and work split, on few enough cores
that a core runs several tasks (buffer reuse between tasks needs its own synchronisation), each
under immediate execution, deferred execution and two more block orders, checked against the
float64 reference and for bit-identical results across those schedules.

``outcome(library, kernels)`` runs them on the twin library at `library` (the mutant's, or the
real one) and says "ok" or how a launch was caught."""
import numpy as np

from ms_groupnorm import reference
import twin
import test_ascendc_forward_twin as forward_cases
from test_ascendc_forward_slices_per_block import spread_over_blocks
from test_ascendc_twin import CASES as TWIN_CASES
from test_ascendc_twin import DTYPES, as_float64, check_against_reference, make_inputs, storage

# test_ascendc_twin's cases, and one whose stage 2 streams more workspace loads through its two
# buffers than it has (4000 samples: two loads of rows for each of db and dg), so that the
# buffers are reused and a missing FreeTensor shows. The same for ownStats (N == 1, channel
# split): a core's every sums task takes one of the two dgamma/dbeta staging buffers, so only a
# core with three or more tasks (here 3 cores: 5-6 one-channel tasks, 3 of two channels with
# 16-bit data) runs out of them when one is not freed (the device then spins in AllocBuffer,
# asc-devkit impl/basic_api/kernel_tquebind_impl.h).
CASES = {**TWIN_CASES, "stage2_reuses_its_buffers": (4000, 2, 4, 1, 4, "group_resident", 0),
         "own_stats_reuses_its_staging": (1, 16, 3000, 2, 3, "channel_two_pass", 1),
         "hw_one_huge_mean": TWIN_CASES["hw_one"],
         # mode 0's table of every group's gamma (+ beta) (tiling affineAhead 2), dequeued once and
         # kept: groups of more than 8 channels (smaller ones take groupRows), and for the fused
         # kernel many tasks a core (dx only, so not groupAcrossN)
         "affine_table": (16, 32, 100, 2, 4, "group_resident", 0),
         "affine_table_fused": (2, 576, 9, 64, 2, "group_resident", 0)}
# Cases whose first group's x and mean are scaled by 2^110 (its rstd by 2^-110, exact): a mean of
# at least 2^102 sends the batch holding it to mode 3's scalar path (CentringScale).
HUGE_MEAN_CASES = {"hw_one_huge_mean"}
HUGE_MEAN_FACTOR = 2.0 ** 110

ALL, STATS_ONLY, DX_ONLY = (True, True, True), (False, True, True), (True, False, False)
# GroupNormGradMs: (case of test_ascendc_twin.CASES, dtype key, cores, output mask). Without dx
# (mask 011) nothing else orders the workspace copies before the next task's sums.
GRAD_CHECKS = [("resident_unaligned_hw", "fp32", 2, ALL), ("resident_aligned_hw", "bf16_fp32", 2, ALL),
               ("resident_unaligned_hw", "fp32", 2, STATS_ONLY), ("resident_workspace_n8", "fp32", 4, ALL),
               ("channel_two_pass", "fp32", 2, ALL), ("channel_rows", "bf16_fp32", 2, ALL),
               ("channel_split_short_rows", "fp16_fp32", 2, ALL),
               ("hw_chunks_unaligned_n3", "bf16_fp32", 2, ALL), ("hw_chunks_unaligned_n3", "fp32", 2, STATS_ONLY),
               ("across_n_small", "fp32", 4, ALL), ("channel_split_n47", "fp16_fp32", 48, ALL),
               ("channel_split_rows", "fp32", 16, ALL), ("channel_split_rows", "bf16_fp32", 16, STATS_ONLY),
               ("hw_chunks_channel_split", "fp16_fp32", 32, ALL),  # 48 channel tasks on 32 blocks
               ("hw_slices_c_per_g_1", "fp32", 3, ALL), ("hw_slices_c_per_g_1", "bf16_fp32", 3, STATS_ONLY),
               ("hw_one", "fp32", 4, ALL), ("hw_one", "fp32", 4, STATS_ONLY), ("hw_one_c_per_g_1", "bf16", 2, ALL),
               ("hw_one_groups_workspace", "fp32", 4, ALL), ("hw_one_groups_workspace", "fp32", 4, STATS_ONLY),
               ("hw_one_long_rows", "fp32", 4, ALL),  # rows of D = 100: a burst a row, no Gather
               ("hw_one_workspace_small_k", "fp32", 4, ALL),
               # a task a block: stage 2 lays its buffers over the last dx cast's (the PIPE_ALL before it)
               ("channel_split_n47", "fp16_fp32", 94, ALL),
               ("hw_one_samples", "fp32", 4, ALL), ("hw_one_samples", "bf16_fp32", 4, STATS_ONLY),
               ("stage2_reuses_its_buffers", "fp32", 4, ALL), ("hw_one_huge_mean", "fp32", 4, ALL),
               ("group_rows", "fp32", 2, ALL), ("group_rows", "bf16_fp32", 2, DX_ONLY),
               ("group_rows_across_n", "fp32", 2, ALL), ("group_rows_d3_across_n", "bf16_fp32", 4, ALL),
               ("hw_one_columns", "fp32", 4, ALL), ("hw_one_columns", "fp32", 4, STATS_ONLY),
               ("hw_one_columns_small", "fp32", 4, ALL), ("hw_one_columns_small", "bf16", 4, ALL),
               ("hw_one_columns_d1_groups", "fp32", 4, ALL), ("hw_one_columns_tree", "fp32", 4, ALL),
               ("hw_one_one_core_columns", "fp32", 4, ALL), ("hw_one_one_core_rows", "bf16", 4, ALL),
               ("own_stats_reuses_its_staging", "fp32", 3, ALL),
               ("own_stats_reuses_its_staging", "bf16_fp32", 3, STATS_ONLY), ("affine_table", "fp32", 4, ALL)]
# GroupNormSiluGradMs (the same class with SILU = true): its own lines load gamma/beta every task.
SILU_GRAD_CHECKS = [("resident_unaligned_hw", "fp32", 2, ALL), ("resident_workspace_n8", "bf16_fp32", 4, STATS_ONLY),
                    ("channel_two_pass", "fp32", 2, ALL), ("channel_rows", "fp32", 2, ALL),
                    ("channel_split_short_rows", "fp32", 2, ALL), ("channel_split_n47", "fp16_fp32", 48, ALL),
                    ("channel_split_rows", "fp32", 16, ALL),
                    ("hw_chunks_unaligned_n3", "fp32", 2, STATS_ONLY), ("hw_slices_c_per_g_1", "fp32", 3, ALL),
                    ("hw_one", "fp32", 4, ALL), ("hw_one_c_per_g_1", "bf16", 2, ALL),
                    ("hw_one_groups_workspace", "fp32", 4, ALL), ("hw_one_samples", "fp32", 4, ALL),
                    ("hw_one_huge_mean", "fp32", 4, ALL), ("hw_one_columns", "fp32", 4, ALL),
                    ("hw_one_columns_small", "bf16", 4, ALL), ("hw_one_columns_tree", "bf16", 4, ALL),
                    ("hw_one_one_core_columns", "fp32", 4, ALL),
                    # mode 0's batches: every channel's gamma and beta read by the scalar unit also without dx
                    ("group_rows", "fp32", 2, ALL), ("group_rows", "bf16_fp32", 2, STATS_ONLY),
                    ("group_rows_across_n", "fp32", 2, ALL), ("group_rows_d3_across_n", "fp32", 4, ALL),
                    ("own_stats_reuses_its_staging", "fp32", 3, ALL), ("affine_table_fused", "fp32", 2, DX_ONLY)]
# GroupNormSiluMs: (case of test_ascendc_forward_twin.CASES, dtype key, activation, blocks to spread
# the host's tasks over, None: the host's plan). Several tasks per block in every mode; the split
# groups also with several slices per block (their UB entry is reused: MTE3 -> S).
FORWARD_CHECKS = [("resident_ng_above_cores", "fp32", "silu", None),  # 6 groups a block: the deep queue
                  ("resident_two_ahead", "fp16", "silu", None),  # two loads ahead, buffers reused
                  ("resident_deep_loads", "bf16", "silu", None),  # four loads in flight, slots reused
                  ("resident_hw1_g_equals_c", "bf16_fp32", "plain", None),
                  ("resident_stats_in_two_batches", "fp16", "swish_1.7", None),  # two stores of mean/rstd
                  ("chunked_ng_above_cores", "bf16", "silu", None),
                  ("chunked_hw1_vector_coef", "fp32", "silu", None),
                  ("chunked_split_pairs", "fp32", "silu", None),
                  ("chunked_split_pairs", "bf16_fp32", "silu", 3),
                  ("chunked_many_short_rows", "fp16", "silu", None),  # staged slices' rows in batches
                  ("ring_parts_of_rows", "bf16", "silu", None),  # slots reused within and across groups
                  ("ring_row_batches", "fp16_fp32", "silu", None),  # parts' rows in batches
                  ("ring_rows_rescaled_group", "fp32", "plain", None),  # a batch's rows rescaled one by one
                  ("staged_hw1_vector_coef", "bf16", "silu", None),
                  ("rows_batches_small_ub", "fp16_fp32", "silu", None),  # batches of groups: slots reused
                  ("rows_spread_by_gather", "bf16", "silu", None),  # rows of 15 spread and packed by Gather
                  ("rows_rescaled_group", "fp32", "plain", None),  # a batch rescaled (scalar factors)
                  ("channel_rows_batches", "fp32", "silu", None),  # one-channel groups in batches of rows
                  ("channel_rows_rescaled_group", "bf16_fp32", "plain", None)]  # a row of the rare path
SCHEDULES = [("concurrent", 0, "immediate"), ("concurrent", 0, "deferred"), ("forward", 0, "deferred"),
             ("reverse", 0, "deferred")]


def outcome(library, kernels):
    """'ok', or how the launches of `kernels` ("forward", "grad", "silu_grad") on `library` were caught."""
    forward = kernels == ["forward"]
    module = twin if forward else twin
    name = "forward_library_path" if forward else "twin_library_path"
    cdll = twin._forward_cdll if forward else twin._twin_cdll
    original = getattr(module, name)
    cdll.cache_clear()
    setattr(module, name, lambda: library)
    try:
        checks = {"forward": [(forward_outcome, c) for c in FORWARD_CHECKS],
                  "grad": [(backward_outcome, (*c, False)) for c in GRAD_CHECKS],
                  "silu_grad": [(backward_outcome, (*c, True)) for c in SILU_GRAD_CHECKS]}
        for kernel in kernels:
            for judge, check in checks[kernel]:
                verdict = judge(*check)
                if verdict != "ok":
                    return verdict
        return "ok"
    finally:
        setattr(module, name, original)
        cdll.cache_clear()


def same_bits(results):
    return all(r == results[0] for r in results[1:])


def scale_first_group(arrays, exact, elems, data_dtype, stat_dtype):
    """x and mean of sample 0's group 0 times HUGE_MEAN_FACTOR, rstd divided by it (powers of two:
    the group's xhat is unchanged)."""
    x = exact["x"].copy()
    x.reshape(x.shape[0], -1)[0, :elems] *= HUGE_MEAN_FACTOR
    mean, rstd = exact["mean"].copy(), exact["rstd"].copy()
    mean.reshape(-1)[0] *= HUGE_MEAN_FACTOR
    rstd.reshape(-1)[0] /= HUGE_MEAN_FACTOR
    for name, values, dtype in (("x", x, data_dtype), ("mean", mean, stat_dtype), ("rstd", rstd, stat_dtype)):
        arrays[name] = storage(values, dtype)
        exact[name] = as_float64(arrays[name], dtype)


def backward_outcome(case, dtype_key, cores, mask, silu):
    """GroupNormGradMs's launches of one case (GroupNormSiluGradMs's with `silu`) under SCHEDULES."""
    N, C, HxW, G, _, mode, split = CASES[case]
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs((N, C, HxW), G, data_dtype, stat_dtype, 7)
    if case in HUGE_MEAN_CASES:
        scale_first_group(arrays, exact, C // G * HxW, data_dtype, stat_dtype)
    which = "fused, " if silu else ""
    if silu:
        beta = storage(np.linspace(-1.5, 1.5, C), stat_dtype)
        want = reference.silu_backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"],
                                       as_float64(beta, stat_dtype), G, 1.7)
    else:
        want = reference.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"], G)
    results = []
    for policy, seed, execution in SCHEDULES:
        launch = dict(mask=mask, data_dtype=data_dtype, stat_dtype=stat_dtype, core_num=cores, policy=policy,
                      seed=seed, execution=execution)
        inputs = (arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"])
        try:
            got = (twin.twin_silu_backward(*inputs, beta, G, 1.7, **launch) if silu
                   else twin.twin_backward(*inputs, G, **launch))
        except twin.TwinFault as fault:
            return f"refused ({which}{case}): {str(fault)[:160]}"
        try:
            check_against_reference(got[:3], want, dtype_key, mask)
        except AssertionError as error:
            return f"wrong numbers ({which}{case}, {dtype_key}, mask {mask}, {policy}/{execution}): {error}"
        assert twin.MODE_NAMES[got[3]["mode"]] == mode and got[3]["splitByChannel"] == split
        results.append([b"" if o is None else o.tobytes() for o in got[:3]])
    return "ok" if same_bits(results) else f"results depend on the schedule ({which}{case}, {dtype_key})"


def forward_tiling_of(case, dtype_key, activation, blocks):
    """The tiling a FORWARD_CHECKS launch runs: the host's, spread over `blocks` blocks if given."""
    shape, G, cores, ub, mode = forward_cases.CASES[case]
    data_dtype, param_dtype, _ = forward_cases.DTYPES[dtype_key]
    activate, scale = forward_cases.ACTIVATIONS[activation]
    N, C = shape[:2]
    tiling = twin.forward_tiling(N, C, int(np.prod(shape[2:], dtype=np.int64)), G, data_dtype, param_dtype,
                                activate_silu=activate, swish_scale=scale, ub_bytes=ub, core_num=cores)
    assert twin.FORWARD_MODE_NAMES[tiling["mode"]] == mode
    return tiling if blocks is None else spread_over_blocks(tiling, blocks)


def forward_outcome(case, dtype_key, activation, blocks):
    shape, G, cores, ub, _ = forward_cases.CASES[case]
    data_dtype, param_dtype, tolerance = forward_cases.DTYPES[dtype_key]
    arrays, exact = forward_cases.case_inputs(case, data_dtype, param_dtype, 3)
    N = shape[0]
    tiling = forward_tiling_of(case, dtype_key, activation, blocks)
    want = forward_cases.expected(exact, G, activation)
    results = []
    for policy, seed, execution in SCHEDULES:
        y = np.full_like(arrays["x"], 0x7F)
        mean = np.full((N, G), 12345.0, np.float32)
        rstd = np.full((N, G), 12345.0, np.float32)
        try:
            twin.forward_launch([arrays["x"], arrays["gamma"], arrays["beta"], y, mean, rstd], tiling, ub, cores,
                               policy=policy, seed=seed, execution=execution)
        except twin.TwinFault as fault:
            return f"refused (forward): {str(fault)[:160]}"
        y_err, mean_err, rstd_err = forward_cases.errors((y, mean, rstd), want, data_dtype)
        if not (y_err <= tolerance and mean_err <= forward_cases.MEAN_TOL and rstd_err <= forward_cases.RSTD_TOL):
            return (f"wrong numbers (forward, {case}, {dtype_key}, {policy}/{execution}): y {y_err:.2e}, "
                    f"mean {mean_err:.2e}, rstd {rstd_err:.2e}")
        results.append([a.tobytes() for a in (y, mean, rstd)])
    return "ok" if same_bits(results) else f"results depend on the schedule (forward, {case}, {dtype_key})"

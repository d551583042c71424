"""The forward kernel with several slice tasks of split groups on one block.

The host tiling gives every block at most one slice of a split group (numTasks <= cores), but
the kernel takes any contiguous run of tasks per block (usedCores, tasksPerCore, tailCores),
and a block's second slice reuses the UB entry its first slice's statistics left through
(scalar writes over bytes an MTE3 store may still be reading: MTE3 -> S). No host plan makes
such a launch, so these take the host's plan and spread its tasks over fewer blocks: the bits
must be those of the host's plan, under immediate and deferred pipe execution."""
import numpy as np
import pytest

import twin
from test_ascendc_forward_twin import CASES, DTYPES, MEAN_TOL, RSTD_TOL, errors, expected, make_inputs

# (case of test_ascendc_forward_twin.CASES, dtype key): split groups (sliceCount > 1)
SPLIT_CASES = [("chunked_split_g1", "fp32"), ("chunked_split_pairs", "bf16_fp32")]


def spread_over_blocks(tiling, blocks):
    """The host's plan with its tasks spread over `blocks` blocks, consecutive tasks per block
    as the host splits them (the first numTasks % blocks blocks take one more)."""
    spread = dict(tiling)
    used = min(blocks, tiling["numTasks"])
    spread.update(usedCores=used, blockDim=used, tasksPerCore=tiling["numTasks"] // used,
                  tailCores=tiling["numTasks"] % used)
    return spread


def launch_spread(case, dtype_key, blocks, execution="immediate", policy="concurrent", seed=0):
    """(y, mean, rstd) of `case` with the host's tasks on `blocks` blocks (None: the host's
    plan unchanged), and the exact inputs."""
    shape, G, cores, ub, _ = CASES[case]
    data_dtype, param_dtype, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs(shape, data_dtype, param_dtype, 3)
    N, C = shape[:2]
    tiling = twin.forward_tiling(N, C, int(np.prod(shape[2:], dtype=np.int64)), G, data_dtype, param_dtype,
                                ub_bytes=ub, core_num=cores)
    assert tiling["sliceCount"] > 1  # a split group, or this launch tests nothing
    if blocks is not None:
        tiling = spread_over_blocks(tiling, blocks)
    y = np.full_like(arrays["x"], 0x7F)
    mean = np.full((N, G), 12345.0, np.float32)
    rstd = np.full((N, G), 12345.0, np.float32)
    twin.forward_launch([arrays["x"], arrays["gamma"], arrays["beta"], y, mean, rstd], tiling, ub, cores,
                       policy=policy, seed=seed, execution=execution)
    return (y, mean, rstd), exact


@pytest.mark.parametrize("case, dtype_key", SPLIT_CASES)
def test_several_slices_per_block_give_the_bits_of_one_slice_per_block(case, dtype_key):
    shape, G, *_ = CASES[case]
    want, exact = launch_spread(case, dtype_key, None)
    y_err, mean_err, rstd_err = errors(want, expected(exact, G, "silu"), DTYPES[dtype_key][0])
    assert y_err <= DTYPES[dtype_key][2] and mean_err <= MEAN_TOL and rstd_err <= RSTD_TOL
    for blocks in (1, 2, 3):
        for execution in ("immediate", "deferred"):
            got, _ = launch_spread(case, dtype_key, blocks, execution)
            for a, b in zip(got, want):
                assert a.tobytes() == b.tobytes(), (blocks, execution)


def test_spreading_keeps_every_task_and_the_host_split_rule():
    tiling = twin.forward_tiling(1, 21, 700, 1, ub_bytes=CASES["chunked_split_pairs"][3], core_num=16)
    spread = spread_over_blocks(tiling, 4)
    assert (spread["usedCores"], spread["tasksPerCore"], spread["tailCores"]) == (4, 2, 3)  # 11 tasks: 3 + 3 + 3 + 2
    assert spread["tasksPerCore"] * spread["usedCores"] + spread["tailCores"] == tiling["numTasks"]
    assert {k: v for k, v in spread.items() if k not in ("usedCores", "blockDim", "tasksPerCore", "tailCores")} == \
        {k: v for k, v in tiling.items() if k not in ("usedCores", "blockDim", "tasksPerCore", "tailCores")}

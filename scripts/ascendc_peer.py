"""``scripts/ascendc_cost.py --peer``: CANN's own kernel beside ours, in the same cost model.

Without --silu-grad the pair is CANN's GroupNormGrad and GroupNormGradMs; with --silu-grad it is CANN's
GroupNormSwishGrad (swish_scale 1.0, the SiLU) and GroupNormSiluGradMs. CANN's 910B kernel runs on the
twin with the tiling CANN's own code computes (tests/cann_peer.py: needs the OPS_NN, METADEF and
ASC_DEVKIT checkouts), under the cost constants of our launch, and its per-block counters go through
the same estimate as ours: the slowest block up to the last SyncAll, the SyncAll, the slowest block
after it, never under the busiest block's bytes at the per-core bandwidth. Both figures are the
model's, on no device. CANN's kernel runs the full shape (ours may run fewer samples, see
ascendc_cost.py). The estimate aligns CANN's blocks at its last SyncAll only, so block 0's InitOutput
before its first SyncAll is not charged to the others: it errs in CANN's favour.

Each CANN launch is also checked against float64 by CANN's ttk rule; ``correct`` counts those that pass.
CANN's 910B kernels take one type for every array, so mixed rows (fp16/fp32, bf16/fp32) show "n/a" and
stay out of the closing line. The GroupNormGrad peer runs fp32 only (its 16-bit rows are "n/a" too);
the GroupNormSwishGrad peer runs fp32, fp16 and bf16, its inputs rounded to the dtype and the float64
reference taken from the rounded values.
"""
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "kernels" / "ascendc" / "twin")]  # package, peer, harness
import cann_peer  # noqa: E402
from ms_groupnorm import reference  # noqa: E402
from twin import TwinFault  # noqa: E402

PEER_DTYPES = {False: {"fp32": "float32"},
               True: {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}}  # by --silu-grad
SWISH_SCALE = 1.0  # the SiLU: GroupNormSiluGradMs's table runs swish_scale 1.0
HEADER = " CANN est. µs (mode, cores) | ours / CANN |"


def unavailable(silu=False):
    """None when the peer can run, else the reason."""
    op = cann_peer.GROUP_NORM_SWISH_GRAD if silu else cann_peer.GROUP_NORM_GRAD
    paths = cann_peer.checkouts(op)
    return paths if isinstance(paths, str) else None


def estimate_ns(stats, constants):
    """The same estimate ascendc_cost.measure makes of our launch, of all blocks of a full launch."""
    gm_per_ns, syncall_ns = constants["gm_bytes_per_ns"], constants["syncall_ns"]
    phase1, after = [], []
    for s in stats:
        if s["time_at_syncall_ns"] >= 0:
            phase1.append(s["time_at_syncall_ns"])
            after.append(max(0.0, s["end_ns"] - s["time_at_syncall_ns"] - syncall_ns))
        else:
            phase1.append(s["end_ns"])
    est = max(phase1) + (syncall_ns + max(after) if after else 0.0)
    busiest = max(s["gm_read_bytes"] + s["gm_write_bytes"] for s in stats)
    return max(est, busiest / gm_per_ns)


def _inputs(N, C, HxW, G, dtype):
    """Seeded inputs and consistent statistics, as float32, and their float64 values after rounding to dtype."""
    rng = np.random.default_rng(0)
    arrays = {"x": rng.standard_normal((N, C, HxW)).astype(np.float32),
              "dy": rng.standard_normal((N, C, HxW)).astype(np.float32),
              "gamma": rng.standard_normal(C).astype(np.float32), "beta": rng.standard_normal(C).astype(np.float32)}
    xg = arrays["x"].reshape(N, G, -1).astype(np.float64)
    arrays["mean"] = xg.mean(-1).astype(np.float32)
    arrays["rstd"] = (1 / np.sqrt(xg.var(-1) + 1e-5)).astype(np.float32)
    exact = {k: cann_peer.from_storage(cann_peer.to_storage(v, dtype), dtype).astype(np.float64)
             for k, v in arrays.items()}
    return arrays, exact


def measure_cann(shape, dtype_key, constants, silu=False):
    """CANN's row for an anchor (N, C, H, W, G): est_us, mode, cores, correct; None for a dtype the peer
    does not run. ``constants``: our launch's cost model, which the peer's launch gets too. ``silu``:
    GroupNormSwishGrad (swish_scale 1.0) rather than GroupNormGrad."""
    dtype = PEER_DTYPES[silu].get(dtype_key)
    if dtype is None:
        return None
    op = cann_peer.GROUP_NORM_SWISH_GRAD if silu else cann_peer.GROUP_NORM_GRAD
    N, C, H, W, G = shape
    HxW = H * W
    cann_peer.cost_model(op, **constants)
    a, e = _inputs(N, C, HxW, G, dtype)
    deterministic = False  # GroupNormGrad: ignored (its key follows N); GroupNormSwishGrad: the default context
    extra = {"swish_scale": SWISH_SCALE} if silu else {}
    tiling = cann_peer.operator_tiling(op, N, C, HxW, G, dtype, deterministic, **extra)
    names = [name for name, _ in op.inputs]
    try:
        got = cann_peer.launch_operator(op, {k: a[k] for k in names}, tiling, dtype)
        fault = None
    except TwinFault as err:  # a CANN race the twin names (GroupNormGrad's MODE_5): estimate the program-order run
        fault = str(err)
        got = cann_peer.launch_operator(op, {k: a[k] for k in names}, tiling, dtype, check_hazards=False)
    if silu:
        want = reference.silu_backward(e["dy"], e["x"], e["mean"], e["rstd"], e["gamma"], e["beta"], G, SWISH_SCALE)[:3]
    else:
        want = reference.backward(e["dy"], e["x"], e["mean"], e["rstd"], e["gamma"], G)[:3]
    correct = fault is None and all(cann_peer.ttk_failures(g, w.reshape(g.shape)) <= 0.004 for g, w in zip(got, want))
    return {"est_us": estimate_ns(cann_peer.last_stats(op), constants) / 1000,
            "mode": tiling["fields"]["Tiling_key"], "cores": tiling["block_dim"], "correct": correct}


def cells(ours, cann):
    if cann is None:
        return " n/a | n/a |"
    mark = "" if cann["correct"] else ", wrong or racy"
    return f" {cann['est_us']:.1f} (MODE_{cann['mode']}, {cann['cores']}{mark}) | {ours['est_us'] / cann['est_us']:.2f} |"


def summary(pairs):
    """``peer worst=R (shape, dtype) geomean=G correct=P/T`` over the rows CANN's kernel ran."""
    ran = [(ours, cann) for ours, cann in pairs if cann is not None]
    if not ran:
        return "peer worst=n/a geomean=n/a correct=0/0"
    ratios = [ours["est_us"] / cann["est_us"] for ours, cann in ran]
    worst = max(range(len(ran)), key=lambda i: ratios[i])
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    correct = sum(cann["correct"] for _, cann in ran)
    return (f"peer worst={ratios[worst]:.2f} ({ran[worst][0]['shape']}, {ran[worst][0]['dtype']}) "
            f"geomean={geomean:.2f} correct={correct}/{len(ran)}")

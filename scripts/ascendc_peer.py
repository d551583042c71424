"""``scripts/ascendc_cost.py --peer``: CANN's own GroupNormGrad beside GroupNormGradMs, in the same cost model.

CANN's 910B kernel runs on the twin with the tiling CANN's own code computes (tests/cann_peer.py: needs
the OPS_NN, METADEF and ASC_DEVKIT checkouts), under the cost constants of our launch, and its per-block
counters go through the same estimate as ours: the slowest block up to the last SyncAll, the SyncAll, the
slowest block after it, never under the busiest block's bytes at the per-core bandwidth. Both figures are
the model's, on no device. CANN's kernel runs the full shape (ours may run fewer samples, see
ascendc_cost.py). The estimate aligns CANN's blocks at its last SyncAll only, so block 0's InitOutput
before its first SyncAll is not charged to the others: it errs in CANN's favour.

Each CANN launch is also checked against float64 by CANN's ttk rule; ``correct`` counts those that pass.
The peer runs fp32 only (the twin's vector arithmetic is fp32 and CANN's 16-bit path rounds with Cast
CAST_ROUND, which the twin does not model yet): 16-bit rows show "n/a" and stay out of the closing line.
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

PEER_DTYPES = {"fp32": "float32"}
HEADER = " CANN est. µs (mode, cores) | ours / CANN |"


def unavailable():
    """None when the peer can run, else the reason."""
    paths = cann_peer.checkouts()
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


def measure_cann(shape, dtype_key, constants):
    """CANN's row for an anchor (N, C, H, W, G): est_us, mode, cores, correct; None for a dtype the peer
    does not run. ``constants``: our launch's cost model, which the peer's launch gets too."""
    if dtype_key not in PEER_DTYPES:
        return None
    N, C, H, W, G = shape
    HxW = H * W
    cann_peer.cost_model(**constants)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, HxW)).astype(np.float32)
    dy = rng.standard_normal((N, C, HxW)).astype(np.float32)
    gamma = rng.standard_normal(C).astype(np.float32)
    xg = x.reshape(N, G, -1).astype(np.float64)
    mean, rstd = xg.mean(-1).astype(np.float32), (1 / np.sqrt(xg.var(-1) + 1e-5)).astype(np.float32)
    deterministic = False  # ignored: CANN's tiling takes its deterministic key when N > 2, whatever the flag
    tiling = cann_peer.cann_tiling(N, C, HxW, G, PEER_DTYPES[dtype_key], deterministic)
    try:
        got = cann_peer.run_cann(dy, mean, rstd, x, gamma, G, deterministic, tiling=tiling)
        fault = None
    except TwinFault as e:  # a CANN race the twin names (MODE_5): estimate the program-order run
        fault = str(e)
        got = cann_peer.run_cann(dy, mean, rstd, x, gamma, G, deterministic, tiling=tiling, check_hazards=False)
    want = reference.backward(dy.astype(np.float64), x.astype(np.float64), mean.astype(np.float64),
                              rstd.astype(np.float64), gamma.astype(np.float64), G)[:3]
    correct = fault is None and all(cann_peer.ttk_failures(a, e) <= 0.004 for a, e in zip(got, want))
    return {"est_us": estimate_ns(cann_peer.last_stats(), constants) / 1000,
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

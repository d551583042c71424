"""``scripts/ascendc_cost.py --peer``: CANN's own kernel beside ours, in the same cost model.

Without --silu-grad the pair is CANN's GroupNormGrad and GroupNormGradMs; with --silu-grad it is CANN's
GroupNormSwishGrad (swish_scale 1.0, the SiLU) and GroupNormSiluGradMs; with --forward, CANN's GroupNormSilu
(SiLU on, eps 1e-5) and GroupNormSiluMs. CANN's 910B kernel runs on the
twin with the tiling CANN's own code computes (tests/cann_peer.py: needs the OPS_NN, METADEF and
ASC_DEVKIT checkouts), under the cost constants of our launch, and its per-block counters go through
the same estimate as ours: the slowest block up to the last SyncAll, the SyncAll, the slowest block
after it, never under the busiest block's bytes at the per-core bandwidth. Both figures are the
model's, on no device. CANN's kernel runs the full shape (ours may run fewer samples, see
ascendc_cost.py). The estimate aligns CANN's blocks at its last SyncAll only, so block 0's InitOutput
before its first SyncAll is not charged to the others: it errs in CANN's favour.

Each CANN launch is also checked against float64 by CANN's ttk rule; ``correct`` counts those that pass.
CANN's 910B backward kernels take one type for every array, so their mixed rows (fp16/fp32, bf16/fp32)
show "n/a" and stay out of the closing line; the backward peers run fp32, fp16 and bf16. A launch the
twin refuses outright (GroupNormGrad's 16-bit MODE_2, a flag set twice) has no estimate: its row says so,
and it counts in the closing line's total but not as correct. GroupNormSilu
also takes float32 gamma and beta under 16-bit x (its mixed keys), so the forward peer runs every row;
it writes mean and rstd in x's dtype (ours in float32). Inputs are rounded to their dtypes and the float64
reference is taken from the rounded values.
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

ONE_TYPE = {"fp32": ("float32", "float32"), "fp16": ("float16", "float16"), "bf16": ("bfloat16", "bfloat16")}
PEER_DTYPES = {"grad": ONE_TYPE, "silu_grad": ONE_TYPE,  # (data dtype, gamma/beta dtype) by table row dtype
               "forward": {**ONE_TYPE, "fp16/fp32": ("float16", "float32"), "bf16/fp32": ("bfloat16", "float32")}}
SWISH_SCALE = 1.0  # the SiLU: GroupNormSiluGradMs's table runs swish_scale 1.0
HEADER = " CANN est. µs (mode, cores) | ours / CANN |"
# CANN's kernel runs its whole launch on the twin (ours runs fewer samples of a large shape and scales
# them, the work split unchanged); beyond this many elements the peer's row is left out, with the reason.
PEER_MAX_ELEMS = 1 << 22


def _kind(silu, forward):
    return "forward" if forward else "silu_grad" if silu else "grad"


def peer_operator(silu=False, forward=False):
    return {"grad": cann_peer.GROUP_NORM_GRAD, "silu_grad": cann_peer.GROUP_NORM_SWISH_GRAD,
            "forward": cann_peer.GROUP_NORM_SILU}[_kind(silu, forward)]


def unavailable(silu=False, forward=False):
    """None when the peer can run, else the reason."""
    paths = cann_peer.checkouts(peer_operator(silu, forward))
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


def measure_cann(shape, dtype_key, constants, silu=False, forward=False):
    """CANN's row for a shape (N, C, *spatial, G): est_us, mode, cores, correct; None for a dtype the peer
    does not run; {"skipped": reason} for a launch too large to run whole (PEER_MAX_ELEMS). ``constants``: our launch's cost model, which the peer's launch gets too. ``silu``:
    GroupNormSwishGrad (swish_scale 1.0) rather than GroupNormGrad; ``forward``: GroupNormSilu."""
    kind = _kind(silu, forward)
    dtypes = PEER_DTYPES[kind].get(dtype_key)
    if dtypes is None:
        return None
    dtype, param_dtype = dtypes
    op = peer_operator(silu, forward)
    N, C, *spatial, G = shape
    HxW = math.prod(spatial)
    if N * C * HxW > PEER_MAX_ELEMS:
        return {"skipped": f"{N * C * HxW:,} elements, beyond PEER_MAX_ELEMS"}
    cann_peer.cost_model(op, dtype, **constants)
    a, e = cann_peer.seeded_inputs(N, C, HxW, G, dtype)
    params = {"gamma": param_dtype, "beta": param_dtype}
    if param_dtype != dtype:
        e.update({k: cann_peer.from_storage(cann_peer.to_storage(a[k], param_dtype), param_dtype).astype(np.float64)
                  for k in params})
    deterministic = False  # GroupNormGrad: ignored (its key follows N); GroupNormSwishGrad: the default context
    extra = {"swish_scale": SWISH_SCALE} if silu else {}
    tiling = cann_peer.operator_tiling(op, N, C, HxW, G, dtype, deterministic, tensor_dtypes=params, **extra)
    names = [name for name, _ in op.inputs]
    launch = {"tensor_dtypes": params, "num_groups": G}
    mode = f"key {tiling['tiling_key']}" if forward else f"MODE_{tiling['fields']['Tiling_key']}"
    try:
        got = cann_peer.launch_operator(op, {k: a[k] for k in names}, tiling, dtype, **launch)
        fault = None
    except TwinFault as err:  # a CANN race the twin names (GroupNormGrad's MODE_5): estimate the program-order run
        fault = str(err)
        try:
            got = cann_peer.launch_operator(op, {k: a[k] for k in names}, tiling, dtype, check_hazards=False,
                                            **launch)
        except TwinFault:  # not a race: a rule the launch cannot run past (GroupNormGrad's 16-bit MODE_2)
            return {"est_us": None, "mode": mode, "cores": tiling["block_dim"], "correct": False}
    if forward:
        want = reference.silu_forward(e["x"], e["gamma"], e["beta"], G)
    elif silu:
        want = reference.silu_backward(e["dy"], e["x"], e["mean"], e["rstd"], e["gamma"], e["beta"], G, SWISH_SCALE)[:3]
    else:
        want = reference.backward(e["dy"], e["x"], e["mean"], e["rstd"], e["gamma"], G)[:3]
    correct = fault is None and all(cann_peer.ttk_failures(g, w.reshape(g.shape)) <= cann_peer.TTK_FAIL_FRACTION for g, w in zip(got, want))
    return {"est_us": estimate_ns(cann_peer.last_stats(op, dtype), constants) / 1000, "mode": mode,
            "cores": tiling["block_dim"], "correct": correct}


def cells(ours, cann):
    if cann is None:
        return " n/a | n/a |"
    if "skipped" in cann:
        return f" not run ({cann['skipped']}) | n/a |"
    if cann["est_us"] is None:
        return f" refused by the twin ({cann['mode']}, {cann['cores']}) | n/a |"
    mark = "" if cann["correct"] else ", wrong or racy"
    return f" {cann['est_us']:.1f} ({cann['mode']}, {cann['cores']}{mark}) | {ours['est_us'] / cann['est_us']:.2f} |"


def summary(pairs):
    """``peer worst=R (shape, dtype) geomean=G correct=P/T`` over the rows CANN's kernel was given (T); the
    ratios over those it ran to the end (a launch the twin refused has no estimate, and is not correct)."""
    tried = [(ours, cann) for ours, cann in pairs if cann is not None and "skipped" not in cann]
    correct = sum(cann["correct"] for _, cann in tried)
    ran = [(ours, cann) for ours, cann in tried if cann["est_us"] is not None]
    if not ran:
        return f"peer worst=n/a geomean=n/a correct={correct}/{len(tried)}"
    ratios = [ours["est_us"] / cann["est_us"] for ours, cann in ran]
    worst = max(range(len(ran)), key=lambda i: ratios[i])
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    skipped = sum(1 for _, cann in pairs if cann is not None and "skipped" in cann)
    return (f"peer worst={ratios[worst]:.2f} ({ran[worst][0]['shape']}, {ran[worst][0]['dtype']}) "
            f"geomean={geomean:.2f} correct={correct}/{len(tried)}" + (f" not_run={skipped}" if skipped else ""))

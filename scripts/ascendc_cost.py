"""What the AscendC GroupNormGradMs kernel would cost on an Ascend 910B, as the CPU twin counts it.

For each anchor shape x dtype pair the twin runs the real kernel source and reports, from its pipe
model (kernels/ascendc/twin/twin_pipes.h):
  * GM bytes read + written per element (the floor of the full backward is 3 x the data size:
    dy and x read once, dx written once: 12 B/elem in fp32, 6 B/elem in fp16/bf16);
  * PipeBarriers, SetFlag/WaitFlag pairs (the kernel's own, and the ones its TQues insert) and
    SyncAlls executed per core (the busiest core);
  * scalar UB and GM accesses, vector instructions and 256-byte vector repeats per element;
  * an estimated time from the per-pipe timeline (MTE2/MTE3 at the per-core bandwidth share, V at
    one 256-byte repeat per cycle, overlap as far as the events allow), and its ratio to the
    pure-bandwidth time of the same bytes.
  * "vector µs": how long the busiest core's vector pipe is busy (instructions and the compiler's
    V barriers), a floor of that core's time under any schedule: where it is above the bound, the
    row is held by vector work, not by bytes or latencies.

Model constants (twin::CostModel; assumptions, not measurements — no Ascend machine was available):
  * HBM bandwidth 1.6 TB/s shared by 48 vector cores -> 33 GB/s per core. 1.6 TB/s is the figure
    commonly quoted for the Ascend 910B's HBM2e; 48 AIV cores is the core count the tiling uses
    (CANN's ops-nn UTs use the same 48 and UB 196608).
  * Vector unit: one 256-byte repeat per cycle (the AscendC docs define a repeat as 256 bytes:
    asc-devkit docs/zh/api/SIMD-API/基础API/SIMD计算说明/高维切分.md), plus 10 cycles per instruction.
  * Clock 1.85 GHz; a DMA instruction holds its MTE pipe for 64 cycles + 16 cycles per burst (each
    DataCopyPad row is a burst of at least 32 bytes) + bytes / bandwidth, and its data arrives 1 us
    later (consecutive DMAs overlap that latency; --dma-latency-ns changes it); a scalar UB access
    4 cycles; a scalar GM access 200 ns; a SyncAll 2 us; a V barrier (the ones bisheng inserts
    between dependent vector instructions under --cce-auto-sync, or PipeBarrier<PIPE_V>) 20 cycles.
  * ReduceSum (count form) is what dav_c220 runs: vcadd, a V -> S wait, the scalar store of the
    result, S -> V and S -> MTE3 waits; each wait holds the issuing scalar unit until the pipe it
    waits for is done, so the round trips are serial.
The per-burst and V-barrier cycles have no public figure; they are assumptions of this model
(--burst-cycles / --vec-barrier-cycles change them).
The estimate of a launch is the slowest core's phase 1, plus the SyncAll, plus the slowest core's
stage 2; a core's time is at least its GM bytes over its bandwidth share (MTE2 and MTE3 share it).

Every anchor runs at its full size (all N samples, on 48 cores). Shapes beyond MAX_RUN_ELEMS
(none of the anchors) run with fewer samples on the same core count and their per-core counts
and times are scaled by tasks per core (full / run); the table says which rows were scaled. That
scaling also multiplies a core's fixed latencies (its first load, its last store), so it
overstates the time: until 2026-12-02 the two largest anchors were run that way (8x320x64x64 with
1 of 8 samples, 16x128x56x56 with 5 of 16), which put their rows 0-20 % above their full runs.

Last line (backward): worst_over_bound=R (shape, dtype) geomean_over_bound=G, where for each anchor
shape x dtype the bound is (bytes of reading dy and x once and writing dx once, in the data dtype,
plus the statistics mean, rstd, gamma, dgamma, dbeta in theirs) / 1.6 TB/s + 3 x the DMA latency,
and R, G are the largest and the geometric mean of estimate / bound.

With --forward the table is that of the GroupNormSiluMs forward kernel (SiLU on; its floor is
2 x the data size per element: x read once, y written once), same anchors, constants and scaling;
its bound is (bytes of reading x once and writing y once in the data dtype, plus the statistics:
mean and rstd written in fp32, gamma and beta read in theirs) / 1.6 TB/s + 3 x the DMA latency.

With --silu-grad the table is that of the fused backward GroupNormSiluGradMs (swish_scale 1.0),
with the same columns, its bound (the backward's bytes plus beta), and one more column: its
estimate over GroupNormGradMs's at the same shape and dtype (measured in the same run).

Every table (no flag, --forward, --silu-grad) ends with its own line
worst_over_bound=R (shape, dtype) geomean_over_bound=G over the rows it printed.

With --table NAME the rows are the shapes of scripts/shapes/NAME.txt (every_shape: networks, odd and
tiny shapes, CANN's GroupNormGrad test shapes, each with its reason), and the table closes with one
line per dtype, "fp16: worst_over_bound=...", before the line over all rows.

Usage: python scripts/ascendc_cost.py [--dtypes fp32,bf16] [--shapes 3x60x17x19:6,4096x512:32,...]
                                      [--table every_shape] [--dma-latency-ns 1000]
                                      [--forward | --silu-grad] [--peer]
"""
import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "kernels" / "ascendc" / "twin")]  # the package; the twin's harness
import twin  # noqa: E402

ANCHORS = [(2, 64, 32, 32, 32), (8, 320, 64, 64, 32), (16, 128, 56, 56, 32), (32, 32, 28, 28, 8),
           (4, 1280, 8, 8, 32), (1, 3, 224, 224, 1), (3, 60, 17, 19, 6)]  # N, C, H, W, G
TABLES = Path(__file__).resolve().parent / "shapes"  # --table NAME reads TABLES / f"{NAME}.txt"
DTYPES = {"fp32": ("float32", "float32"), "fp16": ("float16", "float16"), "bf16": ("bfloat16", "bfloat16"),
          "fp16/fp32": ("float16", "float32"), "bf16/fp32": ("bfloat16", "float32")}
BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
CORES = 48
MAX_RUN_ELEMS = 1 << 24  # larger shapes run with fewer samples (no anchor is that large)
# A shape whose one sample is larger is not run: the twin holds every array in host memory (with
# the float64 inputs, ~40 bytes an element), and a sample cannot be cut without changing the
# kernel's mode. CANN's tiling UT has such shapes (1x2130x1664x1664: 5.9G elements).
MAX_SAMPLE_ELEMS = 1 << 26
HBM_BYTES_PER_NS = 1600.0  # 1.6 TB/s, the whole chip: the bound every table closes with


def storage(values, dtype):
    if dtype == "bfloat16":
        bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.ascontiguousarray(values, {"float32": np.float32, "float16": np.float16}[dtype])


def run(N, C, HxW, G, data_dtype, stat_dtype, silu=False):
    rng = np.random.default_rng(0)
    shape = (N, C, HxW)
    x = storage(rng.standard_normal(shape), data_dtype)
    dy = storage(rng.standard_normal(shape), data_dtype)
    mean = storage(np.zeros((N, G)), stat_dtype)
    rstd = storage(np.ones((N, G)), stat_dtype)
    gamma = storage(np.ones(C), stat_dtype)
    if silu:
        beta = storage(np.zeros(C), stat_dtype)
        _, _, _, tiling = twin.twin_silu_backward(dy, x, mean, rstd, gamma, beta, G, 1.0,
                                                          data_dtype=data_dtype, stat_dtype=stat_dtype,
                                                          core_num=CORES)
    else:
        _, _, _, tiling = twin.twin_backward(dy, x, mean, rstd, gamma, G, data_dtype=data_dtype,
                                                     stat_dtype=stat_dtype, core_num=CORES)
    return tiling, twin.twin_last_stats()


def tasks_on_busiest_core(tiling):
    return tiling["tasksPerCore"] + (1 if tiling["tailCores"] else 0)


def measure(shape, dtype_key, silu=False):
    N, C, HxW, G = flat(shape)
    data_dtype, stat_dtype = DTYPES[dtype_key]
    full = twin.twin_tiling(N, C, HxW, G, data_dtype, stat_dtype, core_num=CORES, silu=silu)
    n_run = N
    if N * C * HxW > MAX_RUN_ELEMS:  # fewer samples, same mode and work split
        n_run = max(1, MAX_RUN_ELEMS // (C * HxW))
        # (the channel split also follows how evenly whole groups spread over the cores: N decides that)
        while n_run < N and (n_run * G < CORES or any(twin.twin_tiling(
                n_run, C, HxW, G, data_dtype, stat_dtype, core_num=CORES, silu=silu)[k] != full[k]
                for k in ("mode", "splitByChannel", "groupAcrossN", "hwSlices"))):
            n_run += 1
    tiling, stats = run(n_run, C, HxW, G, data_dtype, stat_dtype, silu)
    assert all(tiling[k] == full[k] for k in ("mode", "splitByChannel", "groupAcrossN", "hwSlices"))
    scale = tasks_on_busiest_core(full) / max(1, tasks_on_busiest_core(tiling))
    elems = n_run * C * HxW
    gm = sum(s["gm_read_bytes"] + s["gm_write_bytes"] for s in stats)

    def per_core_max(field):
        return max(s[field] for s in stats)

    def total(field):
        return sum(s[field] for s in stats)

    gm_bytes_per_ns, syncall_ns = cost("gm_bytes_per_ns"), cost("syncall_ns")
    # time: phase 1 (to SyncAll) of the slowest core, scaled to the full task count, then stage 2
    phase1 = []
    stage2 = []
    for s in stats:
        own_bw = (s["gm_read_bytes"] + s["gm_write_bytes"]) / gm_bytes_per_ns
        if s["time_at_syncall_ns"] >= 0:
            phase1.append(s["time_at_syncall_ns"])
            stage2.append(max(0.0, s["end_ns"] - s["time_at_syncall_ns"] - syncall_ns))
        else:
            phase1.append(max(s["end_ns"], own_bw))
    est_ns = max(phase1) * scale + (syncall_ns + max(stage2) * (N / n_run) if stage2 else 0.0)
    # pure-bandwidth time of the busiest core's bytes (full launch)
    busiest_bytes = max(s["gm_read_bytes"] + s["gm_write_bytes"] for s in stats) * scale
    bw_ns = busiest_bytes / gm_bytes_per_ns
    est_ns = max(est_ns, bw_ns)
    floor_ns = 3 * BYTES[data_dtype] * N * C * HxW / (gm_bytes_per_ns * CORES)
    stat_bytes = BYTES[stat_dtype] * (2 * N * G + (4 if silu else 3) * C)  # mean, rstd; gamma, (beta,) dgamma, dbeta
    bound_ns = (3 * BYTES[data_dtype] * N * C * HxW + stat_bytes) / HBM_BYTES_PER_NS + 3 * dma_latency_ns()
    return {
        "shape": shape_label(shape),
        "dtype": dtype_key,
        "mode": twin.MODE_NAMES[full["mode"]] + ("/split" if full["splitByChannel"] else "")
        + (f"/{full['hwSlices']} HxW slices" if full["hwSlices"] > 1 else "")
        + ("/across N" if full["groupAcrossN"] else ""),
        "run": "full" if n_run == N else f"N={n_run} of {N}",
        "gm_b_per_elem": gm / elems,
        "floor_b_per_elem": 3 * BYTES[data_dtype],
        "barriers": per_core_max("barriers_all"),  # once per launch (before stage 2), not per task
        "user_flags": per_core_max("user_flag_pairs") * scale,
        "queue_flags": per_core_max("queue_flag_pairs") * scale,
        "syncalls": per_core_max("sync_alls"),
        "scalar_ub": total("scalar_ub") / elems,
        "scalar_gm": total("scalar_gm") / elems,
        "vec_calls": total("vec_calls") / elems,
        "vec_repeats": total("vec_repeats") / elems,
        "est_us": est_ns / 1000,
        "bw_us": bw_ns / 1000,
        "ratio": est_ns / bw_ns if bw_ns else math.nan,
        "floor_us": floor_ns / 1000,
        "reduce_trips": per_core_max("api_flag_pairs") * scale / 3,  # ReduceSum: 3 waits per call
        "auto_v_barriers": per_core_max("auto_v_barriers") * scale,
        "dma_bursts": per_core_max("dma_bursts") * scale,
        "bound_us": bound_ns / 1000,
        "over_bound": est_ns / bound_ns,
        "vector_us": busiest_vector_ns(stats, twin.twin_cost_model()) * scale / 1000,
    }


def cost(name):
    """One of the twin's cost constants (twin::CostModel, the one place they are written)."""
    return twin.twin_cost_model()[name]


def dma_latency_ns():
    return cost("dma_latency_ns")


def busiest_vector_ns(stats, model):
    """How long the busiest core's vector pipe is busy: its instructions (start-up and repeats) plus the V
    barriers the compiler inserts between dependent ones. No schedule can make the core faster than this, so
    a row whose vector µs is above 1.5 x its bound cannot reach 1.5 by hiding DMA: only fewer vector
    instructions can."""
    barrier_ns = model["vec_barrier_cycles"] / model["clock_ghz"]
    return max(s["busy_v_ns"] + (s["auto_v_barriers"] + s["barriers_pipe"]) * barrier_ns for s in stats)


HEADER = ("| shape | dtype | mode | run | GM B/elem (floor) | DMA bursts/core | flag pairs/core (own + queue) | "
          "ReduceSum trips/core | compiler V barriers/core | scalar GM/elem | vector instr/elem | est. µs | "
          "bandwidth µs | vector µs | bound µs | est./bound |")


def row(r):
    return (f"| {r['shape']} | {r['dtype']} | {r['mode']} | {r['run']} | {r['gm_b_per_elem']:.2f} "
            f"({r['floor_b_per_elem']}) | {r['dma_bursts']:.0f} | {r['user_flags']:.0f} + {r['queue_flags']:.0f} | "
            f"{r['reduce_trips']:.0f} | {r['auto_v_barriers']:.0f} | {r['scalar_gm']:.4f} | {r['vec_calls']:.3f} | "
            f"{r['est_us']:.1f} | {r['bw_us']:.1f} | {r['vector_us']:.1f} | {r['bound_us']:.1f} | {r['over_bound']:.2f} |")


def summary(rows):
    worst = max(rows, key=lambda r: r["over_bound"])
    geomean = math.exp(sum(math.log(r["over_bound"]) for r in rows) / len(rows))
    return (f"worst_over_bound={worst['over_bound']:.2f} ({worst['shape']}, {worst['dtype']}) "
            f"geomean_over_bound={geomean:.2f}")


# ---------------------------------------------------------------- the forward (GroupNormSiluMs)
def measure_forward(shape, dtype_key):
    N, C, HxW, G = flat(shape)
    data_dtype, param_dtype = DTYPES[dtype_key]
    full = twin.forward_tiling(N, C, HxW, G, data_dtype, param_dtype, core_num=CORES)
    n_run = N
    if N * C * HxW > MAX_RUN_ELEMS:  # fewer samples, same mode
        n_run = max(1, MAX_RUN_ELEMS // (C * HxW))
        while n_run < N and n_run * G < CORES:
            n_run += 1
    rng = np.random.default_rng(0)
    x = storage(rng.standard_normal((n_run, C, HxW)), data_dtype)
    gamma = storage(np.ones(C), param_dtype)
    beta = storage(np.zeros(C), param_dtype)
    _, _, _, tiling = twin.twin_forward(x, gamma, beta, G, data_dtype=data_dtype,
                                                        param_dtype=param_dtype, core_num=CORES)
    stats = twin.forward_last_stats()
    assert tiling["mode"] == full["mode"]
    scale = tasks_on_busiest_core(full) / max(1, tasks_on_busiest_core(tiling))
    elems = n_run * C * HxW
    gm = sum(s["gm_read_bytes"] + s["gm_write_bytes"] for s in stats)
    gm_bytes_per_ns = cost("gm_bytes_per_ns")
    est_ns = max(max(s["end_ns"], (s["gm_read_bytes"] + s["gm_write_bytes"]) / gm_bytes_per_ns) for s in stats) * scale
    bw_ns = max(s["gm_read_bytes"] + s["gm_write_bytes"] for s in stats) * scale / gm_bytes_per_ns
    est_ns = max(est_ns, bw_ns)
    stat_bytes = 4 * 2 * N * G + BYTES[param_dtype] * 2 * C  # mean, rstd (fp32) written; gamma, beta read
    bound_ns = ((2 * BYTES[data_dtype] * N * C * HxW + stat_bytes) / HBM_BYTES_PER_NS
                + 3 * twin.forward_cost_model()["dma_latency_ns"])
    return {
        "shape": shape_label(shape),
        "dtype": dtype_key,
        "mode": twin.FORWARD_MODE_NAMES[full["mode"]] + ("/staged" if full["staged"] else "")
        + (f"/ring {full['ringResident']} of {full['ringParts']} parts" if full["ringParts"] else "")
        + ("/split" if full["sliceCount"] > 1 else ""),
        "run": "full" if n_run == N else f"N={n_run} of {N}",
        "gm_b_per_elem": gm / elems,
        "floor_b_per_elem": 2 * BYTES[data_dtype],
        "user_flags": max(s["user_flag_pairs"] for s in stats) * scale,
        "queue_flags": max(s["queue_flag_pairs"] for s in stats) * scale,
        "scalar_ub": sum(s["scalar_ub"] for s in stats) / elems,
        "scalar_gm": sum(s["scalar_gm"] for s in stats) / elems,
        "vec_calls": sum(s["vec_calls"] for s in stats) / elems,
        "est_us": est_ns / 1000,
        "bw_us": bw_ns / 1000,
        "ratio": est_ns / bw_ns if bw_ns else math.nan,
        "floor_us": 2 * BYTES[data_dtype] * N * C * HxW / (gm_bytes_per_ns * CORES) / 1000,
        "bound_us": bound_ns / 1000,
        "over_bound": est_ns / bound_ns,
        "vector_us": busiest_vector_ns(stats, twin.forward_cost_model()) * scale / 1000,
    }


FORWARD_HEADER = ("| shape | dtype | mode | run | GM B/elem (floor) | flag pairs/core (own + queue) | scalar UB/elem | "
                  "scalar GM/elem | vector instr/elem | est. µs | bandwidth µs | ratio | 2·s·n/HBM µs | vector µs | "
                  "bound µs | est./bound |")


def forward_row(r):
    return (f"| {r['shape']} | {r['dtype']} | {r['mode']} | {r['run']} | {r['gm_b_per_elem']:.2f} "
            f"({r['floor_b_per_elem']}) | {r['user_flags']:.0f} + {r['queue_flags']:.0f} | {r['scalar_ub']:.4f} | "
            f"{r['scalar_gm']:.4f} | {r['vec_calls']:.3f} | {r['est_us']:.1f} | {r['bw_us']:.1f} | "
            f"{r['ratio']:.2f} | {r['floor_us']:.1f} | {r['vector_us']:.1f} | {r['bound_us']:.1f} | {r['over_bound']:.2f} |")


def shape_label(shape):
    """A shape as the tables print it: its dims joined by x, then G (2x64x32x32 G32)."""
    return "x".join(map(str, shape[:-1])) + f" G{shape[-1]}"


def flat(shape):
    """(N, C, HxW, G) of a shape (N, C, spatial dims..., G): the kernels see the spatial dims as one."""
    return shape[0], shape[1], math.prod(shape[2:-1]), shape[-1]


def anchor_name(anchor):
    return "x".join(map(str, anchor[:-1])) + f":{anchor[-1]}"


def parse_shape(text):
    """NxCxHxW:G, NxC:G (2-D, HxW = 1) or any rank >= 2 as dims joined by x -> (N, C, dims..., G).
    Bad text raises SystemExit naming the shape and the rule it breaks."""
    dims_text, sep, group_text = text.strip().partition(":")
    try:
        dims = tuple(int(d) for d in dims_text.split("x"))
        G = int(group_text)
    except ValueError:
        dims, G = (), 0
    if not sep or len(dims) < 2:
        raise SystemExit(f"shape {text!r}: expected dims joined by x (at least N and C) then :G, as 2x64x32x32:32 "
                         f"or 4096x512:32")
    if min(dims) < 1 or G < 1 or dims[1] % G:
        raise SystemExit(f"shape {text!r}: every dim and G must be positive and C ({dims[1]}) a multiple of G ({G})")
    return dims + (G,)


def parse_shapes(names):
    """The shapes of `names` (comma-separated, see parse_shape); the anchors when None."""
    return list(ANCHORS) if names is None else [parse_shape(name) for name in names.split(",")]


def read_table(name):
    """The shapes of table `name` (scripts/shapes/NAME.txt: one `dims:G  reason` per line, # for notes)."""
    path = TABLES / f"{name}.txt"
    if not path.is_file():
        known = sorted(p.stem for p in TABLES.glob("*.txt"))
        raise SystemExit(f"--table {name}: no {path}; known tables: {known}")
    shapes = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            text, sep, reason = line.partition("  ")
            if not sep or not reason.strip():
                raise SystemExit(f"{path}:{number}: expected `dims:G  reason` (two spaces before the reason)")
            if "0" in text.partition(":")[0].split("x"):
                continue  # an empty tensor (the CPU bench's row): no launch to cost
            shapes.append(parse_shape(text))
    return list(dict.fromkeys(shapes))  # a shape listed for two reasons (two CANN cases) is costed once


def closing_lines(rows, per_dtype):
    """The table's closing line over all rows, after one per dtype when asked (a table over many shapes)."""
    lines = []
    if per_dtype:
        for dtype_key in dict.fromkeys(r["dtype"] for r in rows):
            lines.append(f"{dtype_key}: " + summary([r for r in rows if r["dtype"] == dtype_key]))
    return lines + [summary(rows)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated subset of " + ",".join(DTYPES))
    parser.add_argument("--shapes", default=None,
                        help="comma-separated shapes as NxCxHxW:G, NxC:G (2-D) or any rank >= 2 (default: the "
                        "anchors " + ",".join(anchor_name(a) for a in ANCHORS) + ")")
    parser.add_argument("--table", default=None, metavar="NAME",
                        help="the shapes of scripts/shapes/NAME.txt (e.g. every_shape) instead of --shapes; closes "
                        "with one line per dtype and one over all rows")
    parser.add_argument("--dma-latency-ns", type=float, default=None, help="latency of one DMA (default 1000)")
    parser.add_argument("--burst-cycles", type=float, default=None, help="cycles per DMA burst (default 16)")
    parser.add_argument("--vec-barrier-cycles", type=float, default=None, help="cycles per V barrier (default 20)")
    parser.add_argument("--forward", action="store_true", help="the GroupNormSiluMs forward kernel's table")
    parser.add_argument("--silu-grad", action="store_true",
                        help="the fused GroupNormSiluGradMs backward's table, with its ratio to GroupNormGradMs")
    parser.add_argument("--peer", action="store_true",
                        help="add CANN's own GroupNormGrad (with --silu-grad: GroupNormSwishGrad; with --forward: "
                        "GroupNormSilu) under the same model (scripts/ascendc_peer.py; needs the OPS_NN, METADEF, "
                        "ASC_DEVKIT checkouts)")
    args = parser.parse_args()
    if args.table and args.shapes:
        parser.error("--table and --shapes: give one")
    peer = None
    if args.peer:
        import ascendc_peer as peer
        if peer.unavailable(args.silu_grad, args.forward):
            raise SystemExit(f"--peer: {peer.unavailable(args.silu_grad, args.forward)}")
    anchors = read_table(args.table) if args.table else parse_shapes(args.shapes)  # a typo fails before the build
    cost_model = twin.forward_cost_model if args.forward else twin.twin_cost_model
    changes = {name: value for name, value in (("dma_latency_ns", args.dma_latency_ns),
                                               ("dma_burst_cycles", args.burst_cycles),
                                               ("vec_barrier_cycles", args.vec_barrier_cycles)) if value is not None}
    if changes:
        cost_model(**changes)
    constants = cost_model()
    print("cost model: " + ", ".join(f"{k}={v:g}" for k, v in constants.items()))
    print()
    too_large = [shape for shape in anchors if math.prod(flat(shape)[1:3]) > MAX_SAMPLE_ELEMS]
    anchors = [shape for shape in anchors if shape not in too_large]
    rows = []
    peer_pairs = []
    if args.forward:
        header = FORWARD_HEADER + (peer.HEADER if peer else "")
        print(header)
        print("|" + "---|" * (header.count("|") - 1))
        for shape in anchors:
            for dtype_key in args.dtypes.split(","):
                rows.append(measure_forward(shape, dtype_key))
                line = forward_row(rows[-1])
                if peer:
                    peer_pairs.append((rows[-1], peer.measure_cann(shape, dtype_key, constants, forward=True)))
                    line += peer.cells(*peer_pairs[-1])
                print(line, flush=True)
        print()
        print_not_run(too_large)
        print("\n".join(closing_lines(rows, bool(args.table))))
        if peer:
            print(peer.summary(peer_pairs))
        return
    compare = args.silu_grad and not args.table  # a table's rows are many: its comparison column is left out
    header = HEADER + (" est./GroupNormGradMs est. (its est.) |" if compare else "") + (peer.HEADER if peer else "")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for shape in anchors:
        for dtype_key in args.dtypes.split(","):
            rows.append(measure(shape, dtype_key, silu=args.silu_grad))
            line = row(rows[-1])
            if compare:
                plain = measure(shape, dtype_key)
                other = "" if plain["mode"] == rows[-1]["mode"] else f", {plain['mode']}"
                line += f" {rows[-1]['est_us'] / plain['est_us']:.2f} ({plain['est_us']:.1f} µs{other}) |"
            if peer:
                peer_pairs.append((rows[-1], peer.measure_cann(shape, dtype_key, constants, silu=args.silu_grad)))
                line += peer.cells(*peer_pairs[-1])
            print(line, flush=True)
    print()
    print_not_run(too_large)
    print("\n".join(closing_lines(rows, bool(args.table))))
    if peer:
        print(peer.summary(peer_pairs))


def print_not_run(shapes):
    """The shapes left out of the table and its closing lines, and why."""
    for shape in shapes:
        print(f"not run: {shape_label(shape)} (one sample of {math.prod(flat(shape)[1:3]):,} elements is beyond "
              f"MAX_SAMPLE_ELEMS = {MAX_SAMPLE_ELEMS:,}, what the twin holds in host memory here)")


if __name__ == "__main__":
    main()

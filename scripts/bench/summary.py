"""From timings to tables: the raw CSV, medians per configuration, same-round ratios."""
import csv
import math
import statistics

from .common import shape_name
from .limit import Distance


def write_raw(path, raw):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "shape", "dtype", "threads", "impl", "ms"])
        for rnd, shape, dtype, threads, impl, seconds in raw:
            w.writerow([rnd, shape_name(shape), dtype, threads, impl, f"{seconds * 1e3:.6g}"])


def summarize(raw, shapes, dtypes, threads_list, cases):
    """{(shape, dtype, threads): {impl: {"ms": median ms, "rounds": {rnd: seconds}}}} plus
    derived entries: graph bwd = step - forward per round."""
    table = {}
    for rnd, shape, dtype, threads, impl, seconds in raw:
        table.setdefault((shape, dtype, threads), {}).setdefault(impl, {})[rnd] = seconds
    for key, impls in table.items():
        for name in ("ours", "ms"):
            step, fwd = impls.get(f"graphstep/{name}_graph"), impls.get(f"graphfwd/{name}_graph")
            if step and fwd:
                diffs = {r: step[r] - fwd[r] for r in step if r in fwd}
                # step - forward is a difference of two noisy times: below 5 % of the step
                # (or negative) it says nothing, and no backward time is reported.
                if diffs and statistics.median(diffs.values()) > 0.05 * statistics.median(step.values()):
                    impls[f"bwd/{name}_graph"] = diffs
        # numpy is single-threaded: show its 1-thread time in every thread row
    for (shape, dtype, threads), impls in list(table.items()):
        for impl in ("bwd/numpy", "fwd/numpy"):
            if impl not in impls:
                for other_threads in threads_list:
                    src = table.get((shape, dtype, other_threads), {}).get(impl)
                    if src:
                        impls[impl] = src
    summary = {}
    for key, impls in table.items():
        summary[key] = {impl: {"ms": statistics.median(rounds.values()) * 1e3, "rounds": rounds}
                        for impl, rounds in impls.items()}
        shape, dtype, threads = key
        case = cases.get((shape, dtype))
        if case is None or "triad" not in impls:
            continue
        triad_s = summary[key]["triad"]["ms"] / 1e3
        for impl, entry in summary[key].items():
            if impl.startswith("bwd/") or impl.startswith("fwd/"):
                streams = 3 if impl.startswith("bwd/") else 2  # read dy, x, write dx / read x, write y
                entry["distance"] = Distance(entry["ms"] / 1e3, case.numel(), case.itemsize(), streams, triad_s)
    return summary


def ratio(summary_entry, ours, other):
    """Median over rounds of other/ours (same-round): > 1 means ours is faster."""
    a, b = summary_entry.get(ours), summary_entry.get(other)
    if not a or not b:
        return None
    common = [r for r in a["rounds"] if r in b["rounds"] and a["rounds"][r] > 0]
    if not common:
        return None
    return statistics.median(b["rounds"][r] / a["rounds"][r] for r in common)


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def write_summary_csv(path, summary):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", "dtype", "threads", "impl", "median_ms", "rounds", "eff_GBps", "fraction_of_triad",
                    "ns_per_elem", "speedup_of_ours"])
        for (shape, dtype, threads), impls in sorted(summary.items(), key=lambda kv: str(kv[0])):
            for impl, entry in sorted(impls.items()):
                d = entry.get("distance")
                ours = None
                if impl.startswith("bwd/") or impl.startswith("fwd/"):
                    kind = impl.split("/")[0]
                    ours_impl = f"{kind}/ours_kernel"
                    if "pynative" in impl:
                        ours_impl = f"{kind}/ours_pynative"
                    elif "graph" in impl:
                        ours_impl = f"{kind}/ours_graph"
                    ours = ratio(impls, ours_impl, impl)
                w.writerow([shape_name(shape), dtype, threads, impl, f"{entry['ms']:.6g}", len(entry["rounds"]),
                            f"{d.gbps:.4g}" if d else "", f"{d.fraction:.4g}" if d else "",
                            f"{d.ns_per_element:.4g}" if d else "",
                            "" if ours is None else f"{ours:.4g}"])


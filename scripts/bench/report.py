"""The report: the markdown tables, the targets with a met/NOT met line each, and the plot."""
import statistics

from .common import BANDWIDTH_TARGET_SHAPES, KERNEL_VS_TORCH_DTYPES, MID, TINY, shape_name, torch
from .limit import LEGEND
from .summary import geomean, ratio


TIME_COLUMNS = ["triad", "bwd/ours_kernel", "bwd/torch", "bwd/numpy", "bwd/ours_pynative", "bwd/ms_pynative",
                "bwd/ours_graph", "bwd/ms_graph", "fwd/ours_kernel", "fwd/torch", "fwd/ours_pynative",
                "fwd/ms_pynative", "graphfwd/ours_graph", "graphfwd/ms_graph"]


def fmt(value, spec=".3g", suffix=""):
    return "—" if value is None else f"{value:{spec}}{suffix}"


def distance(entry):
    d = entry.get("distance") if entry else None
    return d.text() if d else "—"


def readme_table(summary, shapes, dtypes, threads):
    """The README's table: per shape, at ``threads`` threads, the backward's time and distance to
    the limit (float32) and every same-run ratio the picture shows, dtypes side by side."""
    ms_dtypes = [d for d in dtypes if d != "bfloat16"]

    def cells(ours, other, dtype_list, spec=".2f"):
        return " / ".join(fmt(ratio(summary.get((s, d, threads), {}), ours, other), spec, "×") for d in dtype_list)

    names = " / ".join(d.replace("float", "fp").replace("bfp16", "bf16") for d in dtypes)
    ms_names = " / ".join(d.replace("float", "fp") for d in ms_dtypes)
    lines = [f"### Summary: {threads} thread(s) (the README's table)", "",
             f"| shape | bwd fp32 kernel ms | bwd fp32: distance to the limit | bwd vs torch {names} | "
             f"bwd PyNative vs MindSpore GroupNormGrad {ms_names} | bwd GRAPH vs nn.GroupNorm {ms_names} | "
             f"fwd vs torch {names} | fwd PyNative vs ops.group_norm {ms_names} | "
             f"fwd GRAPH vs nn.GroupNorm {ms_names} |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in shapes:
        e = summary.get((s, "float32", threads), {})
        k = e.get("bwd/ours_kernel")
        row = [shape_name(s), fmt(k["ms"], ".4g") if k else "—", distance(k),
               cells("bwd/ours_kernel", "bwd/torch", dtypes),
               cells("bwd/ours_pynative", "bwd/ms_pynative", ms_dtypes, ".1f"),
               cells("bwd/ours_graph", "bwd/ms_graph", ms_dtypes, ".1f"),
               cells("fwd/ours_kernel", "fwd/torch", dtypes),
               cells("fwd/ours_pynative", "fwd/ms_pynative", ms_dtypes, ".1f"),
               cells("graphfwd/ours_graph", "graphfwd/ms_graph", ms_dtypes, ".1f")]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def render_markdown(summary, raw, shapes, dtypes, threads_list, broken, isa, rounds, seconds, machine="",
                    avx2_forced=False, percall=None, network=None, started=""):
    lines = [f"Benchmark `scripts/bench_group_norm.py`, {started}: {rounds} round(s), implementations "
             f"interleaved per configuration; machine: {machine} (`{isa}`)"
             f"{' and the avx2 build, forced, in the kernel-vs-torch lines' if avx2_forced else ''}; torch "
             f"{torch.__version__ if torch else 'not installed'}; {seconds / 60:.1f} min.",
             "Times are medians over rounds (ms); speed-ups are medians of same-round ratios "
             "(other / ours, > 1 = ours faster). Kernel " + LEGEND + " (no non-temporal stores, so a kernel that "
             "streams its output can pass 100 %).", ""]
    lines += readme_table(summary, shapes, dtypes, threads_list[0]) + [""]
    lines += ["### Backward", "",
              "| shape | dtype | thr | ours kernel ms | distance to the limit | vs torch | vs numpy | "
              "PyNative: vs MS GroupNormGrad | "
              "GRAPH bwd: vs MS | ours PyNative vs torch | ours GRAPH bwd vs torch |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for threads in threads_list:
        for dtype in dtypes:
            for shape in shapes:
                e = summary.get((shape, dtype, threads), {})
                k = e.get("bwd/ours_kernel")
                if not k:
                    continue
                lines.append(
                    f"| {shape_name(shape)} | {dtype} | {threads} | {k['ms']:.4g} | "
                    f"{distance(k)} | "
                    f"{fmt(ratio(e, 'bwd/ours_kernel', 'bwd/torch'), '.2f', '×')} | "
                    f"{fmt(ratio(e, 'bwd/ours_kernel', 'bwd/numpy'), '.1f', '×')} | "
                    f"{fmt(ratio(e, 'bwd/ours_pynative', 'bwd/ms_pynative'), '.1f', '×')} | "
                    f"{fmt(ratio(e, 'bwd/ours_graph', 'bwd/ms_graph'), '.1f', '×')} | "
                    f"{fmt(ratio(e, 'bwd/ours_pynative', 'bwd/torch'), '.2f', '×')} | "
                    f"{fmt(ratio(e, 'bwd/ours_graph', 'bwd/torch'), '.2f', '×')} |")
    lines += ["", "### Forward", "",
              "| shape | dtype | thr | ours kernel ms | distance to the limit | vs torch | vs numpy | "
              "PyNative: vs MS GroupNorm | "
              "GRAPH fwd: vs MS |", "|---|---|---|---|---|---|---|---|---|"]
    for threads in threads_list:
        for dtype in dtypes:
            for shape in shapes:
                e = summary.get((shape, dtype, threads), {})
                k = e.get("fwd/ours_kernel")
                if not k:
                    continue
                lines.append(
                    f"| {shape_name(shape)} | {dtype} | {threads} | {k['ms']:.4g} | "
                    f"{distance(k)} | "
                    f"{fmt(ratio(e, 'fwd/ours_kernel', 'fwd/torch'), '.2f', '×')} | "
                    f"{fmt(ratio(e, 'fwd/ours_kernel', 'fwd/numpy'), '.1f', '×')} | "
                    f"{fmt(ratio(e, 'fwd/ours_pynative', 'fwd/ms_pynative'), '.1f', '×')} | "
                    f"{fmt(ratio(e, 'graphfwd/ours_graph', 'graphfwd/ms_graph'), '.1f', '×')} |")
    lines += ["", "### Median times (ms)", "", "| shape | dtype | thr | " + " | ".join(TIME_COLUMNS) + " |",
              "|---|---|---|" + "---|" * len(TIME_COLUMNS)]
    for threads in threads_list:
        for dtype in dtypes:
            for shape in shapes:
                e = summary.get((shape, dtype, threads), {})
                if not e:
                    continue
                cells = [fmt(e[c]["ms"], ".4g") if c in e else "—" for c in TIME_COLUMNS]
                lines.append(f"| {shape_name(shape)} | {dtype} | {threads} | " + " | ".join(cells) + " |")
    if network:
        import bench_network

        lines += ["", "### Network training step (VAE-like, `scripts/bench_network.py`)", "",
                  "Per-step medians over interleaved rounds; ceiling = nn.GroupNorm step / identity step; "
                  "gain taken = (t_nn − t_ours) / (t_nn − t_identity) per round, median ± half the interquartile "
                  "range.", ""] + bench_network.table(network)
    lines += ["", "### Targets where users feel the speed, this run", ""]
    lines += user_targets(summary, shapes, threads_list, isa, avx2_forced, percall or {}, network or {})
    lines += ["", "### Earlier targets (kernels and per-shape calls)", ""] + targets(summary, raw, shapes, dtypes,
                                                                                   threads_list)
    if broken:
        lines += ["", "Not measured:", ""]
        seen = set()
        for (shape, dtype, impl), why in sorted(broken.items(), key=str):
            if (dtype, impl, why) not in seen:
                seen.add((dtype, impl, why))
                lines.append(f"* {impl} {dtype}: {why}")
    return "\n".join(lines) + "\n"


def targets(summary, raw, shapes, dtypes, threads_list):
    out = []

    def verdict(ok):
        return "—" if ok is None else ("met" if ok else "NOT met")

    def geo(kind_ours, kind_other, dtype, threads, subset=None):
        return geomean([ratio(summary.get((s, dtype, threads), {}), kind_ours, kind_other)
                        for s in (subset or shapes)])

    for threads in threads_list:
        g = geo("bwd/ours_kernel", "bwd/torch", "float32", threads)
        worst = [ratio(summary.get((s, "float32", threads), {}), "bwd/ours_kernel", "bwd/torch") for s in shapes]
        worst = min((w for w in worst if w is not None), default=None)
        out.append(f"* bwd fp32 kernel vs torch, {threads}T: geo-mean {fmt(g, '.2f', '×')} (target ≥ 1.5×), "
                   f"slowest shape {fmt(worst, '.2f', '×')} (target ≥ 1×): "
                   f"{verdict(None if g is None else g >= 1.5 and worst >= 1.0)}")
    for shape in BANDWIDTH_TARGET_SHAPES:
        d = (summary.get((shape, "float32", 1), {}).get("bwd/ours_kernel") or {}).get("distance")
        if d:
            out.append(f"* bwd fp32 1T {shape_name(shape)}: {d.gbps:.1f} GB/s = {100 * d.fraction:.0f} % of the "
                       f"same-run triad (target ≥ 60 %): {verdict(d.fraction >= 0.6)}")
    for dtype, goal in (("bfloat16", 1.5), ("float16", 3.0)):
        for threads in threads_list:
            g = geo("bwd/ours_kernel", "bwd/torch", dtype, threads)
            out.append(f"* bwd {dtype} kernel vs torch, {threads}T: geo-mean {fmt(g, '.2f', '×')} "
                       f"(target ≥ {goal}×): {verdict(None if g is None else g >= goal)}")
    for path, ours, other in (("PyNative", "bwd/ours_pynative", "bwd/ms_pynative"),
                              ("GRAPH", "bwd/ours_graph", "bwd/ms_graph")):
        for threads in threads_list:
            g = geomean([geo(ours, other, d, threads) for d in dtypes if d != "bfloat16"])
            out.append(f"* bwd through MindSpore ({path}) vs built-in, {threads}T, fp32+fp16: geo-mean "
                       f"{fmt(g, '.1f', '×')} (target ≥ 10×): {verdict(None if g is None else g >= 10)}")
            for shape in BANDWIDTH_TARGET_SHAPES:
                r = ratio(summary.get((shape, "float32", threads), {}), ours, "bwd/torch")
                out.append(f"  * {path} {shape_name(shape)} fp32 {threads}T vs torch: {fmt(r, '.2f', '×')} "
                           f"(target ≥ 1.5×): {verdict(None if r is None else r >= 1.5)}")
    for threads in threads_list:
        g_ms = geomean([geo("fwd/ours_kernel", "fwd/ms_pynative", d, threads) for d in dtypes if d != "bfloat16"])
        g_t = geomean([geo("fwd/ours_kernel", "fwd/torch", d, threads) for d in dtypes])
        out.append(f"* fwd {threads}T: vs MS GroupNorm (PyNative, kernel-only ours) geo-mean {fmt(g_ms, '.1f', '×')} "
                   f"(target ≥ 5×): {verdict(None if g_ms is None else g_ms >= 5)}; vs torch geo-mean "
                   f"{fmt(g_t, '.2f', '×')} (target ≥ 1×): {verdict(None if g_t is None else g_t >= 1)}")
        g_py = geomean([geo("fwd/ours_pynative", "fwd/ms_pynative", d, threads) for d in dtypes if d != "bfloat16"])
        out.append(f"  * fwd {threads}T through MindSpore PyNative (ours op vs built-in): geo-mean {fmt(g_py, '.1f', '×')}")
    return out


def pace(ratio_value):
    """"1.30× faster" / "1.25× slower" from a speed-up (> 1 = ours faster)."""
    if ratio_value is None:
        return "—"
    return f"{ratio_value:.2f}× faster" if ratio_value >= 1 else f"{1 / ratio_value:.2f}× slower"


def round_ratios(times, ours, other):
    """Per-round ours/other cost ratios of a per-call section ({impl: [seconds per round]})."""
    a, b = times.get(ours, []), times.get(other, [])
    return [x / y for x, y in zip(a, b) if x > 0 and y > 0]


def user_targets(summary, shapes, threads_list, isa, avx2_forced, percall, network):
    out = []

    def verdict(ok):
        return "—" if ok is None else ("met" if ok else "NOT met")

    # The per-call cost in PyNative, tiny shape, default settings: what a small layer's call costs.
    n, c, h, w, g = TINY
    for threads in threads_list:
        times = percall.get(threads, {})
        if not times:
            out.append(f"* per-call cost, {threads}T: not measured")
            continue
        times = dict(times)
        for name in ("ours", "ms"):  # the layer's backward = (value_and_grad step) - forward, per round
            times[f"layer_bwd/{name}"] = [s - f for s, f in zip(times[f"layer_step/{name}"], times[f"layer_fwd/{name}"])]
        for label, impl in (("layer forward (GroupNorm vs nn.GroupNorm, no gradient)", "layer_fwd"),
                            ("layer forward+backward (value_and_grad step)", "layer_step"),
                            ("layer backward (step − forward)", "layer_bwd"),
                            ("group_norm_backward vs GroupNormGrad", "bwd")):
            ratios = round_ratios(times, f"{impl}/ours", f"{impl}/ms")
            r = statistics.median(ratios) if ratios else None
            ms_us = statistics.median(times[f"{impl}/ms"]) * 1e6
            out.append(f"* per-call cost, {threads}T, {n}x{c}x{h} G={g}, {label}: ours costs {fmt(r, '.2f', '×')} the built-in "
                       f"call ({ms_us:.0f} µs) (target ≤ 1×): {verdict(None if r is None else r <= 1.0)}")
    # One op inside a compiled graph: the launch cost of our aot op next to the built-in one.
    for shape in (TINY, MID):
        e = summary.get((shape, "float32", 1), {})
        for kind in ("fwd", "bwd"):
            r = ratio(e, f"graphop_{kind}/ms", f"graphop_{kind}/ours")  # ours / built-in cost
            if r is None:
                continue
            out.append(f"* one op in a compiled graph, {kind} {shape_name(shape)}: ours costs {r:.2f}× the built-in op "
                       f"({e[f'graphop_{kind}/ms']['ms'] * 1e3:.0f} µs per op) (target ≤ 1.1×): {verdict(r <= 1.1)}")
    # A GroupNorm-heavy network's training step (only when --network ran it).
    if network:
        import bench_network

        out += [bench_network.verdict_line(key, bench_network.summarize(t)) for key, t in network.items()]
    # Kernel-only backward vs torch, fp32 and bf16, both ISA builds; then through PyNative vs torch.
    builds = [(isa, "bwd/ours_kernel")] + ([("avx2 (forced)", "bwd/ours_kernel_avx2")] if avx2_forced else [])
    for build, impl in builds:
        for dtype in KERNEL_VS_TORCH_DTYPES:
            for threads in threads_list:
                rs = [ratio(summary.get((s, dtype, threads), {}), impl, "bwd/torch") for s in shapes]
                rs = [r for r in rs if r is not None]
                if not rs:
                    continue
                geo, worst = geomean(rs), min(rs)
                out.append(f"* kernel-only bwd vs torch, {build} build, {dtype}, {threads}T: geo-mean "
                           f"{geo:.2f}×, slowest shape {pace(worst)} (target geo-mean ≥ 1.5×, no shape below 1×): "
                           f"{verdict(geo >= 1.5 and worst >= 1.0)}")
    for dtype in KERNEL_VS_TORCH_DTYPES:
        for threads in threads_list:
            rs = [(ratio(summary.get((s, dtype, threads), {}), "bwd/ours_pynative", "bwd/torch"), s) for s in shapes]
            rs = [(r, s) for r, s in rs if r is not None]
            if rs:
                worst, where = min(rs)
                out.append(f"* bwd through PyNative vs torch, {dtype}, {threads}T: slowest shape "
                           f"{shape_name(where)} {pace(worst)} (target: no anchor shape slower): {verdict(worst >= 1.0)}")
    return out


def plot(path, summary, shapes, dtypes, threads, title, note=""):
    """The README's picture: backward and forward, per shape, at ``threads`` threads: the kernel
    against torch, ours through MindSpore against MindSpore's built-in, and the kernel's distance
    to the same-run triad."""
    from .plot import bars, figure, save

    labels = [shape_name(s) for s in shapes]

    def series(ours, other, dtype_list):
        return {d: [ratio(summary.get((s, d, threads), {}), ours, other) for s in shapes] for d in dtype_list}

    def percent(impl, dtype):
        out = []
        for s in shapes:
            d = (summary.get((s, dtype, threads), {}).get(impl) or {}).get("distance")
            out.append(100 * d.fraction if d else None)
        return out

    ms_dtypes = [d for d in dtypes if d != "bfloat16"]  # MindSpore's CPU GroupNorm has no bf16 kernel
    fig, axes = figure(2, 3, title)
    for row, kind, ms_op, graph in ((0, "bwd", "GroupNormGrad", "bwd/ours_graph"),
                                    (1, "fwd", "ops.group_norm", "graphfwd/ours_graph")):
        name = "backward" if kind == "bwd" else "forward"
        bars(axes[row][0], labels, series(f"{kind}/ours_kernel", f"{kind}/torch", dtypes),
             f"{name}, kernel only: vs torch {torch.__version__ if torch else ''}")
        builtin = {}
        for d in ms_dtypes:
            builtin[f"PyNative {d}"] = series(f"{kind}/ours_pynative", f"{kind}/ms_pynative", [d])[d]
            builtin[f"GRAPH {d}"] = series(graph, graph.replace("ours", "ms"), [d])[d]
        bars(axes[row][1], labels, builtin,
             f"{name}, through MindSpore: vs built-in ({ms_op}; GRAPH: nn.GroupNorm)")
        limit = {}
        for d in dtypes:
            limit[f"ours {d}"] = percent(f"{kind}/ours_kernel", d)
            if d == "float32":
                limit["torch float32"] = percent(f"{kind}/torch", d)
        bars(axes[row][2], labels, limit, f"{name}: distance to the memory limit (kernel GB/s / triad GB/s)",
             kind="percent")
    return save(fig, path, note)

"""The benchmarks' pictures: grouped bars of same-run ratios per shape, one helper for both scripts.

matplotlib is imported lazily with the Agg backend (no display on the benchmark machines); a
missing matplotlib costs the picture, never the tables.
"""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Where the pictures of default runs go: committed, because the README shows them.
IMAGE_DIR = REPO / "docs" / "img"


def figure(rows, cols, title, width=6.4, height=3.6):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows + 0.9), squeeze=False)
    fig.suptitle(title, fontsize=11)
    return fig, axes


def style(name):
    """One colour per dtype in every panel (torch grey), hatched for GRAPH_MODE and default threads."""
    lowered = name.lower()
    color = "0.55" if "torch" in lowered else next(
        (c for key, c in (("bfloat16", "C2"), ("float16", "C1"), ("float32", "C0")) if key in lowered), None)
    hatch = "//" if lowered.startswith("graph") or "default" in lowered else None
    return {"color": color, "hatch": hatch, "edgecolor": "white" if hatch else None}


def bars(ax, labels, series, title, kind="ratio"):
    """Grouped bars: ``labels`` along x (shapes), ``series`` {legend: [value or None per label]}.
    kind "ratio": log scale with the 1x line (> 1 = ours faster); "percent": 0-100+ % of a limit."""
    names = [name for name, values in series.items() if any(v for v in values)]
    width = 0.8 / max(1, len(names))
    positions = range(len(labels))
    for k, name in enumerate(names):
        values = series[name]
        xs = [i + (k - (len(names) - 1) / 2) * width for i in positions]
        heights = [v if v else 0 for v in values]
        ax.bar(xs, heights, width, label=name, **style(name))
        for x, v in zip(xs, values):
            if v:
                text = f"{v:.0f}" if kind == "percent" else (f"{v:.1f}" if v >= 10 else f"{v:.2f}")
                ax.text(x, v, text, ha="center", va="bottom", fontsize=6.5, rotation=90 if len(names) > 2 else 0)
    if kind == "ratio":
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.axhline(1.0, color="black", linewidth=0.9)
        ax.set_ylabel("speed-up (> 1× = ours faster)", fontsize=8)
        top = max([v for values in series.values() for v in values if v] or [2])
        # headroom for the value labels and the legend above the tallest bar
        ax.set_ylim(min(0.5, min([v for values in series.values() for v in values if v] or [1]) * 0.8), top * 6)
    else:
        ax.axhline(100.0, color="black", linewidth=0.9)
        ax.set_ylabel("% of the same-run triad's GB/s", fontsize=8)
        top = max([v for values in series.values() for v in values if v] or [100])
        ax.set_ylim(0, max(110, top) * 1.45)
    ax.set_xticks(list(positions))
    ax.set_xticklabels(labels, rotation=20, fontsize=7)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_title(title, fontsize=9)
    if names:
        ax.legend(fontsize=6.5, loc="upper left", ncol=4, frameon=False)
    else:
        ax.text(0.5, 0.5, "not measured in this run", transform=ax.transAxes, ha="center", fontsize=9)


def save(fig, path, note=""):
    if note:
        fig.text(0.5, 0.005, note, ha="center", va="bottom", fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 0.95))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path

"""The distance to the machine's limit, for every benchmark: a same-run triad of the same bytes.

A GroupNorm kernel moves at least a few full-size tensors (the backward reads dy and x and
writes dx; the forward reads x and writes y), so for a shape that does not fit in cache the
fastest it can run is the speed at which this machine streams those bytes. The triad
a = b + 0.5 c (two reads, one write) on float32 arrays of one tensor's bytes each is timed
in the same round as the kernel, so the ratio holds even on a loaded machine.

Large shapes (a tensor of at least LARGE_BYTES, well beyond L2) are reported as effective GB/s
and the fraction of the triad's GB/s. Small, cache-resident shapes are bound by fixed costs per
call, not by bandwidth, so they are reported in ns per element, next to the triad's.
"""
import ctypes
import hashlib
import os
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LARGE_BYTES = 4 << 20
SOURCE = Path(__file__).with_name("triad.c")


def _cache_dir():
    root = os.environ.get("MS_GROUPNORM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ms_groupnorm")
    return Path(root) / "bench"


def _c_triad():
    """The compiled triad (built once per source and machine), or None without a C compiler."""
    if hasattr(_c_triad, "lib"):
        return _c_triad.lib
    _c_triad.lib = None
    text = SOURCE.read_bytes()
    tag = hashlib.sha256(text + os.uname().machine.encode()).hexdigest()[:12]
    path = _cache_dir() / f"triad_{tag}.so"
    try:
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
            with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
                built = Path(scratch) / path.name
                subprocess.run([compiler, "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", str(SOURCE),
                                "-o", str(built)], check=True, capture_output=True, timeout=120)
                os.replace(built, path)  # atomic: parallel runs never load a half-written file
        lib = ctypes.CDLL(str(path))
        lib.BenchTriad.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_long, ctypes.c_int]
        lib.BenchTriad.restype = None
        _c_triad.lib = lib
    except (OSError, subprocess.SubprocessError) as error:
        print(f"bench: the C triad could not be built ({type(error).__name__}); using numpy's, one thread")
    return _c_triad.lib


class Triad:
    """a = b + 0.5 c on three float32 arrays of ``nbytes`` each, at ``threads`` threads.
    The C build (OpenMP, -march=native) when a compiler is there; else numpy on one thread,
    whose limit is then a lower bound for multi-thread rows."""

    def __init__(self, nbytes, threads=1):
        self.n = max(1024, nbytes // 4)
        self.a = np.zeros(self.n, np.float32)
        self.b, self.c = np.ones(self.n, np.float32), np.ones(self.n, np.float32)
        self.threads = threads
        self.lib = _c_triad()
        self.kind = "C" if self.lib is not None else "numpy"
        self._args = tuple(v.ctypes.data for v in (self.a, self.b, self.c))

    def __call__(self):
        if self.lib is not None:
            self.lib.BenchTriad(*self._args, self.n, self.threads)
        else:
            np.add(self.b, 0.5 * self.c, out=self.a)

    def bytes_moved(self):
        return 3 * self.n * 4


@dataclass
class Distance:
    """One timing against the triad of the same round. ``streams``: full-size tensor reads and
    writes of the ideal kernel (backward 3, forward 2, fused forward + backward 5)."""

    seconds: float
    numel: int
    itemsize: int
    streams: int
    triad_seconds: float

    @property
    def large(self):
        return self.numel * self.itemsize >= LARGE_BYTES

    @property
    def gbps(self):
        return self.streams * self.numel * self.itemsize / self.seconds / 1e9

    @property
    def triad_gbps(self):
        return 3 * self.numel * self.itemsize / self.triad_seconds / 1e9

    @property
    def fraction(self):
        """Of the triad's GB/s: 1 = the kernel moves its ideal bytes as fast as the machine can."""
        return self.gbps / self.triad_gbps

    @property
    def ns_per_element(self):
        return self.seconds / self.numel * 1e9

    @property
    def triad_ns_per_element(self):
        """What the ideal traffic of one element would take at the triad's speed."""
        return self.streams / 3 * self.triad_seconds / self.numel * 1e9

    def text(self):
        if self.large:
            return f"{self.gbps:.1f} GB/s = {100 * self.fraction:.0f} % of triad"
        return f"{self.ns_per_element:.2f} ns/elem (limit {self.triad_ns_per_element:.2f})"


def distance_text(seconds, numel, itemsize, streams, triad_seconds):
    """"12.3 GB/s = 91 % of triad" (large shapes) or "0.41 ns/elem (limit 0.09)" (small), or "—"."""
    if not seconds or not triad_seconds:
        return "—"
    return Distance(seconds, numel, itemsize, streams, triad_seconds).text()


LEGEND = ("distance to the limit: for a tensor of ≥ 4 MiB, effective GB/s (the ideal kernel's full-size reads "
          "and writes / time) and its share of a same-run C triad a = b + 0.5c on float32 arrays of the tensor's "
          "bytes (2 reads, 1 write, -O3 -march=native, the row's threads); for smaller, cache-resident shapes, "
          "ns per element, next to the time the ideal traffic takes at the triad's speed (limit)")

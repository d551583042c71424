"""Every synchronisation and queue line of the three AscendC kernels is needed: deleting any one
of them (a SetFlag, WaitFlag, PipeBarrier, SyncAll, Sync<HardEvent::...> pair, EnQue, DeQue or
FreeTensor line of any op_kernel/*.h: GroupNormGradMs's class, which GroupNormSiluGradMs
instantiates with SILU = true, and GroupNormSiluMs's) must make the twin refuse a launch (a pipe
hazard, a hang, a queue misuse), compute wrong numbers (deferred execution, several block
orders), or not build.

The lines are found by scanning the headers, so new synchronisation is covered as it is
written. A mutant is the kernel translation units that include the header, compiled at -O0
from a copy of op_kernel/ with the line deleted, linked with the rest of the twin (compiled
once and cached, outside the checkout, by the hash of its sources). The full sweep is
exhaustive; the default run deletes a fixed sample, one line per kernel, and runs only that
kernel's launches."""
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import sync_mutation_launches as launches
import twin

SYNC_LINE = re.compile(r"SetFlag<|WaitFlag<|PipeBarrier<|SyncAll(<[^>]*>)?\(\)|Sync<HardEvent::|\.EnQue\(|"
                       r"DeQue<|\.FreeTensor\(")
FLAGS = ["-std=c++17", "-O0", "-fPIC", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0", "-fvisibility=hidden"]
FORWARD_PREFIX = "group_norm_silu_ms"  # GroupNormSiluMs's headers; every other one is the backward class's
# kernel -> (its library's sources, its entry translation unit)
LIBRARIES = {"forward": twin.FORWARD_SOURCES, "backward": twin.BACKWARD_SOURCES}
ENTRIES = {"forward": "op_kernel/group_norm_silu_ms.cpp", "grad": "op_kernel/group_norm_grad_ms.cpp",
           "silu_grad": "op_kernel/group_norm_silu_grad_ms.cpp"}
# The default run's sample: (a pattern that finds exactly one sync line in the kernel's headers,
# the kernel whose launches must catch its deletion). The first is the slice entry's MTE3 -> S
# wait, which only a block running two slices of split groups needs; the second the fused
# backward's V -> S wait before the scalar reads of its gamma/beta arrays.
SAMPLE = [(r"entryInFlight_\) Sync<HardEvent::MTE3_S>", "forward"),
          (r"Sync<HardEvent::V_S>\(\);\s+// AffineT", "silu_grad")]


def kernel_headers():
    """Every kernel header (the tiling structs hold no code)."""
    root = twin.ascendc_dir() / "op_kernel"
    return sorted(p.name for p in root.glob("*.h") if not p.name.endswith("_tiling_data.h"))


def kernels_of(header):
    """The kernels whose launches exercise `header`."""
    return ["forward"] if header.startswith(FORWARD_PREFIX) else ["grad", "silu_grad"]


def sync_lines(text):
    """(line index, line) of every synchronisation or queue statement outside comments."""
    found = []
    for number, line in enumerate(text.splitlines()):
        code = line.split("//")[0]
        if SYNC_LINE.search(code):
            found.append((number, line.strip()))
    return found


def delete_line(text, number):
    lines = text.splitlines(keepends=True)
    return "".join(lines[:number] + lines[number + 1:])


def compile_object(source, include_dirs, obj):
    result = subprocess.run(["g++", *FLAGS, *[f"-I{d}" for d in include_dirs], "-c", str(source), "-o", str(obj)],
                            capture_output=True, text=True)
    return result.returncode == 0


def digest_of(paths):
    digest = hashlib.sha256(" ".join(FLAGS).encode())
    for path in sorted(paths):
        if path.is_file():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="module")
def twin_objects():
    return build_twin_objects()


def build_twin_objects():
    """library kind -> the objects of its library other than the kernel entries (twin, host
    tiling), and "unmutated" -> entry -> the unmutated entry's object: compiled once, cached by
    the hash of the sources they are built from."""
    root = twin.ascendc_dir()
    twin_sources = [*(root / "twin").iterdir(), *(root / "op_host").iterdir(), *(root.parent / "cpu").glob("*.h")]
    cache = Path(tempfile.gettempdir()) / "ms_groupnorm_sync_mutations" / f"objects-{digest_of(twin_sources)}"
    entries = cache / f"entries-{digest_of([*twin_sources, *(root / 'op_kernel').iterdir()])}"
    entries.mkdir(parents=True, exist_ok=True)
    jobs = {}
    for kernel, sources in LIBRARIES.items():
        for source in sources:
            if not source.startswith("op_kernel/"):
                jobs[source] = cache / (source.replace("/", "_") + ".o")
    unmutated = {entry: entries / f"{entry}.o" for entry in ENTRIES}
    missing = [(s, o) for s, o in [*jobs.items(), *((ENTRIES[e], o) for e, o in unmutated.items())]
               if not o.is_file()]
    include = [root / "twin", root / "op_kernel"]

    def build(job):
        source, obj = job
        scratch = obj.with_name(f"{obj.name}.{os.getpid()}.tmp")  # parallel workers may build it too
        assert compile_object(root / source, include, scratch), source
        scratch.replace(obj)

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(build, missing))
    objects = {kind: [str(jobs[s]) for s in sources if s in jobs] for kind, sources in LIBRARIES.items()}
    objects["unmutated"] = {entry: str(obj) for entry, obj in unmutated.items()}
    return objects


def build_mutant(twin_objects, workdir, header, text, kernels):
    """The library of `kernels` (one library: the forward, or the backward's two entries) with
    `text` as op_kernel/`header`; None when it does not compile. Entries not in `kernels` but in
    the same library are compiled from the unmutated headers and linked after the mutated ones,
    so that every inline function the launched kernel calls is the mutated copy."""
    root = twin.ascendc_dir()
    library_kind = "forward" if kernels == ["forward"] else "backward"
    mutated_dir = workdir / "mutated"
    mutated_dir.mkdir(parents=True, exist_ok=True)
    for path in (root / "op_kernel").iterdir():
        if path.suffix in (".h", ".cpp"):
            shutil.copy(path, mutated_dir / path.name)
    (mutated_dir / header).write_text(text)
    objects = []
    for entry in kernels:  # first: the linker keeps the first copy of an inline function
        obj = workdir / f"{entry}.o"
        if not compile_object(mutated_dir / Path(ENTRIES[entry]).name, [mutated_dir, root / "twin"], obj):
            return None
        objects.append(str(obj))
    same_library = [e for e in ENTRIES if (e == "forward") == (library_kind == "forward") and e not in kernels]
    objects += [twin_objects["unmutated"][e] for e in same_library]
    library = workdir / "libtwin_mutant.so"
    subprocess.run(["g++", "-shared", "-pthread", *objects, *twin_objects[library_kind], "-o", str(library)],
                   check=True, capture_output=True)
    return str(library)


def mutants(candidates, twin_objects, tmp_path):
    """Builds the mutant of each (header, line index, line, kernels), two g++ at a time."""
    texts = {h: (twin.ascendc_dir() / "op_kernel" / h).read_text() for h, *_ in candidates}

    def build(index):
        header, number, _, kernels = candidates[index]
        return build_mutant(twin_objects, tmp_path / f"mutant{index}", header, delete_line(texts[header], number),
                            kernels)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(build, range(len(candidates))))


def survivors_of(candidates, libraries):
    survivors, report = [], []
    for (header, number, text, kernels), library in zip(candidates, libraries):
        result = "does not build" if library is None else launches.outcome(library, kernels)
        report.append(f"{header}:{number + 1}: {text} -> {result}")
        if result == "ok":
            survivors.append(f"{header}:{number + 1}: {text}")
    print("\n".join(report))
    return survivors


def test_the_scan_finds_the_synchronisation_of_all_three_kernels():
    root = twin.ascendc_dir() / "op_kernel"
    found = {h: sync_lines((root / h).read_text()) for h in kernel_headers()}
    forward = sum(len(v) for h, v in found.items() if h.startswith(FORWARD_PREFIX))
    backward = sum(len(v) for h, v in found.items() if not h.startswith(FORWARD_PREFIX))
    assert forward >= 10 and backward >= 20, found
    # comments do not count; every statement form does
    assert sync_lines("  // SetFlag<HardEvent::V_S>(id);\n  que.EnQue(t);\n  x.FreeTensor(t);  // Sync<\n"
                      "  SyncAll();\n  SyncAll<true>();\n  PipeBarrier<PIPE_ALL>();\n") == [
        (1, "que.EnQue(t);"), (2, "x.FreeTensor(t);  // Sync<"), (3, "SyncAll();"), (4, "SyncAll<true>();"),
        (5, "PipeBarrier<PIPE_ALL>();")]


def test_the_own_stats_launches_take_a_staging_buffer_three_times_on_a_core():
    """ownStats's two staging buffers run out on a core only at its third sums task, so a missing
    FreeTensor shows only there: its launches must keep ownStats and at least three sums tasks (runs
    of up to channelsPerItem channels) on some core, whatever the tiling comes to choose."""
    checks = [(c, False) for c in launches.GRAD_CHECKS] + [(c, True) for c in launches.SILU_GRAD_CHECKS]
    own = [(c, silu) for c, silu in checks if c[0] == "own_stats_reuses_its_staging"]
    assert {silu for _, silu in own} == {False, True}
    for (case, dtype_key, cores, mask), silu in own:
        N, C, HxW, G, *_ = launches.CASES[case]
        data_dtype, stat_dtype, _, _ = launches.DTYPES[dtype_key]
        tiling = twin.twin_tiling(N, C, HxW, G, data_dtype, stat_dtype, mask=mask, core_num=cores, silu=silu)
        most = tiling["tasksPerCore"] + (1 if tiling["tailCores"] > 0 else 0)
        assert tiling["ownStats"] == 1 and -(-most // tiling["channelsPerItem"]) >= 3, (case, dtype_key, silu)


# The paths whose synchronisation or queue lines no other path of the kernel runs: each kernel's
# launches must take every one of them, whatever the tiling comes to choose (a launch the tiling
# moves to another path leaves that path's lines unjudged: groupRows took the affine table's).
# Fields in COUNT_FIELDS count as taken (1) where nonzero.
BACKWARD_PATHS = {"mode": {0, 1, 2, 3}, "splitByChannel": {0, 1}, "groupAcrossN": {0, 1}, "needWorkspace": {0, 1},
                  "affineAhead": {0, 1, 2}, "ownStats": {0, 1}, "hwOneGather": {0, 1}, "stage2WholeRows": {0, 1},
                  "loadBuffers": {2, 3}, "copyAligned": {0, 1}, "groupRows": {0, 1}, "bcastElems": {0, 1},
                  "hwOneSamples": {0, 1}}
FORWARD_PATHS = {"mode": {0, 1}, "vectorCoef": {0, 1}, "activateSilu": {0, 1}, "staged": {0, 1},
                 "coefPerBlock": {0, 1}, "ringParts": {0, 1}, "ringResident": {0, 1}, "partItems": {0, 1},
                 "groupRows": {0, 1}, "groupRowsGather": {0, 1}, "bcastElems": {0, 1}, "chunksPerRow": {1, 5}}
COUNT_FIELDS = {"groupRows", "bcastElems", "hwOneSamples", "ringParts", "ringResident", "partItems",
                "groupRowsGather"}


def launch_tilings(kernel):
    """The tiling of each of `kernel`'s sweep launches."""
    if kernel == "forward":
        return [launches.forward_tiling_of(*check) for check in launches.FORWARD_CHECKS]
    silu = kernel == "silu_grad"
    tilings = []
    for case, dtype_key, cores, mask in launches.SILU_GRAD_CHECKS if silu else launches.GRAD_CHECKS:
        N, C, HxW, G, *_ = launches.CASES[case]
        data_dtype, stat_dtype, _, _ = launches.DTYPES[dtype_key]
        tilings.append(twin.twin_tiling(N, C, HxW, G, data_dtype, stat_dtype, mask=mask, core_num=cores, silu=silu))
    return tilings


@pytest.mark.parametrize("kernel", ["grad", "silu_grad", "forward"])
def test_the_launches_take_every_path(kernel):
    paths = FORWARD_PATHS if kernel == "forward" else BACKWARD_PATHS
    taken = {field: set() for field in paths}
    for tiling in launch_tilings(kernel):
        for field, values in taken.items():
            values.add(int(tiling[field] != 0) if field in COUNT_FIELDS else tiling[field])
    missing = {field: paths[field] - taken[field] for field in paths if paths[field] - taken[field]}
    assert not missing, f"no {kernel} launch takes: {missing}"


# Exhaustive: a subset of test_deleting_any_sync_line_is_caught, and on a fresh machine ~49 s of CPU
# (the twin objects and two mutants compiled at -O0).
@pytest.mark.exhaustive
def test_deleting_a_sample_of_sync_lines_is_caught(twin_objects, tmp_path):
    """One line per kernel, each mutant built once, only its kernel's launches."""
    root = twin.ascendc_dir() / "op_kernel"
    candidates = []
    for pattern, kernel in SAMPLE:
        hits = [(h, n, line) for h in kernel_headers() if kernel in kernels_of(h)
                for n, line in sync_lines((root / h).read_text()) if re.search(pattern, line)]
        assert len(hits) == 1, f"the sample /{pattern}/ matches {len(hits)} sync lines of {kernel}: update SAMPLE"
        candidates.append((*hits[0], [kernel]))
    for kernel in sorted({c[3][0] for c in candidates}):  # the launches pass on the unmutated kernels
        library = twin.forward_library_path() if kernel == "forward" else twin.twin_library_path()
        assert launches.outcome(library, [kernel]) == "ok", kernel
    survivors = survivors_of(candidates, mutants(candidates, twin_objects, tmp_path))
    assert not survivors, "sync lines whose deletion no launch notices:\n" + "\n".join(survivors)


@pytest.mark.exhaustive
def test_deleting_any_sync_line_is_caught(twin_objects, tmp_path):
    root = twin.ascendc_dir() / "op_kernel"
    candidates = [(h, n, line, kernels_of(h)) for h in kernel_headers()
                  for n, line in sync_lines((root / h).read_text())]
    for kernels in (["forward"], ["grad", "silu_grad"]):
        library = twin.forward_library_path() if kernels == ["forward"] else twin.twin_library_path()
        assert launches.outcome(library, kernels) == "ok", kernels
    survivors = survivors_of(candidates, mutants(candidates, twin_objects, tmp_path))
    assert not survivors, "sync lines whose deletion no launch notices:\n" + "\n".join(survivors)

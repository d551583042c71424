"""Every synchronisation line of the AscendC kernel is needed: deleting any one of them
(a SetFlag, WaitFlag, PipeBarrier, SyncAll, Sync<HardEvent::...> pair, EnQue or DeQue line
of op_kernel/group_norm_grad_ms.h and the headers it is split into) must make the twin refuse the launch (a pipe hazard, a
hang, a queue misuse), compute wrong numbers (deferred execution, several block orders), or
not build. Each mutant is compiled (the kernel translation units only, GroupNormGradMs's and
the fused GroupNormSiluGradMs's, -O0, linked with the twin objects built once) and runs one
small launch per tiling mode of each kernel."""
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from ms_groupnorm import ascendc_twin, reference, reference_silu
from test_ascendc_twin import CASES, DTYPES, as_float64, check_against_reference, make_inputs, storage

# The kernel class and the headers it is split into (member definitions, copies, stage 2).
KERNEL_HEADERS = ("op_kernel/group_norm_grad_ms.h", "op_kernel/group_norm_grad_ms_channels.h",
                  "op_kernel/group_norm_grad_ms_hw_one.h", "op_kernel/group_norm_grad_ms_copies.h",
                  "op_kernel/group_norm_grad_ms_stage2.h")
SYNC_LINE = re.compile(r"SetFlag<|WaitFlag<|PipeBarrier<|SyncAll\(\)|Sync<HardEvent::|\.EnQue\(|DeQue<")
FLAGS = ["-std=c++17", "-O0", "-fPIC", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0", "-fvisibility=hidden"]
# One launch per mode and work split (and the mixed dtype paths), on few enough cores that a
# core runs several tasks (buffer reuse between tasks needs its own synchronisation); a launch
# that passes is also rerun under deferred execution and three block orders.
# Without dx (mask 011) nothing else orders the workspace copies before the next task's sums.
ALL, STATS_ONLY = (True, True, True), (False, True, True)
CHECKS = [("resident_unaligned_hw", "fp32", 2, ALL), ("resident_aligned_hw", "bf16_fp32", 2, ALL),
          ("resident_unaligned_hw", "fp32", 2, STATS_ONLY), ("resident_workspace_n8", "fp32", 4, ALL),
          ("channel_two_pass", "fp32", 2, ALL),
          ("hw_chunks_unaligned_n3", "bf16_fp32", 2, ALL), ("hw_chunks_unaligned_n3", "fp32", 2, STATS_ONLY),
          ("across_n_small", "fp32", 4, ALL), ("channel_split_n47", "fp16_fp32", 48, ALL), ("hw_chunks_channel_split", "fp16_fp32", 3, ALL),
          ("hw_one", "fp32", 4, ALL), ("hw_one", "fp32", 4, STATS_ONLY), ("hw_one_c_per_g_1", "bf16", 2, ALL)]
# The fused kernel (KernelGroupNormGradMs<T, U, true>) shares the header; its own lines (the
# gamma/beta loads of every task) need launches of it.
SILU_CHECKS = [("resident_unaligned_hw", "fp32", 2, ALL), ("resident_workspace_n8", "bf16_fp32", 4, STATS_ONLY),
               ("channel_two_pass", "fp32", 2, ALL), ("channel_split_n47", "fp16_fp32", 48, ALL),
               ("hw_chunks_unaligned_n3", "fp32", 2, STATS_ONLY), ("hw_one", "fp32", 4, ALL)]
SCHEDULES = [("concurrent", 0, "immediate"), ("concurrent", 0, "deferred"), ("forward", 0, "deferred"),
             ("reverse", 0, "deferred")]


def sync_lines(text):
    """(line number, line) of every synchronisation statement outside comments."""
    found = []
    for number, line in enumerate(text.splitlines()):
        code = line.split("//")[0]
        if SYNC_LINE.search(code):
            found.append((number, line.strip()))
    return found


@pytest.fixture(scope="module")
def twin_objects(tmp_path_factory):
    """The twin's translation units except the kernel's, compiled once."""
    root = ascendc_twin.ascendc_dir()
    out = tmp_path_factory.mktemp("twin_objects")
    sources = [s for s in ascendc_twin._TWIN_SOURCES if not s.startswith("op_kernel/")]
    objects = []
    for source in sources:
        obj = out / (source.replace("/", "_") + ".o")
        subprocess.run(["g++", *FLAGS, f"-I{root / 'twin'}", f"-I{root / 'op_kernel'}", "-c", str(root / source),
                        "-o", str(obj)], check=True, capture_output=True)
        objects.append(str(obj))
    return objects


def build_mutant(twin_objects, workdir, header_text, header=KERNEL_HEADERS[0]):
    """The twin library with `header_text` as the kernel header `header`; None when it does not compile."""
    root = ascendc_twin.ascendc_dir()
    kernel_dir = workdir / "op_kernel"
    kernel_dir.mkdir(parents=True, exist_ok=True)
    for path in (root / "op_kernel").iterdir():  # the kernel's other headers and the entries
        if path.suffix in (".h", ".cpp"):
            shutil.copy(path, kernel_dir / path.name)
    (kernel_dir / Path(header).name).write_text(header_text)
    library = workdir / "libtwin_mutant.so"
    objects = []
    for source in (s for s in ascendc_twin._TWIN_SOURCES if s.startswith("op_kernel/")):
        obj = workdir / (Path(source).stem + ".o")
        compiled = subprocess.run(["g++", *FLAGS, f"-I{kernel_dir}", f"-I{root / 'twin'}", "-c",
                                   str(kernel_dir / Path(source).name), "-o", str(obj)], capture_output=True)
        if compiled.returncode != 0:
            return None
        objects.append(str(obj))
    subprocess.run(["g++", "-shared", "-pthread", *objects, *twin_objects, "-o", str(library)], check=True,
                   capture_output=True)
    return str(library)


def outcome(library):
    """'ok', or how the launches of this library were caught."""
    original = ascendc_twin.twin_library_path
    ascendc_twin._twin_cdll.cache_clear()
    ascendc_twin.twin_library_path = lambda: library
    try:
        for case, dtype_key, cores, mask in CHECKS:
            N, C, HxW, G, _, mode, split = CASES[case]
            data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
            arrays, exact = make_inputs((N, C, HxW), G, data_dtype, stat_dtype, 7)
            want = reference.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"], G)
            results = []
            for policy, seed, execution in SCHEDULES:
                try:
                    got = ascendc_twin.twin_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"],
                                                     arrays["gamma"], G, mask=mask, data_dtype=data_dtype,
                                                     stat_dtype=stat_dtype, core_num=cores, policy=policy,
                                                     seed=seed, execution=execution)
                except ascendc_twin.TwinFault as fault:
                    return f"refused: {str(fault)[:160]}"
                try:
                    check_against_reference(got[:3], want, dtype_key, mask)
                except AssertionError as error:
                    return f"wrong numbers ({case}, {dtype_key}, mask {mask}, {policy}/{execution}): {error}"
                assert ascendc_twin.MODE_NAMES[got[3]["mode"]] == mode and got[3]["splitByChannel"] == split
                results.append([b"" if o is None else o.tobytes() for o in got[:3]])
            if any(r != results[0] for r in results[1:]):
                return f"results depend on the schedule ({case}, {dtype_key})"
        for case, dtype_key, cores, mask in SILU_CHECKS:
            verdict = silu_outcome(case, dtype_key, cores, mask)
            if verdict != "ok":
                return verdict
        return "ok"
    finally:
        ascendc_twin.twin_library_path = original
        ascendc_twin._twin_cdll.cache_clear()


def silu_outcome(case, dtype_key, cores, mask):
    """The fused kernel's launches of one case under SCHEDULES: 'ok' or how they were caught."""
    N, C, HxW, G, _, mode, split = CASES[case]
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs((N, C, HxW), G, data_dtype, stat_dtype, 7)
    beta = storage(np.linspace(-1.5, 1.5, C), stat_dtype)
    want = reference_silu.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"],
                                   as_float64(beta, stat_dtype), G, 1.7)
    results = []
    for policy, seed, execution in SCHEDULES:
        try:
            got = ascendc_twin.twin_silu_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"],
                                                  arrays["gamma"], beta, G, 1.7, mask=mask, data_dtype=data_dtype,
                                                  stat_dtype=stat_dtype, core_num=cores, policy=policy, seed=seed,
                                                  execution=execution)
        except ascendc_twin.TwinFault as fault:
            return f"refused (fused): {str(fault)[:160]}"
        try:
            check_against_reference(got[:3], want, dtype_key, mask)
        except AssertionError as error:
            return f"wrong numbers (fused, {case}, {dtype_key}, mask {mask}, {policy}/{execution}): {error}"
        assert ascendc_twin.MODE_NAMES[got[3]["mode"]] == mode and got[3]["splitByChannel"] == split
        results.append([b"" if o is None else o.tobytes() for o in got[:3]])
    if any(r != results[0] for r in results[1:]):
        return f"results depend on the schedule (fused, {case}, {dtype_key})"
    return "ok"


@pytest.mark.slow
@pytest.mark.exhaustive
def test_deleting_any_sync_line_is_caught(twin_objects, tmp_path):
    texts = {h: (ascendc_twin.ascendc_dir() / h).read_text() for h in KERNEL_HEADERS}
    candidates = [(h, number, text) for h in KERNEL_HEADERS for number, text in sync_lines(texts[h])]
    assert len(candidates) >= 20  # the kernel's own synchronisation, found by the pattern

    unmutated = build_mutant(twin_objects, tmp_path / "original", texts[KERNEL_HEADERS[0]])
    assert outcome(unmutated) == "ok"

    def build(index):
        header, number, _ = candidates[index]
        lines = texts[header].splitlines(keepends=True)
        return build_mutant(twin_objects, tmp_path / f"mutant{index}", "".join(lines[:number] + lines[number + 1:]),
                            header)

    with ThreadPoolExecutor(max_workers=2) as pool:  # g++ runs in parallel; the launches run here
        libraries = list(pool.map(build, range(len(candidates))))
    survivors = []
    report = []
    for (header, number, text), library in zip(candidates, libraries):
        result = "does not build" if library is None else outcome(library)
        report.append(f"{Path(header).name}:{number + 1}: {text} -> {result}")
        if result == "ok":
            survivors.append(f"{Path(header).name}:{number + 1}: {text}")
    print("\n".join(report))
    assert not survivors, "sync lines whose deletion no test notices:\n" + "\n".join(survivors)

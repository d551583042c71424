"""Our AscendC sources against the real CANN headers: g++ -std=c++17 -fsyntax-only.

The CPU twin (kernels/ascendc/twin) is our own model of the AscendC API; this test checks the
kernels and the host code against the API itself, from checkouts named in the environment:

* ``ASC_DEVKIT``: a checkout of CANN's asc-devkit (the AscendC headers);
* ``METADEF``: a checkout of CANN's metadef (op registration, tiling context, graph types).

Each ``kernels/ascendc/op_kernel/*.cpp`` is compiled, per tiling key, the way CANN's op compiler
builds it for the 910B (dav-c220 vector core), in two modes:

* ``cpu``: CANN's CPU-debug mode (``-DASCENDC_CPU_DEBUG=1 -D__DAV_C220__ -D__DAV_C220_VEC__
  -D__NPU_ARCH__=2201``, the defines of asc-devkit's own g++ header checker,
  tests/api/basic_api/ascendc_header_checker/CMakeLists.txt);
* ``npu``: the device branches bisheng compiles (no ASCENDC_CPU_DEBUG, ``-D__DAV_VEC__``), with
  what bisheng provides built in declared by kernels/ascendc/realheader_stubs/kernel/npu_builtins.h.

The include list is asc-devkit's ``tikcfw_headers`` (impl/basic_api/CMakeLists.txt); the
generated headers (kernel_tiling/kernel_tiling.h and the force-included per-op tiling header)
are written by asc-devkit's own scripts (tests/cann_tiling_headers.py). The closed pieces
(tikicpulib, bisheng built-ins, securec, the platform library) are declaration-only stand-ins in
kernels/ascendc/realheader_stubs, each saying what it replaces. Every ``op_host/*.cpp`` is
compiled against metadef with ``-DNO_OPERATOR_IMPL`` (metadef's switch in
inc/external/asc/register/op_def.h) and asc-devkit's include/utils (platform_ascendc.h).

Broken copies of our kernels must fail (the check has teeth). Without the checkouts every test
skips, saying how to get them; docs/ascend-real-headers.md has the steps and the last results.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import cann_tiling_headers

ASC_DEVKIT_ENV = "ASC_DEVKIT"
METADEF_ENV = "METADEF"
HOW_TO_GET = ("fetch the sources (GitHub mirrors mirror-cann/asc-devkit and hicann/metadef), extract a work "
              "tree of each and set ASC_DEVKIT and METADEF to them; see docs/ascend-real-headers.md")

ASCENDC = Path(__file__).resolve().parent.parent / "kernels" / "ascendc"
STUBS = ASCENDC / "realheader_stubs"
KERNEL_STUBS = STUBS / "kernel"
HOST_STUBS = STUBS / "host"
KERNELS = sorted((ASCENDC / "op_kernel").glob("*.cpp"))
HOSTS = sorted((ASCENDC / "op_host").glob("*.cpp"))

# asc-devkit's tikcfw_headers include directories (impl/basic_api/CMakeLists.txt, BUILD_INTERFACE),
# after the checkout root that its header checker adds first.
TIKCFW_DIRS = [".", "impl", "impl/basic_api", "impl/basic_api/reg_compute", "impl/simt_api", "impl/c_api", "include",
               "include/basic_api", "include/simt_api", "include/simt_api/cpp", "include/basic_api/reg_compute",
               "include/c_api"]
ARCH_DEFINES = ["-D__DAV_C220__", "-D__DAV_C220_VEC__", "-D__NPU_ARCH__=2201"]
MODE_FLAGS = {
    "cpu": ["-DASCENDC_CPU_DEBUG=1", f"-I{KERNEL_STUBS}"],
    "npu": ["-D__DAV_VEC__", "-include", str(KERNEL_STUBS / "npu_builtins.h")],
}
MIX_CORE_DEFINE = "-D__MIX_CORE_MACRO__=1"  # the op compiler's define for a mixed (cube+vector) kernel type

# g++ has no address spaces: asc-devkit's impl/utils/debug/asc_aicore_dump_impl.h (after v9.0.1)
# overloads asc_dump on them (__biasbuf__ T* vs __fbuf__ T*, ...), which g++ sees as
# redefinitions. Exactly these errors, in exactly that file, are not ours and are set aside; any
# other error fails the check (the negative tests below show that errors after them still count).
ADDRESS_SPACE_OVERLOAD = re.compile(r"asc_aicore_dump_impl\.h:\d+:\d+: error: redefinition of .*__asc_aicore::asc_dump")


def _checkout(env):
    value = os.environ.get(env)
    if not value:
        pytest.skip(f"{env} is unset: the real-header check needs CANN source checkouts ({HOW_TO_GET})")
    return Path(value)


@pytest.fixture(scope="module")
def asc_devkit():
    path = _checkout(ASC_DEVKIT_ENV)
    assert (path / "include" / "kernel_operator.h").is_file(), f"{ASC_DEVKIT_ENV}={path} is not an asc-devkit checkout"
    return path


@pytest.fixture(scope="module")
def metadef():
    path = _checkout(METADEF_ENV)
    assert (path / "inc" / "external" / "register").is_dir(), f"{METADEF_ENV}={path} is not a metadef checkout"
    if not (path / "inc" / "external" / "asc" / "register" / "op_def_registry.h").is_file():
        # metadef's tags up to v9.0.1 do not hold the op-definition API (register/op_def_registry.h)
        pytest.skip(f"{METADEF_ENV}={path} has no inc/external/asc/register/op_def_registry.h (metadef holds the "
                    "op-definition API only after v9.0.1): use a newer metadef checkout")
    return path


@pytest.fixture(scope="module")
def generated(asc_devkit, tmp_path_factory):
    """kernel_tiling/kernel_tiling.h (one per checkout) and each kernel's per-op tiling header."""
    out = tmp_path_factory.mktemp("cann_generated")
    cann_tiling_headers.write_kernel_tiling_header(asc_devkit, out)
    headers = {}
    for kernel in KERNELS:
        text = cann_tiling_headers.op_tiling_header(asc_devkit, cann_tiling_headers.op_type_of(kernel),
                                                    cann_tiling_headers.tiling_struct_of(kernel),
                                                    no_register="REGISTER_NONE_TILING" in kernel.read_text())
        headers[kernel.name] = out / f"{kernel.stem}_tiling_header.h"
        headers[kernel.name].write_text(text)
    return out, headers


def tiling_keys(kernel):
    """The keys the kernel branches on; CANN builds the kernel once per key (-DTILING_KEY_VAR=<key>UL)."""
    keys = sorted({int(k) for k in re.findall(r"TILING_KEY_IS\(\s*(\d+)[uUlL]*\s*\)", kernel.read_text())})
    return keys or [None]


def kernel_cases():
    return [pytest.param(kernel, key, mode, id=f"{kernel.stem}-key{key}-{mode}")
            for kernel in KERNELS for key in tiling_keys(kernel) for mode in MODE_FLAGS]


def compile_kernel(asc_devkit, generated, kernel, mode, key=None, source=None):
    """g++ -fsyntax-only of a kernel (or of `source`, a copy of it).

    Returns (returncode, our error lines, stderr); errors of ADDRESS_SPACE_OVERLOAD are not ours."""
    gen_dir, headers = generated
    tiling_header = headers[kernel.name]
    if mode == "npu":
        # Before v9.0.1 the generated header defines __aicore__ as bisheng's attribute syntax
        # "[aicore]" without an #ifndef; g++ cannot parse it, so the device build reads it as ours.
        text = tiling_header.read_text().replace("#define __aicore__ [aicore]", "#define __aicore__")
        tiling_header = tiling_header.with_name(tiling_header.stem + "_npu.h")
        tiling_header.write_text(text)
    cmd = ["g++", "-std=c++17", "-fsyntax-only", "-x", "c++", "-fmax-errors=0"]
    cmd += [f"-I{asc_devkit / d}" for d in TIKCFW_DIRS] + [f"-I{gen_dir}"]
    cmd += ARCH_DEFINES + MODE_FLAGS[mode] + ["-include", str(tiling_header)]
    if key is not None:
        cmd.append(f"-DTILING_KEY_VAR={key}UL")
    if "KERNEL_TYPE_MIX" in kernel.read_text():
        cmd.append(MIX_CORE_DEFINE)
    cmd.append(str(source or kernel))
    result = subprocess.run(cmd, capture_output=True, text=True)
    errors = [line for line in result.stderr.splitlines() if ": error:" in line or ": fatal error:" in line]
    ours = [line for line in errors if not ADDRESS_SPACE_OVERLOAD.search(line)]
    return (result.returncode if ours else 0), ours, result.stderr


def test_every_kernel_and_host_source_is_covered():
    assert KERNELS and HOSTS, "no op_kernel/*.cpp or op_host/*.cpp found"
    for kernel in KERNELS:
        cann_tiling_headers.tiling_struct_of(kernel)  # each kernel names its tiling struct


@pytest.mark.parametrize("kernel,key,mode", kernel_cases())
def test_kernel_compiles_against_the_real_ascendc_headers(asc_devkit, generated, kernel, key, mode):
    returncode, errors, stderr = compile_kernel(asc_devkit, generated, kernel, mode, key)
    assert returncode == 0 and not errors, "\n".join(errors[:20]) or stderr[-3000:]


@pytest.mark.parametrize("host", HOSTS, ids=[h.stem for h in HOSTS])
def test_host_compiles_against_metadef(asc_devkit, metadef, host):
    cmd = ["g++", "-std=c++17", "-fsyntax-only", "-DNO_OPERATOR_IMPL",
           f"-I{metadef / 'inc' / 'external'}", f"-I{metadef / 'inc' / 'external' / 'asc'}", f"-I{metadef / 'inc'}",
           f"-I{asc_devkit / 'include' / 'utils'}", f"-I{HOST_STUBS}", str(host)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]


# ---------------------------------------------------------------- the check has teeth
def _tbuf_init_as_queue(text):
    """A TBuf given the queue form of InitBuffer (a buffer count before the size)."""
    for name in re.findall(r"\bTBuf<[^;>]*>\s+(\w+)\s*;", text):
        mutated, count = re.subn(rf"InitBuffer\(\s*{name}\s*,", f"InitBuffer({name}, 2,", text, count=1)
        if count:
            return mutated
    return text


BRACES = r"\{(?:[^{}]|\{[^{}]*\})*\}"  # a brace-init list, one level of nested braces (V{})
COPY_INIT = r"(\bDataCopyExtParams(?:\s+\w+)?\s*)"  # a named object or a temporary
PAD_INIT = r"(\bDataCopyPadExtParams<[^<>;]+>(?:\s+\w+)?\s*)"

# name: (mutation of a source text (returns it unchanged where it does not apply), what the error names)
MUTATIONS = {
    "wrong_round_mode": (lambda t: re.sub(r"RoundMode::CAST_\w+", "RoundMode::CAST_NEAREST", t, count=1),
                         "CAST_NEAREST"),
    "wrong_hard_event": (lambda t: re.sub(r"HardEvent::\w+", "HardEvent::V_SCALAR", t, count=1), "V_SCALAR"),
    "copy_params_seven_args": (lambda t: re.sub(COPY_INIT + r"\{", r"\g<1>{0, 0, ", t, count=1), "DataCopyExtParams"),
    "copy_params_partial_init": (lambda t: re.sub(COPY_INIT + BRACES, r"\g<1>{1, 32}", t, count=1),
                                 "DataCopyExtParams"),
    "pad_params_partial_init": (lambda t: re.sub(PAD_INIT + BRACES, r"\g<1>{false, 0}", t, count=1),
                                "DataCopyPadExtParams"),
    "tbuf_given_queue_init": (_tbuf_init_as_queue, "InitBuffer"),
}


def own_sources(kernel):
    """The kernel file and the op_kernel/ headers it includes, directly or not, in include order."""
    order, pending = [], [kernel]
    while pending:
        path = pending.pop(0)
        if path in order or not path.is_file():
            continue
        order.append(path)
        pending += [kernel.parent / name for name in re.findall(r'#include\s+"([^"/]+)"', path.read_text())]
    return order


def broken_copy(kernel, mutation, directory):
    """Copies op_kernel/ to `directory` and applies the mutation to the first of the kernel's own
    sources it changes; returns (copied kernel, changed file), or (None, None)."""
    copy = directory / "op_kernel"
    shutil.copytree(kernel.parent, copy)
    mutate, _ = MUTATIONS[mutation]
    for path in [copy / p.name for p in own_sources(kernel)]:
        text = path.read_text()
        mutated = mutate(text)
        if mutated != text:
            path.write_text(mutated)
            return copy / kernel.name, path
    return None, None


def test_every_mutation_applies_to_some_kernel(tmp_path):
    for mutation in MUTATIONS:
        applied = [k for k in KERNELS if broken_copy(k, mutation, tmp_path / mutation / k.stem)[0] is not None]
        assert applied, f"mutation {mutation} matches no kernel: the negative check would test nothing"


@pytest.mark.parametrize("mode", list(MODE_FLAGS))
@pytest.mark.parametrize("mutation", list(MUTATIONS))
@pytest.mark.parametrize("kernel", KERNELS, ids=[k.stem for k in KERNELS])
def test_a_broken_kernel_fails_against_the_real_headers(asc_devkit, generated, kernel, mutation, mode, tmp_path):
    source, changed = broken_copy(kernel, mutation, tmp_path)
    if source is None:
        pytest.skip(f"{kernel.name} does not use what {mutation} breaks")
    returncode, errors, stderr = compile_kernel(asc_devkit, generated, kernel, mode, tiling_keys(kernel)[0], source)
    assert returncode != 0, f"{mutation} of {changed.name} compiled against the real headers"
    # the diagnostics lead to the broken line (directly, or via "required from here" where a
    # static_assert of asc-devkit refuses it) and name what was broken
    assert str(changed) in stderr and MUTATIONS[mutation][1] in stderr, "\n".join(errors[:10])


# ---------------------------------------------------------------- the stand-ins stay declarations
def _declared_intrinsics():
    text = (KERNEL_STUBS / "cce_builtins.h").read_text()
    names = set(re.findall(r"ASC_(?:INTRINSIC|GETTER)\((\w+)\)", text))
    names |= set(re.findall(r"^\s*(?:u?int\d+_t|half|void)\s+\*?(\w+)\(", text, flags=re.M))
    return names


def test_kernels_call_no_intrinsic_directly():
    """The stand-ins accept intrinsics with any arguments (their signatures are bisheng's); a
    kernel calling one directly would go unchecked, so our kernels call only the AscendC API."""
    names = _declared_intrinsics()
    assert {"set_flag", "copy_gm_to_ubuf", "vadd", "pipe_barrier"} <= names
    for path in sorted((ASCENDC / "op_kernel").iterdir()):
        if path.suffix not in (".cpp", ".h"):
            continue
        code = re.sub(r"//[^\n]*|/\*.*?\*/", "", path.read_text(), flags=re.S)
        called = sorted(n for n in names if re.search(rf"(?<![\w.:>]){n}\s*\(", code))
        assert not called, f"{path.name} calls intrinsics {called} directly; use the AscendC API"


def test_stand_ins_define_no_code_swallowing_macro():
    """Function-like macros in the stand-ins are only the declaration helpers and bisheng's pipe
    annotations (which annotate intrinsic declarations, not code)."""
    allowed = {"ASC_INTRINSIC", "ASC_GETTER", "ASC_CPU_HOOK", "__in_pipe__", "__out_pipe__", "__inout_pipe__"}
    for path in STUBS.rglob("*.h"):
        macros = set(re.findall(r"^\s*#\s*define\s+(\w+)\(", path.read_text(), flags=re.M))
        assert macros <= allowed, f"{path.relative_to(STUBS)} defines {sorted(macros - allowed)}"

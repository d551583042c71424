"""CANN's build rules for the AscendC operator, as tests.

Each rule is checked on our operator's own source and, where the twin enforces it, with
probe kernels that break it (compiled here with g++ against kernels/ascendc/twin):

* TILING_KEY_IS arguments are numeric literals after macro expansion (twin: compile error);
* a kernel that calls SyncAll is not KERNEL_TYPE_AIV_ONLY / AIC_ONLY (twin: the launch fails);
* the Ascend registration name equals the ``func`` given to ops.Custom (test);
* build.sh builds every SoC the OpDef lists that the CANN supports (test: build.sh against a fake CANN);
* no deprecated op-definition call (test on the OpDef source);
* no value-returning function falls off its end (twin: compile error, whatever the flags);
* the twin libraries build with -Wall -Wextra and no warning.

Sources are cited in kernels/ascendc/README.md ("CANN build rules").
"""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ms_groupnorm.backends import ascend
import twin

ASCENDC = twin.ascendc_dir()
OP_HOST = ASCENDC / "op_host" / "group_norm_grad_ms.cpp"
OP_KERNEL = ASCENDC / "op_kernel" / "group_norm_grad_ms.cpp"
BUILD_SH = ASCENDC / "build.sh"
CXX = ["g++", "-std=c++17", "-O0", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0", f"-I{ASCENDC / 'twin'}",
       f"-I{ASCENDC / 'op_kernel'}"]
KEY_MESSAGE = "TILING_KEY_IS(key): after macro expansion the key must be a non-negative decimal literal"


def compile_only(source, tmp_path, name="probe.cpp"):
    path = tmp_path / name
    path.write_text(source)
    return subprocess.run(CXX + ["-fsyntax-only", str(path)], capture_output=True, text=True)


# ---------------------------------------------------------------- TILING_KEY_IS
KEY_PROBE = """
#include "kernel_operator.h"
{prelude}
extern "C" __global__ __aicore__ void probe(GM_ADDR out) {{
  if (TILING_KEY_IS({key})) {{
    AscendC::GlobalTensor<float> gm;
    gm.SetGlobalBuffer(reinterpret_cast<float *>(out), 1);
    gm.SetValue(0, 1.0f);
  }}
}}
"""

REFUSED_KEYS = {
    "constexpr_name": ("constexpr int64_t KEY_FP32 = 1;", "KEY_FP32"),
    "parenthesised_macro": ("#define KEY_FP32 (1)", "KEY_FP32"),
    "expression": ("", "1 + 1"),
    "hex": ("", "0x10"),
    "negative": ("", "-1"),
    "cast": ("", "static_cast<uint64_t>(1)"),
    "enum": ("enum Key { KEY_A = 1 };", "KEY_A"),
}
ACCEPTED_KEYS = {
    "literal": ("", "1"),
    "suffixed_literal": ("", "7UL"),
    "macro": ("#define KEY_FP32 3", "KEY_FP32"),
    "macro_of_macro": ("#define KEY_BASE 12\n#define KEY_FP32 KEY_BASE", "KEY_FP32"),
}


@pytest.mark.default_sample(case=["constexpr_name", "expression"])
@pytest.mark.parametrize("case", list(REFUSED_KEYS))
def test_twin_refuses_a_tiling_key_that_is_not_a_numeric_literal(case, tmp_path):
    prelude, key = REFUSED_KEYS[case]
    result = compile_only(KEY_PROBE.format(prelude=prelude, key=key), tmp_path)
    assert result.returncode != 0
    assert KEY_MESSAGE in result.stderr


@pytest.mark.default_sample(case=["macro_of_macro"])
@pytest.mark.parametrize("case", list(ACCEPTED_KEYS))
def test_twin_accepts_literal_tiling_keys_and_macros_expanding_to_them(case, tmp_path):
    prelude, key = ACCEPTED_KEYS[case]
    result = compile_only(KEY_PROBE.format(prelude=prelude, key=key), tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.parametrize("key,accepted", [("1", True), ("KEY_FP32", False)])
def test_twin_applies_the_literal_rule_to_per_key_kernel_types(key, accepted, tmp_path):
    source = ("#include \"kernel_operator.h\"\nconstexpr int64_t KEY_FP32 = 1;\n"
              "extern \"C\" __global__ __aicore__ void probe() {\n"
              f"  KERNEL_TASK_TYPE({key}, KERNEL_TYPE_MIX_AIV_1_0);\n}}\n")
    result = compile_only(source, tmp_path)
    assert (result.returncode == 0) == accepted, result.stderr[-2000:]
    if not accepted:
        assert "KERNEL_TASK_TYPE(key, type): after macro expansion the key must be" in result.stderr


def test_kernel_entry_uses_numeric_tiling_keys(tmp_path):
    """The operator's kernel entry compiles against the twin, whose TILING_KEY_IS refuses
    anything but numeric literals (CANN: 'can not be processed as numeric variables')."""
    result = subprocess.run(CXX + ["-fsyntax-only", str(OP_KERNEL)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    keys = re.findall(r"TILING_KEY_IS\(([^)]*)\)", OP_KERNEL.read_text())
    assert keys and all(re.fullmatch(r"\d+", k) for k in keys), keys


# ---------------------------------------------------------------- DMA parameter classes
# asc-devkit's DataCopyExtParams / DataCopyPadExtParams<T> are constructor classes with a default
# constructor and one taking every field (include/basic_api/kernel_struct_data_copy.h, dav-c220
# branch): a brace-init with some of the fields names no constructor and does not compile.
PARAMS_PROBE = """
#include "kernel_operator.h"
using namespace AscendC;
void probe(uint32_t len) {{
  {statement}
  (void)len;
}}
"""
PARAMS_REFUSED = {
    "copy_two_fields": "DataCopyExtParams copy{1, len};",
    "copy_four_fields": "DataCopyExtParams copy{1, len, 0, 0};",
    "copy_seven_fields": "DataCopyExtParams copy{1, len, 0, 0, 0, 0, 0};",
    "pad_two_fields": "DataCopyPadExtParams<float> pad{false, 0};",
    "pad_three_fields": "DataCopyPadExtParams<float> pad{false, 0, 0};",
}
PARAMS_ACCEPTED = {
    "copy_default": "DataCopyExtParams copy; DataCopyExtParams empty{};",
    "copy_all_fields": "DataCopyExtParams copy{1, len, 0, 0, 0};",
    "pad_default": "DataCopyPadExtParams<float> pad; DataCopyPadExtParams<float> empty{};",
    "pad_all_fields": "DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};",
}


@pytest.mark.default_sample(case=["pad_three_fields"])
@pytest.mark.parametrize("case", list(PARAMS_REFUSED))
def test_twin_refuses_a_partial_brace_init_of_the_dma_parameter_classes(case, tmp_path):
    result = compile_only(PARAMS_PROBE.format(statement=PARAMS_REFUSED[case]), tmp_path)
    assert result.returncode != 0
    assert "no matching function for call to" in result.stderr, result.stderr[-2000:]


@pytest.mark.default_sample(case=["pad_all_fields"])
@pytest.mark.parametrize("case", list(PARAMS_ACCEPTED))
def test_twin_accepts_the_dma_parameter_classes_with_no_or_all_fields(case, tmp_path):
    result = compile_only(PARAMS_PROBE.format(statement=PARAMS_ACCEPTED[case]), tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]


# ---------------------------------------------------------------- a value-returning function's end
# Flowing off the end of a non-void function is undefined (C++17 [stmt.return] p2); the twin's
# kernel_operator.h makes -Wreturn-type an error for every file that includes it, whatever its
# flags (the sync-mutation builds use none), so a deleted `return que.DeQue<T>();` does not build.
RETURN_PROBE = """
#include "kernel_operator.h"
using namespace AscendC;
__aicore__ inline LocalTensor<float> Take(TQue<QuePosition::VECIN, 1> &que, bool ready) {{
  if (ready) return que.template DeQue<float>();
  {tail}
}}
extern "C" __global__ __aicore__ void probe(TQue<QuePosition::VECIN, 1> &que) {{ Take(que, true); }}
"""


@pytest.mark.parametrize("tail,builds", [("", False), ("return que.template DeQue<float>();", True)],
                         ids=["falls_off_the_end", "returns"])
def test_twin_refuses_a_function_that_falls_off_its_end(tail, builds, tmp_path):
    source = tmp_path / "probe.cpp"
    source.write_text(RETURN_PROBE.format(tail=tail))
    # an object, not -fsyntax-only: g++ finds the missing return in the flow analysis of emitted code
    result = subprocess.run(CXX + ["-c", str(source), "-o", str(tmp_path / "probe.o")], capture_output=True, text=True)
    assert (result.returncode == 0) == builds, result.stderr[-2000:]
    if not builds:
        assert "-Werror=return-type" in result.stderr, result.stderr[-2000:]


# ---------------------------------------------------------------- kernel type vs SyncAll
LAUNCH_PROBE = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_operator.h"

#define PROBE_KEY_MIX 1

// Each probe: every block writes its index, then (maybe) SyncAll, then block 0 writes a sum.
template <typename Declare>
void Body(GM_ADDR out, Declare declare, bool sync) {
  declare();
  AscendC::GlobalTensor<float> gm;
  gm.SetGlobalBuffer(reinterpret_cast<float *>(out), 8);
  gm.SetValue(AscendC::GetBlockIdx(), 1.0f);
  if (sync) AscendC::SyncAll();
}

extern "C" __global__ __aicore__ void aiv_only(GM_ADDR out) {
  Body(out, [] { KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); }, true);
}
extern "C" __global__ __aicore__ void aic_only(GM_ADDR out) {
  Body(out, [] { KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY); }, true);
}
extern "C" __global__ __aicore__ void aiv_only_without_syncall(GM_ADDR out) {
  Body(out, [] { KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); }, false);
}
extern "C" __global__ __aicore__ void mix_aiv_1_0(GM_ADDR out) {
  Body(out, [] { KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0); }, true);
}
extern "C" __global__ __aicore__ void undeclared(GM_ADDR out) { Body(out, [] {}, true); }
// The per-key type wins over the default (asc-devkit: KERNEL_TASK_TYPE has priority).
extern "C" __global__ __aicore__ void per_key_mix(GM_ADDR out) {
  Body(out, [] {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    KERNEL_TASK_TYPE(PROBE_KEY_MIX, KERNEL_TYPE_MIX_AIV_1_0);
  }, true);
}

int main(int argc, char **argv) {
  const std::string name = argv[1];
  const int64_t key = std::atoll(argv[2]);
  void (*kernel)(GM_ADDR) = nullptr;
  if (name == "aiv_only") kernel = aiv_only;
  if (name == "aic_only") kernel = aic_only;
  if (name == "aiv_only_without_syncall") kernel = aiv_only_without_syncall;
  if (name == "mix_aiv_1_0") kernel = mix_aiv_1_0;
  if (name == "undeclared") kernel = undeclared;
  if (name == "per_key_mix") kernel = per_key_mix;
  if (kernel == nullptr) return 3;
  std::vector<float> out(8, 0.0f);
  twin::Config config;
  config.coreNum = 8;
  std::string error;
  const int status = twin::Launch(config, 4, key, {{out.data(), out.size() * sizeof(float), "out"}},
                                  [&] { kernel(reinterpret_cast<GM_ADDR>(out.data())); }, &error);
  std::printf("%s\n", status == 0 ? "launch ok" : error.c_str());
  return status;
}
"""


@pytest.fixture(scope="module")
def launch_probe(tmp_path_factory):
    """The kernel-type probes linked with the twin runtime (one build for the module)."""
    work = tmp_path_factory.mktemp("kernel_type_probe")
    source = work / "probe.cpp"
    source.write_text(LAUNCH_PROBE)
    binary = work / "probe"
    result = subprocess.run(CXX + [str(source), str(ASCENDC / "twin" / "twin_runtime.cc"),
                                   str(ASCENDC / "twin" / "twin_pipes.cc"), "-o", str(binary)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]

    def run(name, key=0):
        done = subprocess.run([str(binary), name, str(key)], capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout.strip()

    return run


@pytest.mark.parametrize("name,declared", [("aiv_only", "KERNEL_TYPE_AIV_ONLY"),
                                           ("aic_only", "KERNEL_TYPE_AIC_ONLY"),
                                           ("per_key_mix", "KERNEL_TYPE_AIV_ONLY")])
def test_twin_fails_syncall_under_aiv_only_or_aic_only(launch_probe, name, declared):
    status, message = launch_probe(name, key=0)  # per_key_mix: key 0 has no per-key type -> the default
    assert status == 1
    assert f"SyncAll in a kernel declared {declared}" in message
    assert "cross-core scheduler" in message


@pytest.mark.parametrize("name,key", [("mix_aiv_1_0", 0), ("undeclared", 0), ("per_key_mix", 1),
                                      ("aiv_only_without_syncall", 0)])
def test_twin_allows_syncall_under_mix_or_undeclared_type(launch_probe, name, key):
    assert launch_probe(name, key) == (0, "launch ok")


def test_kernel_entry_declares_a_type_that_allows_syncall():
    """The kernel runs SyncAll whenever dgamma/dbeta are wanted; on the twin that launch
    fails unless the declared kernel type allows the hardware barrier."""
    source = OP_KERNEL.read_text()
    declared = re.findall(r"KERNEL_TASK_TYPE_DEFAULT\((\w+)\)", source)
    assert declared in ([], ["KERNEL_TYPE_MIX_AIV_1_0"]), declared
    rng = np.random.default_rng(0)
    N, C, HxW, G = 2, 8, 33, 2
    x = rng.standard_normal((N, C, HxW)).astype(np.float32)
    dy = rng.standard_normal((N, C, HxW)).astype(np.float32)
    mean = rng.standard_normal((N, G)).astype(np.float32)
    rstd = rng.uniform(0.5, 2, (N, G)).astype(np.float32)
    # dgamma/dbeta wanted: phase 1, SyncAll, stage 2.
    twin.twin_backward(dy, x, mean, rstd, None, G, core_num=4)


# ---------------------------------------------------------------- registration name == func
def test_registration_name_equals_func(monkeypatch, tmp_path):
    """MindSpore's docs ("Name Consistency") and its aclnn tests register an Ascend C op
    under exactly the name given as ``func`` (e.g. CustomRegOp("aclnnAddCustom") with
    func="aclnnAddCustom")."""
    from mindspore import ops
    made = {}
    monkeypatch.setenv("ASCEND_OPP_PATH", str(tmp_path / "opp"))  # built only inside CANN's environment (<root>/opp)

    def fake_custom(func, out_shape=None, out_dtype=None, func_type=None, bprop=None, reg_info=None):
        made.update(func=func, func_type=func_type, reg_info=reg_info)
        return object()

    monkeypatch.setattr(ops, "Custom", fake_custom)
    ascend.backward_custom()
    assert made["func_type"] == "aot"
    func = made["func"].rsplit(":", 1)[-1]  # a "<infer>.cc:Name" func names the op after the colon
    assert made["reg_info"]["op_name"] == func == ascend.GROUP_NORM_GRAD_MS.aclnn_func == "aclnn" + ascend.GROUP_NORM_GRAD_MS.op_type


# ---------------------------------------------------------------- build.sh and the OpDef's SoCs
def add_config_socs():
    return re.findall(r'AddConfig\("(\w+)"', OP_HOST.read_text())


@pytest.fixture
def fake_cann(tmp_path):
    """A CANN directory and a python whose MindSpore custom_compiler records its arguments."""
    cann = tmp_path / "cann"
    cann.mkdir()
    (cann / "set_env.sh").write_text("# fake\n")
    ms_dir = tmp_path / "mindspore"
    compiler = ms_dir / "lib" / "plugin" / "ascend" / "custom_compiler"
    compiler.mkdir(parents=True)
    record = tmp_path / "argv.txt"
    (compiler / "setup.py").write_text(
        f"import sys\nopen({str(record)!r}, 'w').write('\\n'.join(sys.argv[1:]))\n")
    python = tmp_path / "python"
    python.write_text(textwrap.dedent(f"""\
        #!/usr/bin/env bash
        if [ "$1" = "-c" ]; then echo {ms_dir}; exit 0; fi
        exec {sys.executable} "$@"
        """))
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("SOC_VERSION",)}
    env.update(ASCEND_HOME_PATH=str(cann), PYTHON=str(python), INSTALL_DIR=str(tmp_path / "opp"),
               BUILD_DIR=str(tmp_path / "build"))
    return env, record


def test_build_sh_builds_every_soc_of_the_op_definition(fake_cann):
    env, record = fake_cann
    socs = add_config_socs()
    assert {"ascend910b", "ascend910_93", "ascend950"} <= set(socs)
    for soc in socs:  # a CANN that supports every SoC of the OpDefs (see test_ascend_build_socs.py)
        (Path(env["ASCEND_HOME_PATH"]) / "opp" / "built-in" / "op_impl" / "ai_core" / "tbe" / "config" / soc).mkdir(
            parents=True)
    result = subprocess.run(["bash", str(BUILD_SH)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    argv = record.read_text().split("\n")
    soc_arg = argv[argv.index("--soc_version") + 1]
    assert soc_arg.split(";") == socs  # MindSpore's custom_compiler separates SoCs with ';'


def test_build_sh_without_cann_exits_2_with_a_message(tmp_path):
    env = dict(os.environ, ASCEND_HOME_PATH=str(tmp_path / "no_cann"))
    result = subprocess.run(["bash", str(BUILD_SH)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "CANN was not found" in result.stderr


# ---------------------------------------------------------------- deprecated op-definition calls
# OpParamDef/OpDef calls marked 废弃 (deprecated) in asc-devkit docs/zh/api/Utils-API/原型注册与管理/
# (UnknownShapeFormat: "deprecated and will be removed; -Werror -Wall builds fail; use Format").
DEPRECATED_OPDEF_CALLS = ("UnknownShapeFormat",)


def test_op_definition_uses_no_deprecated_call():
    source = OP_HOST.read_text()
    used = [name for name in DEPRECATED_OPDEF_CALLS if re.search(rf"\.{name}\s*\(", source)]
    assert used == []


# ---------------------------------------------------------------- check_on_ascend.sh
CHECK_SH = ASCENDC / "check_on_ascend.sh"


def test_check_on_ascend_without_cann_exits_2_with_a_message(tmp_path):
    env = dict(os.environ, ASCEND_HOME_PATH=str(tmp_path / "no_cann"))
    result = subprocess.run(["bash", str(CHECK_SH)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "CANN was not found" in result.stderr
    assert result.stdout.strip().splitlines()[-1] == "VERDICT: NOT RUN (no CANN)"


def test_check_on_ascend_stops_with_a_verdict_when_the_build_fails(fake_cann, tmp_path):
    env, record = fake_cann
    compiler_setup = next((tmp_path / "mindspore").rglob("setup.py"))
    compiler_setup.write_text("import sys\nsys.exit('custom_compiler: build failed')\n")
    result = subprocess.run(["bash", str(CHECK_SH)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stdout.strip().splitlines()[-1].startswith("VERDICT: FAIL (build.sh could not build")


@pytest.mark.exhaustive
@pytest.mark.parametrize("which", ["backward", "forward", "probes"])
def test_the_twin_libraries_build_without_a_warning(which):
    """Each twin library, and so every kernel header compiled into it, passes g++ with the twin's
    flags (-Wall -Wextra) as errors: a warning there (an unused parameter a merge left behind, a
    narrowing) would otherwise pass unseen, since the twin's build shows its output only on failure."""
    from ms_groupnorm.backends import twin_build
    _, sources = twin_build.LIBRARIES[which]
    flags = [f for f in twin_build._TWIN_FLAGS if f != "-shared"]
    command = ["g++", *flags, "-fsyntax-only", "-Werror", f"-I{ASCENDC / 'twin'}", f"-I{ASCENDC / 'op_kernel'}",
               *[str(ASCENDC / s) for s in sources]]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]

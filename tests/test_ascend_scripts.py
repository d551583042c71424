"""kernels/ascendc/check_on_ascend.sh and build.sh against a fake CANN and a fake python.

The fake CANN's set_env.sh appends to variables that are unset, as CANN's does (and dies
under ``set -u`` if sourced there); the fake python answers build.sh's questions (where is
MindSpore, which SoCs does its custom_compiler accept), stands in for custom_compiler's
setup.py (records its arguments, fails if the vendor directory is already there, then
"installs" one) and for pytest (records the environment the device tests would get)."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ASCENDC = Path(__file__).resolve().parent.parent / "kernels" / "ascendc"
# The kernel sources CANN's build compiles, one per operator of op_host/ (build.sh checks).
KERNELS = ("group_norm_grad_ms.cpp", "group_norm_silu_ms.cpp", "group_norm_silu_grad_ms.cpp")
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

FAKE_PYTHON = """#!/usr/bin/env bash
case "$1" in
  -c) echo "$FAKE_MS_DIR" ;;
  -) shift; exec "$REAL_PYTHON" - "$@" ;;
  setup.py)
    echo "$@" > "$FAKE_LOG/setup_args"
    while [ $# -gt 0 ]; do
      case "$1" in --install_path) INSTALL="$2"; shift ;; --vendor_name) VENDOR="$2"; shift ;; esac; shift
    done
    if [ -e "$INSTALL/vendors/$VENDOR" ]; then echo "installer: vendor exists, asking" >&2; exit 7; fi
    mkdir -p "$INSTALL/vendors/$VENDOR/op_api/lib" ;;
  -m) env > "$FAKE_LOG/pytest_env"; echo "1 passed in 0.01s" ;;
esac
"""


@pytest.fixture
def fake(tmp_path):
    cann = tmp_path / "cann"
    cann.mkdir()
    # As CANN's: appends to LD_LIBRARY_PATH/PYTHONPATH without a default.
    (cann / "set_env.sh").write_text('export LD_LIBRARY_PATH=/fake/cann/lib64:$LD_LIBRARY_PATH\n'
                                     'export PYTHONPATH=/fake/cann/python:$PYTHONPATH\n'
                                     'export ASCEND_OPP_PATH=/fake/cann/opp\n')
    (cann / "bin").mkdir()
    (cann / "bin" / "setenv.bash").write_text("")
    ms_dir = tmp_path / "mindspore"
    compiler = ms_dir / "lib" / "plugin" / "ascend" / "custom_compiler"
    compiler.mkdir(parents=True)
    (compiler / "setup.py").write_text(
        'support_soc_version = {"ascend310p", "ascend310b", "ascend910", "ascend910b", "ascend910_93"}\n')
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    log = tmp_path / "log"
    log.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ASCEND_HOME_PATH": str(cann),
           "PYTHON": str(python), "FAKE_MS_DIR": str(ms_dir), "FAKE_LOG": str(log), "REAL_PYTHON": sys.executable,
           "BUILD_DIR": str(tmp_path / "work")}
    return {"env": env, "log": log, "compiler": compiler, "tmp": tmp_path}


def scripts_copy(tmp, kernels=KERNELS):
    """<tmp>/repo/kernels/ascendc with the real scripts and op_host/, and an op_kernel/ of
    empty files named ``kernels`` (nothing compiles here): the scripts are checked whatever
    state this tree's kernel sources are in."""
    root = Path(tmp) / "repo" / "kernels" / "ascendc"
    if not root.exists():
        shutil.copytree(ASCENDC / "op_host", root / "op_host")
        (root / "op_kernel").mkdir()
        for script in ("build.sh", "check_on_ascend.sh"):
            shutil.copy(ASCENDC / script, root / script)
        for name in kernels:
            (root / "op_kernel" / name).write_text("")
    return root


def run(script, env, cwd, root=None):
    # LD_LIBRARY_PATH and PYTHONPATH are deliberately absent from env.
    root = root or scripts_copy(cwd)
    return subprocess.run(["bash", str(root / script)], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_check_on_ascend_survives_canns_set_env_and_gives_the_tests_absolute_paths(fake):
    env = dict(fake["env"], INSTALL_DIR="relative/opp")
    result = run("check_on_ascend.sh", env, fake["tmp"])
    assert "VERDICT: PASS" in result.stdout, result.stdout + result.stderr
    assert result.returncode == 0
    seen = dict(line.split("=", 1) for line in (fake["log"] / "pytest_env").read_text().splitlines() if "=" in line)
    vendor = fake["tmp"] / "relative" / "opp" / "vendors" / "ms_groupnorm"
    assert seen["ASCEND_CUSTOM_OPP_PATH"].split(":")[0] == str(vendor)
    assert f"{vendor}/op_api/lib" in seen["LD_LIBRARY_PATH"].split(":")
    assert "/fake/cann/lib64" in seen["LD_LIBRARY_PATH"]  # CANN's environment was sourced
    assert os.path.isabs(seen["MS_COMPILER_CACHE_PATH"])
    assert seen["MS_GROUPNORM_REQUIRE_ASCEND"] == "1"


def test_build_replaces_an_existing_vendor_directory_and_passes_an_absolute_install_path(fake):
    install = fake["tmp"] / "rel"
    stale = install / "vendors" / "ms_groupnorm" / "stale.txt"
    stale.parent.mkdir(parents=True)
    stale.write_text("from an earlier install")
    result = run("build.sh", dict(fake["env"], INSTALL_DIR="rel"), fake["tmp"])
    assert result.returncode == 0, result.stdout + result.stderr
    args = (fake["log"] / "setup_args").read_text().split()
    assert args[args.index("--install_path") + 1] == str(install)
    assert not stale.exists() and (install / "vendors" / "ms_groupnorm").is_dir()
    assert f"ASCEND_CUSTOM_OPP_PATH={install}/vendors/ms_groupnorm" in result.stdout
    assert f"LD_LIBRARY_PATH={install}/vendors/ms_groupnorm/op_api/lib" in result.stdout


def test_build_refuses_socs_the_wheels_custom_compiler_does_not_accept(fake):
    (fake["compiler"] / "setup.py").write_text(
        'support_soc_version = {"ascend310p", "ascend310b", "ascend910", "ascend910b", "ascend910c"}\n')
    result = run("build.sh", fake["env"], fake["tmp"])
    assert result.returncode == 2
    assert "does not accept the SoC" in result.stderr and "'ascend910_93'" in result.stderr
    assert "MindSpore >= 2.7.1" in result.stderr
    assert not (fake["log"] / "setup_args").exists()


def test_build_builds_and_installs_all_three_operators(fake):
    """GroupNormGradMs, GroupNormSiluMs and the fused backward GroupNormSiluGradMs, in one
    package from op_host/ and op_kernel/, for the SoCs their OpDefs list."""
    root = scripts_copy(fake["tmp"])
    result = run("build.sh", fake["env"], fake["tmp"], root)
    assert result.returncode == 0, result.stdout + result.stderr
    installed = re.search(r"Installed:([A-Za-z ]*) \(SoCs: ([a-z0-9_;]+)\)", result.stdout)
    assert sorted(installed.group(1).split()) == ["GroupNormGradMs", "GroupNormSiluGradMs", "GroupNormSiluMs"]
    assert installed.group(2) == "ascend910b;ascend910_93"
    args = (fake["log"] / "setup_args").read_text().split()
    # This fake CANN cannot say whether it knows ascend950, so the build reads a copy of op_host/
    # without it, op_kernel/ beside it (tests/test_ascend_build_socs.py).
    sources = fake["tmp"] / "work" / "sources"
    assert args[args.index("-o") + 1] == str(sources / "op_host") and args[args.index("-k") + 1] == str(
        sources / "op_kernel")


@pytest.mark.parametrize("missing", KERNELS)
def test_build_refuses_an_operator_without_its_kernel_source(fake, missing):
    root = scripts_copy(fake["tmp"], [k for k in KERNELS if k != missing])
    result = run("build.sh", fake["env"], fake["tmp"], root)
    assert result.returncode == 2
    assert f"has no kernel source op_kernel/{missing}" in result.stderr
    assert not (fake["log"] / "setup_args").exists()

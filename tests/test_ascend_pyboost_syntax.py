"""The Ascend PyNative module's C++ (ms_groupnorm/_native/group_norm_ascend_pyboost.cc)
compiles with ``g++ -fsyntax-only`` as CustomOpBuilder(backend="Ascend") would compile it:
its include paths and flags (-DCUSTOM_ASCEND_OP, so ms_extension/all.h pulls in
AclnnOpRunner and MindSpore's aclnn launch machinery), against the MindSpore wheel's own
headers, with declaration-only stand-ins for the CANN headers (tests/ascend_stubs) and the
aclnn headers CANN's build generates from op_host's OpDefs (tests/aclnn_header.py).

The module checks at compile time that the arguments it launches each aclnn API with are
exactly the parameters of that header (tensors, attributes, outputs; order and C type), so
an attribute added to the OpDef without the module following fails here.

Slow (each compile of MindSpore's extension headers takes ~40 s of CPU)."""
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest

import aclnn_header
import ascend_fake_cann
from ms_groupnorm.backends import ascend_pyboost

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def compile_command(cann_root, vendor, monkeypatch):
    from mindspore import ops

    monkeypatch.setenv("ASCEND_OPP_PATH", str(cann_root / "opp"))
    builder = ops.CustomOpBuilder("ms_groupnorm_ascend_syntax", [str(ascend_pyboost.SOURCE)], backend="Ascend",
                                  include_paths=[str(vendor / "op_api" / "include")])
    flags = [f for f in builder.get_cflags() if f not in ("-O2", "-pie")]
    includes = [f"-I{p}" for p in builder.get_include_paths()] + [f"-I{sysconfig.get_paths()['include']}"]
    return ["g++", "-fsyntax-only", "-w"] + flags + includes + [str(ascend_pyboost.SOURCE)]


def run(command):
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


@pytest.mark.exhaustive
def test_module_compiles_against_wheel_headers_and_generated_aclnn_headers(tmp_path, monkeypatch):
    cann_root, vendor = ascend_fake_cann.make(tmp_path)
    command = compile_command(cann_root, vendor, monkeypatch)
    assert "-DCUSTOM_ASCEND_OP" in command  # the Ascend branch of ms_extension/all.h is compiled
    result = run(command)
    assert result.returncode == 0, result.stderr[-4000:]


@pytest.mark.exhaustive
def test_an_attribute_added_to_the_op_def_only_fails_the_module(tmp_path, monkeypatch):
    """One compile for two operators (each compile of the wheel's headers costs ~35 s): an
    attribute added to GroupNormGradMs's and to GroupNormSiluGradMs's OpDef, each must fail
    its own static_assert."""
    ops = ascend_fake_cann.op_definitions()
    for which in ("grad", "silu_grad"):
        ops[which] = dict(ops[which], attrs=ops[which]["attrs"] + [("new_flag", "Bool")])
    cann_root, vendor = ascend_fake_cann.make(tmp_path, ops)
    for header in ("aclnn_group_norm_grad_ms.h", "aclnn_group_norm_silu_grad_ms.h"):
        assert "bool newFlag" in (vendor / "op_api" / "include" / header).read_text()
    result = run(compile_command(cann_root, vendor, monkeypatch))
    assert result.returncode != 0
    for api in ("aclnnGroupNormGradMs", "aclnnGroupNormSiluGradMs"):
        assert re.search(rf"static assertion failed: {api}: the arguments", result.stderr), result.stderr[-3000:]


def test_the_simulated_module_has_the_modules_functions():
    """The stand-in module of the simulated tests (tests/test_ascend_simulated.py) has
    exactly the functions the C++ module binds (the fused op's three included), so what
    those tests call exists on the device."""
    from test_ascend_simulated import FakeAscendModule

    bound = re.findall(r'm\.def\("(\w+)"', ascend_pyboost.SOURCE.read_text())
    public = [name for name in vars(FakeAscendModule) if not name.startswith("_")]
    assert sorted(bound) == sorted(public)
    assert {"group_norm_silu", "group_norm_silu_autograd", "group_norm_silu_grad"} <= set(bound)


def test_the_header_generator_follows_canns_rules():
    """Names and types as CANN's op_aclnn_generator writes them (its golden test output
    aclnn_add_tik2.h: Float -> double, <name>Out outputs, Optional suffix)."""
    op = {"op_type": "AddTik2", "inputs": [("x1", "OPTIONAL"), ("x2", "DYNAMIC")],
          "outputs": [("y", "REQUIRED"), ("y2", "DYNAMIC")],
          "attrs": [("bias0", "Int"), ("bias1", "Float"), ("bias6", "Bool")]}
    assert aclnn_header.parameters(op) == [
        ("const aclTensor *", "x1Optional"), ("const aclTensorList *", "x2"), ("int64_t", "bias0"),
        ("double", "bias1"), ("bool", "bias6"), ("const aclTensor *", "yOut"), ("const aclTensorList *", "y2Out"),
        ("uint64_t *", "workspaceSize"), ("aclOpExecutor **", "executor")]
    assert aclnn_header.snake_header_name("GroupNormGradMs") == "aclnn_group_norm_grad_ms.h"
    assert aclnn_header.camel("dgamma_is_require") == "dgammaIsRequire"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

"""GRAPH_MODE on Ascend, checked with MindSpore's own code: the aclnn header CANN's build
generates from op_host's OpDef (tests/aclnn_header.py), read by MindSpore's
CustomInfoGenerator, and the callback MindSpore's CustomCodeGenerator writes from it and
our reg_info (custom_ops.py _generate_get_workspace_size_func does exactly this on Ascend,
then g++-compiles it). The callback must compile; an attribute added or removed on one
side only (OpDef or reg_info) must be refused."""
import shutil
import subprocess

import pytest
from mindspore.ops.operations._custom_ops_utils import CustomCodeGenerator, CustomInfoGenerator

import ascend_fake_cann
from ms_groupnorm.backends import ascend

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

OPS = {"grad": (ascend.GROUP_NORM_GRAD_MS, lambda: ascend.reg_info(ascend.GROUP_NORM_GRAD_MS)),
       "forward": (ascend.GROUP_NORM_SILU_MS, lambda: ascend.reg_info(ascend.GROUP_NORM_SILU_MS)),
       # the fused backward
       "silu_grad": (ascend.GROUP_NORM_SILU_GRAD_MS, lambda: ascend.reg_info(ascend.GROUP_NORM_SILU_GRAD_MS))}
ACLNN_TYPE = {"int": "int64_t", "bool": "bool", "float": "double"}  # CANN: Float attributes are double


@pytest.fixture
def fake_cann(tmp_path, monkeypatch):
    def install(ops=None):
        cann_root, vendor = ascend_fake_cann.make(tmp_path / "tree", ops)
        monkeypatch.setenv("ASCEND_OPP_PATH", str(cann_root / "opp"))
        monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", str(vendor))
        return cann_root
    return install


def api_types(op_type):
    return CustomInfoGenerator("aclnn" + op_type).get_aclnn_api_types()


def compile_callback(code, cann_root, tmp_path):
    """Compiled as custom_ops._compile_aot compiles it on Ascend (-I<CANN>/include)."""
    source = tmp_path / "callback.cc"
    source.write_text(code)
    command = ["g++", "-std=c++17", "--shared", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=0",
               f"-I{cann_root / 'include'}", "-o", str(tmp_path / "callback.so"), str(source)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("which", list(OPS))
def test_mindspore_reads_the_generated_header_and_its_callback_compiles(which, fake_cann, tmp_path):
    description, reg_info = OPS[which]
    cann_root = fake_cann()
    types = api_types(description.op_type)
    want = (["aclTensor*"] * len(description.inputs) + [ACLNN_TYPE[t] for _, t in description.attrs] +
            ["aclTensor*"] * len(description.outputs) + ["uint64_t*", "aclOpExecutor**"])
    assert types == want, "the OpDef and ms_groupnorm's operator description disagree"
    code = CustomCodeGenerator().generate_callback_by_types("aclnn" + description.op_type, reg_info(), types)
    result = compile_callback(code, cann_root, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("which", list(OPS))
@pytest.mark.parametrize("side", ["op_def", "reg_info"])
@pytest.mark.parametrize("change", ["added", "removed"])
def test_an_attribute_on_one_side_only_is_refused(which, side, change, fake_cann):
    description, reg_info = OPS[which]
    ops = ascend_fake_cann.op_definitions()
    info = reg_info()
    if side == "op_def":
        attrs = ops[which]["attrs"]
        ops[which] = dict(ops[which], attrs=attrs + [("extra", "Bool")] if change == "added" else attrs[:-1])
    else:
        info = dict(info, attr=info["attr"] + [{"name": "extra", "paramType": "required", "type": "bool"}]
                    if change == "added" else info["attr"][:-1])
    fake_cann(ops)
    with pytest.raises(RuntimeError, match="Reg info input size"):
        CustomCodeGenerator().generate_callback_by_types("aclnn" + description.op_type, info,
                                                         api_types(description.op_type))


def test_forward_description_matches_its_op_def_when_present():
    forward_src = ascend_fake_cann.OP_HOST / "group_norm_silu_ms.cpp"
    if not forward_src.is_file():
        pytest.skip("kernels/ascendc/op_host/group_norm_silu_ms.cpp is not in this tree yet")
    op = ascend_fake_cann.op_definitions()["forward"]
    d = ascend.GROUP_NORM_SILU_MS
    assert op["op_type"] == d.op_type
    assert [n for n, _ in op["inputs"]] == list(d.inputs) and [n for n, _ in op["outputs"]] == list(d.outputs)
    assert [(n, t.lower()) for n, t in op["attrs"]] == list(d.attrs)

"""What ms_groupnorm registers on Ascend must match the AscendC operator definition
(kernels/ascendc/op_host/group_norm_grad_ms.cpp) and the kernel entry: op type, input,
output and attribute names and order, dtype combinations. Ascend itself is not available
here, so the adapter Cell is exercised with the CPU twin standing in for the operator."""
import re

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

from ms_groupnorm import reference
from ms_groupnorm.ops import routing
from ms_groupnorm.ops import double_backward
from ms_groupnorm.backends import ascend
import twin

OP_HOST = twin.ascendc_dir() / "op_host" / "group_norm_grad_ms.cpp"
OP_KERNEL = twin.ascendc_dir() / "op_kernel" / "group_norm_grad_ms.cpp"
GE_DTYPE = {"ge::DT_FLOAT": "float32", "ge::DT_FLOAT16": "float16", "ge::DT_BF16": "bfloat16"}


def op_definition():
    """Parses the OpDef source: class name, OP_ADD, inputs, outputs, attrs, dtype columns."""
    source = OP_HOST.read_text()
    columns = {name: [GE_DTYPE[t.strip()] for t in body.split(",")]
               for name, body in re.findall(r"const std::vector<ge::DataType> (\w+) = \{([^}]*)\}", source)}
    return {
        "class": re.search(r"class (\w+) : public OpDef", source).group(1),
        "op_add": re.search(r"OP_ADD\((\w+)\)", source).group(1),
        "inputs": re.findall(r'this->Input\("(\w+)"\)\.ParamType\(REQUIRED\)\.DataType\((\w+)\)', source),
        "outputs": re.findall(r'this->Output\("(\w+)"\)\.ParamType\(REQUIRED\)\.DataType\((\w+)\)', source),
        "attrs": re.findall(r'this->Attr\("(\w+)"\)\.AttrType\(\w+\)\.(Int|Bool)\(', source),
        "columns": columns,
    }


def test_op_type_and_parameter_order_match_the_op_definition():
    op = op_definition()
    assert op["class"] == op["op_add"] == ascend.GROUP_NORM_GRAD_MS.op_type == "GroupNormGradMs"
    assert tuple(name for name, _ in op["inputs"]) == ascend.GROUP_NORM_GRAD_MS.inputs == ("dy", "mean", "rstd", "x", "gamma")
    assert tuple(name for name, _ in op["outputs"]) == ascend.GROUP_NORM_GRAD_MS.outputs == ("dx", "dgamma", "dbeta")
    assert tuple((n, t.lower()) for n, t in op["attrs"]) == ascend.GROUP_NORM_GRAD_MS.attrs


def test_reg_info_matches_the_op_definition():
    op = op_definition()
    info = ascend.reg_info(ascend.GROUP_NORM_GRAD_MS)
    assert info["op_name"] == ascend.GROUP_NORM_GRAD_MS.aclnn_func and info["target"] == "Ascend"
    assert [i["name"] for i in sorted(info["inputs"], key=lambda i: i["index"])] == [n for n, _ in op["inputs"]]
    assert [o["name"] for o in sorted(info["outputs"], key=lambda o: o["index"])] == [n for n, _ in op["outputs"]]
    assert [(a["name"], a["type"]) for a in info["attr"]] == [(n, t.lower()) for n, t in op["attrs"]]
    # One dtype_format row per OpDef column, tensor by tensor.
    params = op["inputs"] + op["outputs"]
    want_rows = [[op["columns"][column][k] for _, column in params] for k in range(5)]
    got_rows = [[dtype for dtype, _ in row] for row in info["dtype_format"]]
    assert got_rows == want_rows


ACLNN_TYPES = {"Int": "int64_t", "Bool": "bool"}


def expected_aclnn_signature():
    """The parameters of aclnnGroupNormGradMsGetWorkspaceSize that CANN generates from the
    OpDef: every input tensor, then every attribute, then every output tensor, then the
    workspace size and executor pointers (MindSpore checks this count, inputs + attrs +
    outputs + 2, against the generated aclnn header)."""
    op = op_definition()
    return ([(name, "const aclTensor *") for name, _ in op["inputs"]] +
            [(name, ACLNN_TYPES[kind]) for name, kind in op["attrs"]] +
            [(name, "const aclTensor *") for name, _ in op["outputs"]] +
            [("workspaceSize", "uint64_t *"), ("executor", "aclOpExecutor **")])


def test_aclnn_signature_agrees_with_the_python_description_and_reg_info():
    want = expected_aclnn_signature()
    assert len(want) == 5 + 4 + 3 + 2
    # ASCEND_OP: what AscendBackward passes (tensors, then attributes as call arguments).
    described = ([(n, "const aclTensor *") for n in ascend.GROUP_NORM_GRAD_MS.inputs] +
                 [(n, ACLNN_TYPES[t.capitalize()]) for n, t in ascend.GROUP_NORM_GRAD_MS.attrs] +
                 [(n, "const aclTensor *") for n in ascend.GROUP_NORM_GRAD_MS.outputs])
    assert described == want[:-2]
    # reg_info, in the order MindSpore uses when it cannot read the header: inputs, attrs, outputs.
    info = ascend.reg_info(ascend.GROUP_NORM_GRAD_MS)
    registered = ([(i["name"], "const aclTensor *") for i in sorted(info["inputs"], key=lambda i: i["index"])] +
                  [(a["name"], ACLNN_TYPES[a["type"].capitalize()]) for a in info["attr"]] +
                  [(o["name"], "const aclTensor *") for o in sorted(info["outputs"], key=lambda o: o["index"])])
    assert registered == want[:-2]
    assert all(a["paramType"] == "required" and "value" not in a for a in info["attr"])  # call arguments


def test_graph_mode_at_jit_level_o2_is_refused_with_the_documented_setting(monkeypatch):
    settings = {"mode": ms.GRAPH_MODE, "jit_config": {"jit_level": "O2"}}
    monkeypatch.setattr(ms, "get_context", lambda key: settings[key])
    with pytest.raises(RuntimeError, match=r"jit_level O2 / with the GE backend.*deprecated since MindSpore 2.9"):
        ascend.check_graph_jit_level()
    for mode, level in ((ms.GRAPH_MODE, "O0"), (ms.GRAPH_MODE, "O1"), (ms.GRAPH_MODE, ""), (ms.PYNATIVE_MODE, "O2")):
        settings.update(mode=mode, jit_config={"jit_level": level} if level else {})
        ascend.check_graph_jit_level()


def test_kernel_entry_takes_the_op_definition_order():
    source = OP_KERNEL.read_text()
    signature = re.search(r"void group_norm_grad_ms\(([^)]*)\)", source).group(1)
    names = re.findall(r"GM_ADDR (\w+)", signature)
    op = op_definition()
    assert names == [n for n, _ in op["inputs"]] + [n for n, _ in op["outputs"]] + ["workspace", "tiling"]


class TwinInCannOrder(nn.Cell):
    """Stands in for the Ascend operator: CANN's argument order and call-time attributes."""

    def __init__(self, group, calls):
        super().__init__()
        self.inner = routing._backward_op(routing.GROUP_NORM.backward, (group,), (True, True, True), "ascendc_twin")
        self.calls = calls

    def construct(self, dy, mean, rstd, x, gamma, num_groups, dx_req, dgamma_req, dbeta_req):
        self.calls.append((tuple(x.shape), tuple(mean.shape), tuple(gamma.shape), num_groups,
                           dx_req, dgamma_req, dbeta_req))
        return self.inner(dy, x, mean, rstd, gamma)


@pytest.mark.parametrize("mask,with_gamma", [((True, True, True), True), ((True, False, False), False)])
def test_ascend_adapter_reorders_fills_gamma_and_masks(mask, with_gamma):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    rng = np.random.default_rng(2)
    N, C, HxW, G = 2, 6, 10, 3
    x = rng.standard_normal((N, C, HxW)).astype(np.float32)
    dy = rng.standard_normal((N, C, HxW)).astype(np.float32)
    _, mean, rstd = reference.forward(x, None, None, G)
    gamma = rng.standard_normal(C).astype(np.float32) if with_gamma else None
    calls = []
    cell = ascend.AscendBackward(G, mask, double_backward.group_norm_backward_bprop(G, mask, double_backward.PARTIAL),
                                 op=TwinInCannOrder(G, calls))
    gamma_in = ms.Tensor(gamma) if with_gamma else ms.Tensor(np.zeros((0,), np.float32))
    dx, dgamma, dbeta = cell(ms.Tensor(dy), ms.Tensor(x), ms.Tensor(mean.astype(np.float32)),
                             ms.Tensor(rstd.astype(np.float32)), gamma_in)
    assert calls == [((N, C, HxW), (N, G), (C,), G) + mask]
    want = reference.backward(dy, x, mean.astype(np.float32), rstd.astype(np.float32), gamma, G)
    np.testing.assert_allclose(dx.asnumpy(), want[0], rtol=1e-4, atol=1e-5)
    for got, ref, wanted in ((dgamma, want[1], mask[1]), (dbeta, want[2], mask[2])):
        if wanted:
            np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-4, atol=1e-4)
        else:
            assert got.shape == (0,)

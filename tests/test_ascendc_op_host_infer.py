"""Our three operators' InferShape and InferDataType as CANN's graph compiler runs them
(tests/op_host_context.py): the op_host sources built as a custom-op proto library, where OP_ADD
registers both functions in gert's OpImplRegistry, called on contexts that metadef's
OpInferShapeContextBuilder and OpInferDataTypeContextBuilder build.

Every OpDef dtype column and input rank 2-8 must give the outputs the kernels write (dx / y as x,
dgamma and dbeta as gamma, mean and rstd (N, num_groups)) in the column's output dtypes, and a call
the kernels cannot run must be refused there already, with the rule named. Skips with a one-line
reason without METADEF and ASC_DEVKIT."""
import pytest

import op_host_context

GRAD, SILU_GRAD, FORWARD = (op_host_context.OPERATORS[name] for name in
                            ("GroupNormGradMs", "GroupNormSiluGradMs", "GroupNormSiluMs"))
COLUMNS = range(5)  # fp32, fp16, bf16, fp16/fp32, bf16/fp32
# x of rank 2 (a 2-D input), 3, 4 and 8, with C = 12 and the group counts that divide it
X_SHAPES = [(7, 12), (2, 12, 5), (3, 12, 4, 6), (2, 12, 1, 3, 1, 2, 1, 2)]


@pytest.fixture(scope="module", autouse=True)
def built():
    return op_host_context.build_or_skip(op_host_context.infer_library)


def _inputs(op, data, G, **changed):
    """Every input of ``op`` for data (x and dy) of shape ``data``, rank 2 or more, in G groups;
    ``changed`` overrides by name, x included."""
    shapes = {"x": data, "dy": data, "mean": (data[0], G), "rstd": (data[0], G), "gamma": (data[1],),
              "beta": (data[1],)}
    shapes.update(changed)
    return {name: shapes[name] for name, _ in op.inputs}


def _outputs_want(op, x, G):
    if op is FORWARD:
        return {"y": x, "mean": (x[0], G), "rstd": (x[0], G)}
    return {"dx": x, "dgamma": (x[1],), "dbeta": (x[1],)}


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("op", [GRAD, SILU_GRAD, FORWARD], ids=lambda op: op.op_type)
def test_outputs_take_the_kernels_shapes_and_the_column_dtypes(op, column):
    dtypes = op.dtypes(column)
    for x in X_SHAPES:
        for G in (1, 3, 12):
            shapes, types = op_host_context.infer(op, _inputs(op, x, G), column=column, num_groups=G)
            assert shapes == _outputs_want(op, x, G), (x, G)
            assert types == {name: dtypes[name] for name, _ in op.outputs}, (x, G)


@pytest.mark.parametrize("op", [GRAD, SILU_GRAD, FORWARD], ids=lambda op: op.op_type)
def test_a_call_the_kernels_cannot_run_is_refused_at_inference(op, capfd):
    """What the tiling refuses, graph compilation refuses first: num_groups not dividing C, num_groups
    0, x of rank 1, a (N, G) statistic or a gamma of the wrong size (the backwards, whose inputs
    these are), and the rule is named on stderr (CANN's plog)."""
    x = (2, 12, 5)
    bad = [dict(G=5), dict(G=0), dict(G=3, x=(24,), dy=(24,))]
    if op is not FORWARD:
        bad += [dict(G=3, mean=(2, 4)), dict(G=3, gamma=(11,))]
    for case in bad:
        G = case.pop("G")
        with pytest.raises(ValueError, match="InferShape refused"):
            op_host_context.infer(op, _inputs(op, x, G, **case), num_groups=G)
    err = capfd.readouterr().err
    assert "num_groups" in err and "C = 12" in err


def test_an_unset_optional_attribute_is_not_needed():
    """The framework leaves unset OPTIONAL attributes out of the context; only num_groups is read."""
    for op in (GRAD, SILU_GRAD, FORWARD):
        shapes, _ = op_host_context.infer(op, _inputs(op, (4, 12, 9), 6), num_groups=6)
        assert shapes == _outputs_want(op, (4, 12, 9), 6)

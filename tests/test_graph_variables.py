"""group_norm with num_groups / eps as graph variables (``ms.mutable``), in GRAPH_MODE and
PYNATIVE_MODE (``@ms.jit``, STRICT and LAX syntax).

MindSpore's own test_primitive_call_keyword_argument_in_different_order calls
``group_norm(x, weight=w, bias=b, num_groups=ms.mutable(2), eps=ms.mutable(1e-5))`` inside
``@ms.jit`` (STRICT). A graph variable has no value while the graph compiles, so it
reaches our kernel as a tensor read at run time; the results must be bitwise those of the
same call with Python numbers (same kernels, same float32 eps)."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn, ops

from cases import tensor, to_numpy
from ms_groupnorm import group_norm, reference
from ms_groupnorm.errors import ParamInvalidError, ParamTypeError

SHAPE, G, EPS = (2, 6, 3, 4), 2, 1e-5


def inputs(rng, dtype=ms.float32, param_dtype=ms.float32, shape=SHAPE):
    x = rng.standard_normal(shape).astype(np.float32) + 0.5
    w = rng.standard_normal(shape[1]).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    return (x, w, b), (tensor(x, dtype), tensor(w, param_dtype), tensor(b, param_dtype))


def assert_bitwise(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(to_numpy(g), to_numpy(w), equal_nan=True)


def jit(syntax):
    """@ms.jit with STRICT (fullgraph=True, MindSpore 2.10's spelling) or LAX syntax."""
    return ms.jit(fullgraph=syntax == "STRICT")


@pytest.mark.parametrize("syntax", ["STRICT", "LAX"])
def test_mindspore_keyword_call_with_mutables(mode, rng, syntax):
    """The call of MindSpore's test, bitwise equal to Python numbers and close to the reference."""
    arrays, (x, w, b) = inputs(rng)

    @jit(syntax)
    def variables(x, w, b):
        return group_norm(x, weight=w, bias=b, num_groups=ms.mutable(G), eps=ms.mutable(EPS))

    @jit(syntax)
    def numbers(x, w, b):
        return group_norm(x, weight=w, bias=b, num_groups=G, eps=EPS)

    got = variables(x, w, b)
    assert_bitwise([got], [numbers(x, w, b)])
    want = reference.forward(*arrays, G, EPS)[0]
    np.testing.assert_allclose(to_numpy(got), want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("variable", ["num_groups", "eps"])
def test_one_variable_the_other_a_number(mode, rng, variable):
    _, (x, w, b) = inputs(rng)
    groups = ms.mutable(G) if variable == "num_groups" else G
    eps = ms.mutable(EPS) if variable == "eps" else EPS

    @jit("STRICT")
    def mixed(x, w, b):
        return group_norm(x, groups, w, b, eps)

    assert_bitwise([mixed(x, w, b)], [group_norm(x, G, w, b, EPS)])


@pytest.mark.parametrize("dtype,param_dtype,affine", [
    (ms.float32, ms.float32, False), (ms.bfloat16, ms.float32, True), (ms.float16, ms.float16, True)])
def test_gradients_with_variables_equal_gradients_with_numbers(mode, rng, dtype, param_dtype, affine):
    """dx, dweight, dbias through the run-time-group backward, bitwise equal to the attribute route."""
    _, (x, w, b) = inputs(rng, dtype, param_dtype)
    if not affine:
        w = b = None

    def loss(numbers):
        def function(x, w, b):
            groups, eps = (G, EPS) if numbers else (ms.mutable(G), ms.mutable(EPS))
            y = ops.cast(group_norm(x, groups, w, b, eps), ms.float32)  # CPU AddN has no bfloat16
            return (y * y).sum()
        return function

    positions = (0, 1, 2) if affine else 0
    got = jit("STRICT")(ms.grad(loss(False), grad_position=positions))(x, w, b)
    want = jit("STRICT")(ms.grad(loss(True), grad_position=positions))(x, w, b)
    assert_bitwise(got if affine else [got], want if affine else [want])


class Net(nn.Cell):
    def construct(self, x, w, b, groups, eps):
        return group_norm(x, groups, w, b, eps)


def test_mutable_arguments_change_without_recompiling(rng):
    """A mutable argument of a compiled Cell: one graph serves num_groups 2, 3 and 6."""
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        arrays, (x, w, b) = inputs(rng)
        net = Net()
        for groups, eps in ((2, 1e-5), (3, 0.25), (6, 1e-3)):
            got = net(x, w, b, ms.mutable(groups), ms.mutable(eps))
            want = reference.forward(*arrays, groups, np.float32(eps))[0]
            np.testing.assert_allclose(to_numpy(got), want, rtol=2e-5, atol=2e-5)
            assert_bitwise([got], [group_norm(x, groups, w, b, eps)])
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_eager_pynative_call_with_mutables(rng):
    """Outside a graph ms.mutable(2) is an int: the ordinary route, same answer."""
    _, (x, w, b) = inputs(rng)
    assert_bitwise([group_norm(x, weight=w, bias=b, num_groups=ms.mutable(G), eps=ms.mutable(EPS))],
                   [group_norm(x, G, w, b, EPS)])


def test_run_time_num_groups_not_dividing_C_is_refused_naming_it(mode, rng):
    _, (x, w, b) = inputs(rng)

    @jit("STRICT")
    def bad(x, w, b):
        return group_norm(x, ms.mutable(4), w, b)  # C = 6

    # A ValueError naming num_groups when the graph runs (it was the kernel's RuntimeError status).
    with pytest.raises(ValueError, match="num_groups=4 must be > 0 and divide C=6"):
        to_numpy(bad(x, w, b))


@pytest.mark.parametrize("argument", ["num_groups", "eps"])
def test_variable_of_the_wrong_type_is_refused_while_compiling(mode, rng, argument):
    _, (x, w, b) = inputs(rng)
    groups = ms.mutable(2.0) if argument == "num_groups" else G
    eps = ms.mutable(True) if argument == "eps" else EPS

    @jit("STRICT")
    def bad(x, w, b):
        return group_norm(x, groups, w, b, eps)

    with pytest.raises(ParamTypeError, match=f"{argument} is a graph variable of type"):
        bad(x, w, b)


def test_graph_variable_on_a_backend_without_the_run_time_ops_is_refused(rng, monkeypatch):
    """Only the "cpu" backend reads num_groups at run time; elsewhere a clear error while compiling."""
    monkeypatch.setenv("MS_GROUPNORM_BACKEND", "ascendc_twin")
    _, (x, w, b) = inputs(rng)

    @jit("STRICT")
    def variables(x, w, b):
        return group_norm(x, ms.mutable(G), w, b)

    with pytest.raises(ParamInvalidError, match="only the 'cpu' backend"):
        variables(x, w, b)


def test_one_value_per_group_gives_bias_and_zero_gradient_as_mindspore(mode, rng):
    """PyTorch raises for N * C/G * HxW == 1; MindSpore's layers return beta, and so do we."""
    x = tensor(np.array([[1.0, 2.0, 3.0, 4.0]], np.float32), ms.float32)
    b = tensor(np.array([0.5, -1.0, 2.0, 0.0], np.float32), ms.float32)
    w = tensor(np.ones(4, np.float32), ms.float32)
    assert np.array_equal(to_numpy(group_norm(x, 4, w, b)), to_numpy(b).reshape(1, 4))
    assert np.array_equal(to_numpy(ms.nn.GroupNorm(4, 4)(x)), np.zeros((1, 4), np.float32))
    weights = tensor(np.arange(4, dtype=np.float32), ms.float32)

    def loss(v):
        return (group_norm(v, 4, w, b) * weights).sum()

    dx = ms.grad(loss)(x)
    assert not to_numpy(dx).any()

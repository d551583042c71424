"""The fused GroupNorm + SiLU through MindSpore: group_norm_silu, the aclnn-style
contracts and the GroupNormSiLU layers, in GRAPH_MODE (compiled Cells; LAX and STRICT,
static and dynamic shape/rank) and PYNATIVE_MODE, against the float64 reference; argument
errors; backends without fused kernels; fp16/bf16 accuracy side by side with MindSpore's
own pair (nn.GroupNorm + ops.silu) and torch's."""
import math
import os
import sys

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

import ms_groupnorm
from cases import DTYPES, assert_close, make_inputs, tensor, to_numpy
from ms_groupnorm import GroupNormSiLU, ParamInvalidError, ParamNullptrError, group_norm_silu, group_norm_silu_backward, group_norm_silu_forward
from ms_groupnorm import reference

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
FP32, FP16_MIXED, BF16_MIXED = DTYPES[0].values, DTYPES[3].values, DTYPES[4].values


def sizes(shape):
    return shape[0], shape[1], math.prod(shape[2:])


class Forward(nn.Cell):
    def __init__(self, N, C, HxW, G, eps=1e-5, swish_scale=1.0):
        super().__init__()
        self.args = (N, C, HxW, G, eps, swish_scale)

    def construct(self, x, gamma, beta):
        N, C, HxW, G, eps, k = self.args
        return group_norm_silu_forward(x, gamma, beta, N, C, HxW, G, eps, k)


class Backward(nn.Cell):
    def __init__(self, N, C, HxW, G, mask=(True, True, True), swish_scale=1.0):
        super().__init__()
        self.args = (N, C, HxW, G, mask, swish_scale)

    def construct(self, dz, x, mean, rstd, gamma, beta):
        N, C, HxW, G, mask, k = self.args
        return group_norm_silu_backward(dz, x, mean, rstd, gamma, beta, N, C, HxW, G, mask, k)


CONTRACT_SHAPES = [((4, 12), 3), ((2, 6, 4, 5), 1), ((2, 8, 5, 3), 8), ((2, 4, 2, 1, 3, 1, 2, 2), 4),
                   ((3, 15, 7, 11), 5)]


# each shape class with one or two dtype pairs (a graph compile per case costs ~2 s)
CONTRACT_CASES = [(shape, G, *DTYPES[i].values) for (shape, G), dtype_indexes in
                  zip(CONTRACT_SHAPES, [(0, 2), (1, 4), (0, 3), (4,), (0, 1)]) for i in dtype_indexes]


# The default tier: every shape (with its dtype pairs) once, the modes alternating.
@pytest.mark.default_sample(shape=[shape for shape, _ in CONTRACT_SHAPES], mode=["graph", "pynative"])
@pytest.mark.parametrize("shape,G,data_dtype,stat_dtype", CONTRACT_CASES)
def test_contracts(mode, rng, shape, G, data_dtype, stat_dtype):
    swish_scale = 1.0 if G != 1 else 1.7
    x, dz, gamma, beta, _, _ = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    z, mean, rstd = Forward(*sizes(shape), G, 1e-5, swish_scale)(tensor(x, data_dtype), tensor(gamma, stat_dtype),
                                                                 tensor(beta, stat_dtype))
    want_z, want_mean, want_rstd = reference.silu_forward(x, gamma, beta, G, 1e-5, swish_scale)
    assert (z.dtype, mean.dtype, z.shape, mean.shape) == (data_dtype, stat_dtype, shape, (shape[0], G))
    assert_close(mean, want_mean, stat_dtype, "mean")
    assert_close(rstd, want_rstd, stat_dtype, "rstd")
    assert_close(z, want_z, data_dtype if stat_dtype == ms.float32 else stat_dtype, "z")
    mean, rstd = to_numpy(mean), to_numpy(rstd)
    got = Backward(*sizes(shape), G, (True, True, True), swish_scale)(
        tensor(dz, data_dtype), tensor(x, data_dtype), tensor(mean, stat_dtype), tensor(rstd, stat_dtype),
        tensor(gamma, stat_dtype), tensor(beta, stat_dtype))
    want = reference.silu_backward(dz, x, mean, rstd, gamma, beta, G, swish_scale)
    for out, ref, dtype, name in zip(got, want, (data_dtype, stat_dtype, stat_dtype), ("dx", "dgamma", "dbeta")):
        assert out.dtype == dtype, name
        assert_close(out, ref, dtype, name)


@pytest.mark.parametrize("mask", [(True, True, True), (True, False, False), (False, True, True), (False, False, True)])
def test_backward_mask_and_absent_parameters(mode, backend, rng, mask):
    """On the CPU kernels and the AscendC twins; beta absent (None) in half the cases."""
    shape, G = (2, 6, 11), 3
    x, dz, gamma, beta, mean, rstd = make_inputs(rng, shape, G, *BF16_MIXED)
    beta = None if mask[1] else beta
    beta_t = None if beta is None else tensor(beta, ms.float32)
    got = Backward(*sizes(shape), G, mask, 0.8)(tensor(dz, ms.bfloat16), tensor(x, ms.bfloat16),
                                                tensor(mean, ms.float32), tensor(rstd, ms.float32),
                                                tensor(gamma, ms.float32), beta_t)
    want = reference.silu_backward(dz, x, mean, rstd, gamma, beta, G, 0.8)
    for bit, out, ref, dtype, name in zip(mask, got, want, (ms.bfloat16, ms.float32, ms.float32),
                                          ("dx", "dgamma", "dbeta")):
        if bit:
            assert_close(out, ref, dtype, name)
        else:
            assert out is None, name


@pytest.mark.parametrize("shape", [(0, 6, 4), (2, 6, 0)])
def test_empty_input(mode, shape):
    N, C, HxW = sizes(shape)
    x = Tensor(np.zeros(shape, np.float32))
    stats = Tensor(np.zeros((N, 3), np.float32))
    z, mean, rstd = group_norm_silu_forward(x, None, None, N, C, HxW, 3)
    assert z.shape == shape and mean.shape == (N, 3)
    dx, dgamma, dbeta = group_norm_silu_backward(x, x, stats, stats, None, None, N, C, HxW, 3)
    assert dx.shape == shape and not dgamma.asnumpy().any() and not dbeta.asnumpy().any()


class SiluLoss(nn.Cell):
    """sum(group_norm_silu(x) * w), differentiated by MindSpore through the fused bprop."""

    def __init__(self, G, affine):
        super().__init__()
        self.G, self.affine = G, affine

    def construct(self, x, w, gamma, beta):
        if self.affine:
            z = group_norm_silu(x, self.G, gamma, beta)
        else:
            z = group_norm_silu(x, self.G)
        return (z.astype(ms.float32) * w).sum()


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("data_dtype,stat_dtype", [FP32, FP16_MIXED, BF16_MIXED])
def test_group_norm_silu_gradients(mode, rng, affine, data_dtype, stat_dtype):
    shape, G = (3, 8, 5, 3), 4
    x, w, gamma, beta, _, _ = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    args = (tensor(x, data_dtype), tensor(w, ms.float32), tensor(gamma, stat_dtype), tensor(beta, stat_dtype))
    z = group_norm_silu(args[0], G, *(args[2:] if affine else ()))
    dx, dgamma, dbeta = ms.grad(SiluLoss(G, affine), grad_position=(0, 2, 3))(*args)
    gamma_ref, beta_ref = (gamma, beta) if affine else (None, None)
    want_z, mean, rstd = reference.silu_forward(x, gamma_ref, beta_ref, G)
    assert z.dtype == data_dtype
    assert_close(z, want_z, data_dtype, "z")
    mean, rstd = (to_numpy(tensor(a, ms.float32)) for a in (mean, rstd))  # float32 statistics are saved
    want = reference.silu_backward(w, x, mean, rstd, gamma_ref, beta_ref, G)
    assert_close(dx, want[0], data_dtype, "dx")
    if affine:
        assert_close(dgamma, want[1], stat_dtype, "dgamma")
        assert_close(dbeta, want[2], stat_dtype, "dbeta")
    else:
        assert not np.any(to_numpy(dgamma)) and not np.any(to_numpy(dbeta))


class WeightedSum(nn.Cell):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def construct(self, x, w):
        return (self.layer(x) * w).sum()


def _set_affine(layer, rng, names=("gamma", "beta")):
    C = layer.num_channels
    gamma, beta = rng.uniform(0.5, 1.5, C).astype(np.float32), rng.uniform(-0.5, 0.5, C).astype(np.float32)
    getattr(layer, names[0]).set_data(Tensor(gamma))
    getattr(layer, names[1]).set_data(Tensor(beta))
    return gamma, beta


@pytest.mark.parametrize("layer_cls,names", [(GroupNormSiLU, ("gamma", "beta")),
                                             (ms_groupnorm.mint.GroupNormSiLU, ("weight", "bias"))])
@pytest.mark.parametrize("shape,G", [((2, 6, 5, 4), 6), ((3, 6), 3), ((1, 6, 2, 1, 3, 1, 2, 2), 1)])
def test_layers_train(mode, rng, layer_cls, names, shape, G):
    layer = layer_cls(G, shape[1])
    gamma, beta = _set_affine(layer, rng, names)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape).astype(np.float32)
    loss = WeightedSum(layer)
    dx, (dgamma, dbeta) = ms.grad(loss, grad_position=0, weights=layer.trainable_params())(Tensor(x), Tensor(w))
    z, mean, rstd = reference.silu_forward(x, gamma, beta, G)
    want = reference.silu_backward(w, x, mean, rstd, gamma, beta, G)
    assert [p.name.split(".")[-1] for p in layer.trainable_params()] == list(names)
    assert_close(layer(Tensor(x)), z, ms.float32, "z")
    for got, ref, name in zip((dx, dgamma, dbeta), want, ("dx", "dgamma", "dbeta")):
        assert_close(got, ref, ms.float32, name)


def test_layer_has_group_norms_signature_checks_and_repr():
    ours, theirs = GroupNormSiLU(2, 6, eps=1e-3), nn.GroupNorm(2, 6, eps=1e-3)
    assert ours.extend_repr() == theirs.extend_repr()
    assert [p.name for p in ours.get_parameters()] == ["gamma", "beta"]
    assert ms_groupnorm.mint.GroupNormSiLU(2, 6).extend_repr() == ms_groupnorm.mint.GroupNorm(2, 6).extend_repr()
    with pytest.raises(ValueError, match="must be divided by 'num_groups'"):
        GroupNormSiLU(4, 6)
    for bad in [dict(num_groups=0, num_channels=4), dict(num_groups=2, num_channels=4, eps=1),
                dict(num_groups=2, num_channels=4, affine=1)]:
        with pytest.raises((ValueError, TypeError)):
            GroupNormSiLU(**bad)
    with pytest.raises(ValueError, match="num_channels"):
        GroupNormSiLU(2, 6)(Tensor(np.zeros((2, 4, 3), np.float32)))


def test_argument_errors_are_coded():
    x = Tensor(np.zeros((2, 6, 4), np.float32))
    stats = Tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(ParamNullptrError) as info:
        group_norm_silu_forward(None, None, None, 2, 6, 4, 3)
    assert info.value.code == 161001
    with pytest.raises(ParamInvalidError, match="C=6 is not divisible by group=4") as info:
        group_norm_silu_forward(x, None, None, 2, 6, 4, 4)
    assert info.value.code == 161002
    with pytest.raises(ParamInvalidError, match="swish_scale=inf must be finite"):
        group_norm_silu_forward(x, None, None, 2, 6, 4, 3, 1e-5, float("inf"))
    with pytest.raises(TypeError, match="swish_scale"):
        group_norm_silu_backward(x, x, stats, stats, None, None, 2, 6, 4, 3, swish_scale="1")
    with pytest.raises(ParamNullptrError):
        group_norm_silu_backward(x, x, None, stats, None, None, 2, 6, 4, 3)
    with pytest.raises(ParamInvalidError, match=r"beta has dtype Float16, but it must equal the dtype of mean"):
        group_norm_silu_backward(x, x, stats, stats, None, Tensor(np.zeros(6, np.float16)), 2, 6, 4, 3)
    with pytest.raises(ParamInvalidError, match=r"numel\(beta\)=5"):
        group_norm_silu_backward(x, x, stats, stats, None, Tensor(np.zeros(5, np.float32)), 2, 6, 4, 3)
    with pytest.raises(ParamInvalidError, match="output_mask"):
        group_norm_silu_backward(x, x, stats, stats, None, None, 2, 6, 4, 3, (True, True))
    with pytest.raises(ParamInvalidError, match="C=6 .*is not divisible by num_groups=4"):
        group_norm_silu(x, 4)


def test_float64_runs_the_unfused_pair(rng):
    x = rng.standard_normal((2, 6, 5))
    gamma, beta = rng.standard_normal(6), rng.standard_normal(6)
    z = group_norm_silu(Tensor(x), 3, Tensor(gamma), Tensor(beta))
    assert z.dtype == ms.float64
    np.testing.assert_allclose(z.asnumpy(), reference.silu_forward(x, gamma, beta, 3)[0], rtol=1e-12, atol=1e-12)


def test_without_fused_kernels_the_pair_runs(rng, monkeypatch):
    """Where no fused kernel exists (Ascend), the functions and layers compute GroupNorm then
    SiLU; simulated here by a backend without fused kernels."""
    from ms_groupnorm.ops import routing
    monkeypatch.setattr(routing, "FUSED_BACKENDS", ())
    x, dz, gamma, beta, _, _ = make_inputs(rng, (2, 6, 7), 3, *FP32)
    want = reference.silu_forward(x, gamma, beta, 3, 1e-5, 1.5)
    z, mean, rstd = group_norm_silu_forward(tensor(x, ms.float32), tensor(gamma, ms.float32),
                                            tensor(beta, ms.float32), 2, 6, 7, 3, 1e-5, 1.5)
    for got, ref, name in zip((z, mean, rstd), want, ("z", "mean", "rstd")):
        assert_close(got, ref, ms.float32, name)
    layer = GroupNormSiLU(3, 6)
    gamma, beta = _set_affine(layer, rng)
    assert_close(layer(tensor(x, ms.float32)), reference.silu_forward(x, gamma, beta, 3)[0], ms.float32, "layer")


# ---------------------------------------------------------------- GRAPH: LAX/STRICT, dynamic shape and rank
class _FunctionalLoss(nn.Cell):
    def __init__(self, gamma, beta):
        super().__init__()
        self.gamma, self.beta = gamma, beta

    def construct(self, x, w):
        return (group_norm_silu(x, 3, self.gamma, self.beta, 1e-5) * w).sum()


DYNAMIC = {"static": None, "dynamic-shape": [None, 6, None], "dynamic-rank": None}


@pytest.mark.parametrize("level,inputs,form", [
    ("LAX", "static", "layer"), ("LAX", "dynamic-shape", "layer"), ("LAX", "dynamic-rank", "group_norm_silu"),
    ("STRICT", "static", "group_norm_silu"), ("STRICT", "dynamic-shape", "layer"),
    ("STRICT", "dynamic-rank", "layer"), ("STRICT", "dynamic-shape", "group_norm_silu")])
def test_graph_syntax_levels_with_dynamic_shape_and_rank(level, inputs, form):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        rng = np.random.default_rng(7)
        if form == "layer":
            layer = GroupNormSiLU(3, 6)
            gamma, beta = _set_affine(layer, rng)
            net = WeightedSum(layer)
        else:
            gamma = rng.uniform(0.5, 1.5, 6).astype(np.float32)
            beta = rng.uniform(-0.5, 0.5, 6).astype(np.float32)
            net = _FunctionalLoss(ms.Parameter(Tensor(gamma), name="g"), ms.Parameter(Tensor(beta), name="b"))
        net.set_jit_config(ms.JitConfig(jit_syntax_level=level))
        if inputs == "dynamic-shape":
            net.set_inputs(*[Tensor(shape=DYNAMIC[inputs], dtype=ms.float32)] * 2)
        elif inputs == "dynamic-rank":
            net.set_inputs(*[Tensor(shape=None, dtype=ms.float32)] * 2)
        grad_fn = ms.value_and_grad(net, grad_position=0, weights=net.trainable_params())
        shapes = {"static": [(2, 6, 5)], "dynamic-shape": [(2, 6, 5), (4, 6, 3)],
                  "dynamic-rank": [(2, 6, 5), (3, 6, 4, 2)]}[inputs]
        for shape in shapes:
            x = rng.standard_normal(shape).astype(np.float32)
            w = rng.standard_normal(shape).astype(np.float32)
            loss, (dx, (dgamma, dbeta)) = grad_fn(Tensor(x), Tensor(w))
            z, mean, rstd = reference.silu_forward(x, gamma, beta, 3)
            want = reference.silu_backward(w, x, mean, rstd, gamma, beta, 3)
            np.testing.assert_allclose(loss.asnumpy(), (z * w).sum(), rtol=1e-5, atol=1e-4)
            for got, ref, name in zip((dx, dgamma, dbeta), want, ("dx", "dgamma", "dbeta")):
                np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-4, atol=1e-5, err_msg=f"{name} {shape}")
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


# ---------------------------------------------------------------- accuracy vs MindSpore's own pair
def test_low_precision_at_least_as_accurate_as_mindspore_and_torch():
    """fp16: max |error| of z, dx, dgamma, dbeta no larger than nn.GroupNorm + ops.silu's on the
    same rounded inputs (PYNATIVE_MODE). bf16: MindSpore 2.10 has no bfloat16 SiLU CPU kernel,
    so the baseline is torch's group_norm + silu (when installed)."""
    import accuracy_group_norm_silu as accuracy
    try:
        import torch  # noqa: F401  pylint: disable=unused-import
        with_torch = True
    except ImportError:
        with_torch = False
    ours, baselines = "ms_groupnorm.GroupNormSiLU", {"float16": "nn.GroupNorm + ops.silu",
                                                     "bfloat16": "torch group_norm + silu"}
    rows = accuracy.measure(shape=(2, 16, 8, 8), groups=4, with_torch=with_torch,
                            only={dtype: (ours, name) for dtype, name in baselines.items()})
    table = {(dtype, mean, name): result for dtype, mean, name, result in rows}
    compared = 0
    for (dtype, mean, name), result in table.items():
        if name != ours:
            continue
        assert not isinstance(result, str), result
        baseline = table.get((dtype, mean, baselines[dtype]))
        if baseline is None:  # torch not installed
            continue
        assert not isinstance(baseline, str), baseline
        for metric in accuracy.NAMES:
            assert result[metric] <= baseline[metric], (dtype, mean, metric, result[metric], baseline[metric])
            compared += 1
    assert compared >= 8  # fp16 against MindSpore at both data means at least


# ---------------------------------------------------------------- the docs example
def test_docs_resnet_block_example_trains(mode, tmp_path, monkeypatch):
    """docs/group-norm-silu.md's ResnetBlock code block, run as written (imported as a
    module: GRAPH_MODE parses construct from the module's source)."""
    import importlib
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parent.parent / "docs" / "group-norm-silu.md").read_text()
    code = next(block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "class ResnetBlock" in block)
    name = f"resnet_block_example_{mode}"
    (tmp_path / f"{name}.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    example = importlib.import_module(name)
    assert np.isfinite(example.loss.asnumpy())
    grads = example.grads
    assert len(grads) == len(example.block.trainable_params())
    assert all(np.isfinite(g.asnumpy()).all() for g in grads) and any(np.abs(g.asnumpy()).max() > 0 for g in grads)


# ---------------------------------------------------------------- mixed precision
def test_amp_O1_step_matches_the_unfused_pair(mode, tmp_path, monkeypatch):
    """mindspore.amp O1, whose rewrite copies the layers' Python code into a new network,
    trains GroupNormSiLU as it trains ms_groupnorm.GroupNorm followed by SiLU. (O2 only
    casts the layer's input, which the float16 tests cover.)"""
    from mindspore import amp
    from test_mixed_precision import _assert_same_step, _layers, _train_step
    monkeypatch.chdir(tmp_path)  # O1's rewrite writes ./rewritten_network/*.py
    for level, tolerance in (("O1", 1e-4),):
        conv, norm, dense = _layers(GroupNormSiLU)
        fused = amp.auto_mixed_precision(nn.SequentialCell(conv, norm, nn.Flatten(), dense), level)
        conv, norm, dense = _layers(ms_groupnorm.GroupNorm)
        pair = amp.auto_mixed_precision(nn.SequentialCell(conv, norm, nn.SiLU(), nn.Flatten(), dense), level)
        _assert_same_step(_train_step(fused), _train_step(pair), rtol=tolerance, atol=tolerance)

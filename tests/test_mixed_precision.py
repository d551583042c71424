"""ms_groupnorm.GroupNorm under mixed precision: mindspore.amp.auto_mixed_precision O1/O2,
and float16/bfloat16 activations with float32 parameters, one SGD training step each,
in GRAPH and PYNATIVE modes (the ``mode`` fixture of conftest.py)."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, amp, nn, ops

import ms_groupnorm
from ms_groupnorm import reference

LR = 0.5  # large, so that a wrong gradient shows in the updated parameters
LABELS = np.array([0, 1, 2, 1], np.int32)


def _inputs():
    return np.random.default_rng(0).standard_normal((4, 3, 4, 4)).astype(np.float32)


def _layers(norm_cls):
    """conv -> GroupNorm -> ReLU -> dense, with fixed weights and non-trivial gamma/beta."""
    ms.set_seed(1)
    conv = nn.Conv2d(3, 8, 3, pad_mode="same", has_bias=False)
    norm = norm_cls(2, 8)
    dense = nn.Dense(8 * 4 * 4, 3)
    rng = np.random.default_rng(2)
    norm.gamma.set_data(Tensor(rng.uniform(0.5, 1.5, 8).astype(np.float32)))
    norm.beta.set_data(Tensor(rng.uniform(-0.5, 0.5, 8).astype(np.float32)))
    return conv, norm, dense


def _train_step(net):
    """One SGD step; returns (loss, {name: updated float32 parameter})."""
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    step = nn.TrainOneStepCell(loss_net, nn.SGD(net.trainable_params(), learning_rate=LR))
    loss = step(Tensor(_inputs()), Tensor(LABELS))
    params = {}
    for index, param in enumerate(net.trainable_params()):  # the same order in every variant
        assert param.dtype == ms.float32, f"{param.name} became {param.dtype}"  # optimizer state stays f32
        params[f"{index}:{param.name.rsplit('.', 1)[-1]}"] = param.asnumpy()
    return float(loss.asnumpy()), params


class _ToFloat32(nn.Cell):
    def construct(self, x):
        return ops.cast(x, ms.float32)


def _assert_same_step(result, expected, rtol, atol):
    (loss, params), (loss_ref, params_ref) = result, expected
    np.testing.assert_allclose(loss, loss_ref, rtol=rtol, atol=atol, err_msg="loss")
    assert sorted(params) == sorted(params_ref)
    for name, value in params_ref.items():
        np.testing.assert_allclose(params[name], value, rtol=rtol, atol=atol, err_msg=name)


def test_amp_O1_step_matches_hand_cast_reference(mode, tmp_path, monkeypatch):
    """O1 runs only the white-listed conv and dense layers in float16. The reference does
    exactly that by hand (to_float on those two layers, casts back to float32) around
    mindspore.nn.GroupNorm, which O1 itself cannot rewrite in MindSpore 2.10."""
    monkeypatch.chdir(tmp_path)  # O1's rewrite writes ./rewritten_network/*.py
    conv, norm, dense = _layers(ms_groupnorm.GroupNorm)
    net = amp.auto_mixed_precision(nn.SequentialCell(conv, norm, nn.ReLU(), nn.Flatten(), dense), "O1")
    result = _train_step(net)

    conv, norm, dense = _layers(nn.GroupNorm)
    reference_net = nn.SequentialCell(conv.to_float(ms.float16), _ToFloat32(), norm, nn.ReLU(), nn.Flatten(),
                                      dense.to_float(ms.float16), _ToFloat32())
    expected = _train_step(reference_net)
    _assert_same_step(result, expected, rtol=1e-4, atol=1e-5)

    # And float16 really was used: the all-float32 network lands measurably elsewhere.
    conv, norm, dense = _layers(ms_groupnorm.GroupNorm)
    loss_f32, _ = _train_step(nn.SequentialCell(conv, norm, nn.ReLU(), nn.Flatten(), dense))
    assert abs(loss_f32 - result[0]) > 1e-6


def test_amp_O2_step_matches_mindspore_group_norm(mode):
    """O2 casts every layer outside its black list (which has no GroupNorm) to float16,
    so both GroupNorms see float16 inputs; parameters stay float32 in the optimizer."""
    def build(norm_cls):
        conv, norm, dense = _layers(norm_cls)
        return amp.auto_mixed_precision(nn.SequentialCell(conv, norm, nn.ReLU(), nn.Flatten(), dense), "O2")

    # Two float16 GroupNorm implementations: equal to float16 rounding.
    _assert_same_step(_train_step(build(ms_groupnorm.GroupNorm)), _train_step(build(nn.GroupNorm)),
                      rtol=5e-3, atol=5e-3)


class _LowPrecisionNorm(nn.Cell):
    """Casts the activations to ``dtype`` in front of a GroupNorm with float32 parameters."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype
        self.norm = ms_groupnorm.GroupNorm(2, 8)

    def construct(self, x):
        return ops.cast(self.norm(ops.cast(x, self.dtype)), ms.float32)


@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16], ids=["float16", "bfloat16"])
def test_low_precision_activations_float32_parameters_sgd_step(mode, dtype):
    """x in float16/bfloat16, gamma/beta float32 (CPU SGD rejects bfloat16 parameters).
    The updated parameters must equal gamma - lr * dgamma computed by the float64
    reference from the same rounded x and upstream gradient: with float32 parameters
    the statistics and dgamma/dbeta are float32, so float32 accuracy is expected
    (measured error ~4e-7), not float16's."""
    tol = 1e-5
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8, 5)).astype(np.float32)
    weights = rng.standard_normal((2, 8, 5)).astype(np.float32)
    gamma0 = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    beta0 = rng.uniform(-0.5, 0.5, 8).astype(np.float32)

    cell = _LowPrecisionNorm(dtype)
    cell.norm.gamma.set_data(Tensor(gamma0))
    cell.norm.beta.set_data(Tensor(beta0))
    assert cell.norm(Tensor(x).astype(dtype)).dtype == dtype  # it runs in the low precision

    class Loss(nn.Cell):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            self.weights = Tensor(weights)

        def construct(self, inp):
            return (self.inner(inp) * self.weights).sum()

    step = nn.TrainOneStepCell(Loss(cell), nn.SGD(cell.trainable_params(), learning_rate=LR))
    step(Tensor(x))
    gamma1, beta1 = cell.norm.gamma, cell.norm.beta
    assert gamma1.dtype == ms.float32 and beta1.dtype == ms.float32

    def rounded(a):  # the value the kernel sees after the cast to dtype
        return Tensor(a).astype(dtype).astype(ms.float32).asnumpy().astype(np.float64)

    x_low, dy_low = rounded(x), rounded(weights)
    _, mean, rstd = reference.forward(x_low, gamma0.astype(np.float64), beta0.astype(np.float64), 2)
    _, dgamma, dbeta = reference.backward(dy_low, x_low, mean, rstd, gamma0.astype(np.float64), 2)
    np.testing.assert_allclose(gamma1.asnumpy(), gamma0 - LR * dgamma, rtol=tol, atol=tol, err_msg="gamma")
    np.testing.assert_allclose(beta1.asnumpy(), beta0 - LR * dbeta, rtol=tol, atol=tol, err_msg="beta")


@pytest.mark.parametrize("layer_cls", [ms_groupnorm.GroupNorm, ms_groupnorm.mint.GroupNorm], ids=["nn", "mint"])
@pytest.mark.parametrize("in_dtype, to_dtype", [(ms.float16, ms.float32), (ms.float32, ms.float16)],
                         ids=["fp16_to_fp32", "fp32_to_fp16"])
def test_layer_to_float_sets_its_compute_dtype(mode, layer_cls, in_dtype, to_dtype):
    """``layer.to_float(t)`` makes the layer compute in t and return t, as mindspore.nn.GroupNorm
    does, in both modes; in PyNative that includes the fast path (a CustomOpBuilder function,
    to which MindSpore's per-primitive to_float cast does not apply), and the gradient
    reaches the input in the input's dtype."""
    ms.set_seed(0)
    layer = layer_cls(2, 8).to_float(to_dtype)
    reference_layer = nn.GroupNorm(2, 8).to_float(to_dtype)
    x = Tensor(np.random.default_rng(3).standard_normal((3, 8, 5)).astype(np.float32)).astype(in_dtype)
    y = layer(x)
    assert y.dtype == to_dtype == reference_layer(x).dtype
    want = reference.forward(x.astype(to_dtype).astype(ms.float32).asnumpy(), None, None, 2)[0]
    tolerance = 2e-3 if to_dtype == ms.float16 else 2e-5
    np.testing.assert_allclose(y.astype(ms.float32).asnumpy(), want, rtol=0, atol=tolerance * np.abs(want).max())

    def loss(t):
        return layer(t).astype(ms.float32).sum()

    dx = ms.grad(loss)(x)
    assert dx.dtype == in_dtype and np.isfinite(dx.astype(ms.float32).asnumpy()).all()

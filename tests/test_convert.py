"""convert_group_norm: in-place replacement of mindspore.nn / mint.nn GroupNorm layers."""
import warnings

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, mint, nn

import ms_groupnorm
from ms_groupnorm import convert_group_norm

ORIGINAL_CLASSES = (nn.GroupNorm, mint.nn.GroupNorm)


class Block(nn.Cell):
    """Residual conv block; its norm is an attribute (mint or nn flavour)."""

    def __init__(self, channels, groups, use_mint):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, pad_mode="same", has_bias=True)
        self.norm = mint.nn.GroupNorm(groups, channels) if use_mint else nn.GroupNorm(groups, channels)
        self.act = nn.ReLU()

    def construct(self, x):
        return x + self.act(self.norm(self.conv(x)))


class MultiBlockNet(nn.Cell):
    """GroupNorm layers reached through every container: SequentialCell, CellList,
    CellDict and plain attributes, plus one layer shared by two parents and one with
    affine=False and a non-default eps."""

    def __init__(self):
        super().__init__()
        self.stem = nn.SequentialCell(nn.Conv2d(3, 8, 3, pad_mode="same"), nn.GroupNorm(2, 8), nn.ReLU())
        self.blocks = nn.CellList([Block(8, 4, use_mint=False), Block(8, 2, use_mint=True)])
        self.branches = nn.CellDict({"a": nn.GroupNorm(4, 8, eps=1e-3)})
        self.shared = self.branches["a"]  # the same layer under a second name
        self.head_norm = mint.nn.GroupNorm(8, 8, eps=1e-4, affine=False)
        self.head = nn.Dense(8 * 5 * 5, 3)

    def construct(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        x = self.branches["a"](x) * 0.5 + self.shared(x) * 0.5
        x = self.head_norm(x)
        return self.head(x.reshape(x.shape[0], -1))


def _make_net(seed):
    ms.set_seed(seed)
    net = MultiBlockNet()
    # Non-trivial affine parameters, so that a dropped or swapped gamma/beta shows up.
    rng = np.random.default_rng(seed)
    for param in net.get_parameters():
        if param.name.endswith(("gamma", "beta", "norm.weight", "norm.bias")):
            param.set_data(Tensor(rng.uniform(0.5, 1.5, param.shape).astype(np.float32)))
    return net


def _clone(net, seed):
    clone = _make_net(seed + 1)
    for name, param in clone.parameters_dict().items():
        param.set_data(Tensor(net.parameters_dict()[name].asnumpy()))
    return clone


def _group_norm_layers(net):
    return {name: cell for name, cell in net.cells_and_names()
            if isinstance(cell, ORIGINAL_CLASSES + (ms_groupnorm.GroupNorm, ms_groupnorm.mint.GroupNorm))}


def test_replaces_every_layer_in_place_keeping_parameters():
    net = _make_net(0)
    before = _group_norm_layers(net)
    params_before = [(p.name, p) for p in net.get_parameters()]
    assert len(before) == 5  # stem, two blocks, the shared branch (listed once), head_norm

    assert convert_group_norm(net) is net
    after = _group_norm_layers(net)
    assert sorted(after) == sorted(before)
    for name, old in before.items():
        new = after[name]
        expected_cls = ms_groupnorm.mint.GroupNorm if isinstance(old, mint.nn.GroupNorm) else ms_groupnorm.GroupNorm
        assert type(new) is expected_cls, name
        assert (new.num_groups, new.num_channels, new.eps, new.affine) == \
            (old.num_groups, old.num_channels, old.eps, old.affine), name
        for attr in (("weight", "bias") if expected_cls is ms_groupnorm.mint.GroupNorm else ("gamma", "beta")):
            assert getattr(new, attr) is getattr(old, attr), f"{name}.{attr} is not the original Parameter"
    # Same Parameter objects under the same full names, in the same order.
    assert [(p.name, id(p)) for p in net.get_parameters()] == [(n, id(p)) for n, p in params_before]
    assert net.shared is net.branches["a"]
    assert not net.head_norm.weight.requires_grad  # affine=False carried over
    # SequentialCell.construct iterates cell_list: it must see the replacement too.
    assert type(net.stem.cell_list[1]) is ms_groupnorm.GroupNorm


def test_outputs_and_gradients_match_after_conversion(mode):  # mode: conftest, graph and pynative
    original = _make_net(1)
    converted = convert_group_norm(_clone(original, 1))
    x = Tensor(np.random.default_rng(2).standard_normal((2, 3, 5, 5)).astype(np.float32))
    weights = Tensor(np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32))

    def results(net):
        params = net.trainable_params()
        loss_fn = lambda inp: (net(inp) * weights).sum()  # noqa: E731
        loss, (dx, dparams) = ms.value_and_grad(loss_fn, grad_position=0, weights=params)(x)
        return loss.asnumpy(), dx.asnumpy(), {p.name: g.asnumpy() for p, g in zip(params, dparams)}

    loss_a, dx_a, grads_a = results(original)
    loss_b, dx_b, grads_b = results(converted)
    # Two float32 implementations summing in different orders: equal to rounding only.
    np.testing.assert_allclose(loss_b, loss_a, rtol=1e-5, atol=1e-5, err_msg="loss")
    np.testing.assert_allclose(dx_b, dx_a, rtol=1e-4, atol=1e-5, err_msg="dx")
    assert sorted(grads_b) == sorted(grads_a)
    for name, grad in grads_a.items():
        np.testing.assert_allclose(grads_b[name], grad, rtol=1e-4, atol=1e-5, err_msg=name)


def test_checkpoint_saved_before_conversion_loads_after(mode, tmp_path):
    original = _make_net(4)
    path = str(tmp_path / "before.ckpt")
    ms.save_checkpoint(original, path)

    converted = convert_group_norm(_make_net(5))  # different weights until loaded
    param_not_loaded, ckpt_not_loaded = ms.load_param_into_net(converted, ms.load_checkpoint(path))
    assert param_not_loaded == [] and ckpt_not_loaded == []
    for name, param in original.parameters_dict().items():
        np.testing.assert_array_equal(converted.parameters_dict()[name].asnumpy(), param.asnumpy(), err_msg=name)
    x = Tensor(np.random.default_rng(6).standard_normal((2, 3, 5, 5)).astype(np.float32))
    np.testing.assert_allclose(converted(x).asnumpy(), original(x).asnumpy(), rtol=1e-5, atol=1e-5)

    # And the other way round: a checkpoint of the converted network loads into the original.
    back_path = str(tmp_path / "after.ckpt")
    ms.save_checkpoint(converted, back_path)
    assert ms.load_param_into_net(_make_net(7), ms.load_checkpoint(back_path)) == ([], [])


def test_optimizer_built_before_conversion_still_trains_converted_layers(mode):
    net = _make_net(8)
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.1)  # holds the original Parameters
    convert_group_norm(net)
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    step = nn.TrainOneStepCell(loss_net, optimizer)
    gamma_before = net.stem[1].gamma.asnumpy().copy()
    weight_before = net.blocks[1].norm.weight.asnumpy().copy()
    x = Tensor(np.random.default_rng(9).standard_normal((4, 3, 5, 5)).astype(np.float32))
    step(x, Tensor(np.array([0, 1, 2, 1], np.int32)))
    assert not np.array_equal(net.stem[1].gamma.asnumpy(), gamma_before)
    assert not np.array_equal(net.blocks[1].norm.weight.asnumpy(), weight_before)


def test_top_level_layer_and_subclasses():
    layer = nn.GroupNorm(2, 4, eps=1e-3)
    replacement = convert_group_norm(layer)
    assert type(replacement) is ms_groupnorm.GroupNorm
    assert replacement.gamma is layer.gamma and replacement.eps == 1e-3

    class CustomNorm(nn.GroupNorm):
        """A user subclass may change construct: it must be left alone."""

    net = nn.SequentialCell(CustomNorm(2, 4))
    with pytest.warns(UserWarning, match="nothing was converted"):
        convert_group_norm(net)
    assert type(net[0]) is CustomNorm


def test_warns_when_the_network_was_already_compiled():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = nn.SequentialCell(nn.Dense(4, 4), nn.GroupNorm(2, 4))
        net(Tensor(np.ones((2, 4), np.float32)))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)  # the default the other tests expect
    with pytest.warns(RuntimeWarning, match="already compiled"):
        convert_group_norm(net)
    fresh = nn.SequentialCell(nn.Dense(4, 4), nn.GroupNorm(2, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        convert_group_norm(fresh)


def test_mint_style_layer_matches_mint_group_norm(mode):
    """ms_groupnorm.mint.GroupNorm: mint's signature, parameter names, repr and results."""
    ours, theirs = ms_groupnorm.mint.GroupNorm(3, 6, eps=1e-3), mint.nn.GroupNorm(3, 6, eps=1e-3)
    assert [p.name for p in ours.get_parameters()] == [p.name for p in theirs.get_parameters()] == \
        ["weight", "bias"]
    assert ours.weight.dtype == ms.float32  # dtype=None means float32, as in mint
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(10)
    for layer in (ours, theirs):
        layer.weight.set_data(Tensor(np.linspace(0.5, 1.5, 6, dtype=np.float32)))
        layer.bias.set_data(Tensor(np.linspace(-0.3, 0.3, 6, dtype=np.float32)))
    x = Tensor(rng.standard_normal((2, 6, 4, 3)).astype(np.float32))
    dy = Tensor(rng.standard_normal((2, 6, 4, 3)).astype(np.float32))

    def results(layer):
        fn = lambda inp: (layer(inp) * dy).sum()  # noqa: E731
        _, (dx, (dweight, dbias)) = ms.value_and_grad(fn, grad_position=0, weights=layer.trainable_params())(x)
        return layer(x).asnumpy(), dx.asnumpy(), dweight.asnumpy(), dbias.asnumpy()

    for name, got, want in zip(("y", "dx", "dweight", "dbias"), results(ours), results(theirs)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)
    with pytest.raises(ValueError, match="must be divided by"):
        ms_groupnorm.mint.GroupNorm(4, 6)


# ---------------------------------------------------------------- Cell settings the conversion keeps
# Cell state that is per instance by nature (identity, caches, children) or rebuilt by the
# conversion (recompute wrapper): everything else must be carried over unchanged.
_PER_INSTANCE = {"_params", "_cells", "_create_time", "_id", "_compile_cache", "_phase_cache", "_exist_objs",
                 "_exist_names", "_recompute_cell", "_lazy_construct_sig", "_cell_init_args", "_jit_graph_name"}


def _settings(cell):
    return {key: value for key, value in cell.__dict__.items() if key not in _PER_INSTANCE}


@pytest.mark.parametrize("cls", ORIGINAL_CLASSES, ids=["nn", "mint"])
def test_every_cell_setting_is_carried_over(cls):
    hook_calls = []
    layer = cls(2, 4)
    layer.to_float(ms.float32)
    layer.recompute()
    layer.set_grad(True)
    layer.set_train(False)
    layer.add_flags(my_flag=3)
    layer.note = "user attribute"
    layer.register_forward_pre_hook(lambda cell, inputs: hook_calls.append(type(cell).__name__))
    net = nn.SequentialCell(nn.Dense(4, 4), layer)
    convert_group_norm(net)
    new = net[1]
    assert type(new) is not cls
    old_settings, new_settings = _settings(layer), _settings(new)
    for key, value in old_settings.items():
        assert key in new_settings, f"{key} was dropped"
        if not callable(value) and not isinstance(value, dict):
            assert new_settings[key] == value, f"{key}: {new_settings[key]!r} != {value!r}"
    assert new._func_graph_flags == layer._func_graph_flags
    assert new.mixed_precision_type == layer.mixed_precision_type
    assert new.requires_grad and not new.training and new.my_flag == 3 and new.note == "user attribute"
    assert new._has_config_recompute and new._recompute_cell is not None
    new(Tensor(np.ones((2, 4), np.float32)))
    assert hook_calls == [type(new).__name__]  # the forward pre-hook moved with the layer


def test_to_float_float32_keeps_float32_output_after_conversion(mode):
    """A GroupNorm forced to float32 (to_float) behind a float16 layer, as latent-diffusion
    code does: nn.GroupNorm returns float32, and so must its replacement."""
    def build():
        ms.set_seed(0)
        return nn.SequentialCell(nn.Dense(4, 8).to_float(ms.float16), nn.GroupNorm(2, 8).to_float(ms.float32))

    x = Tensor(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32))
    reference_net = build()
    want = reference_net(x)
    net = convert_group_norm(build())
    assert type(net[1]) is ms_groupnorm.GroupNorm
    got = net(x)
    assert want.dtype == got.dtype == ms.float32
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-4, atol=1e-4)


def test_use_reentrant_false_recompute_is_carried_over():
    layer = nn.GroupNorm(2, 4)
    layer.recompute(use_reentrant=False)
    new = convert_group_norm(layer)
    assert new._has_config_recompute and callable(new._recompute_cell) and not isinstance(new._recompute_cell, nn.Cell)
    assert new._recompute_cell is not layer._recompute_cell


def test_reports_how_many_layers_it_converted(caplog):
    net = _make_net(11)
    with caplog.at_level("INFO", logger="ms_groupnorm.convert"):
        convert_group_norm(net)
    assert "replaced 5 GroupNorm layer(s) in MultiBlockNet" in caplog.text


def test_warns_when_nothing_was_converted():
    class CustomNorm(nn.GroupNorm):
        pass

    with pytest.warns(UserWarning, match="nothing was converted") as record:
        convert_group_norm(nn.SequentialCell(nn.Dense(4, 4), CustomNorm(2, 4)))
    assert "1 subclass layer(s) left alone" in str(record[0].message)

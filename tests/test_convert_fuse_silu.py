"""convert_group_norm(net, fuse_silu=True): GroupNorm -> SiLU pairs of SequentialCells become
one fused GroupNormSiLU (same Parameters and names) and an Identity; the converted net computes
what the original did, forward and gradients; everything else is converted as without the flag."""
import warnings

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, mint, nn

import ms_groupnorm
from ms_groupnorm import GroupNormSiLU, convert_group_norm


class ResnetBlock(nn.Cell):
    """mindone's ResnetBlock2D shape: norm -> SiLU -> conv twice, a residual; the pairs sit
    in SequentialCells, as in diffusion code that builds blocks from layer lists."""

    def __init__(self, channels, groups, flavour):
        super().__init__()
        norm = {"nn": lambda: nn.GroupNorm(groups, channels), "mint": lambda: mint.nn.GroupNorm(groups, channels),
                "ours": lambda: ms_groupnorm.GroupNorm(groups, channels)}[flavour]
        silu = mint.nn.SiLU if flavour == "mint" else nn.SiLU
        self.in_layers = nn.SequentialCell([norm(), silu(), nn.Conv2d(channels, channels, 3, pad_mode="same",
                                                                      has_bias=True)])
        self.out_layers = nn.SequentialCell([norm(), silu(), nn.Conv2d(channels, channels, 3, pad_mode="same",
                                                                       has_bias=True)])

    def construct(self, x):
        return x + self.out_layers(self.in_layers(x))


class CustomOrder(nn.Cell):
    """GroupNorm and SiLU as attributes, run by a construct of its own (not fused: the
    GroupNorm's output is used twice)."""

    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(2, 8)
        self.act = nn.SiLU()

    def construct(self, x):
        y = self.norm(x)
        return self.act(y) + y


class ReversedSequential(nn.SequentialCell):
    """A SequentialCell whose construct runs its children backwards."""

    def construct(self, x):
        for cell in self.cell_list[::-1]:
            x = cell(x)
        return x


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.blocks = nn.CellList([ResnetBlock(8, 4, "nn"), ResnetBlock(8, 2, "mint"), ResnetBlock(8, 4, "ours")])
        self.custom = CustomOrder()
        self.gapped = nn.SequentialCell([nn.GroupNorm(4, 8), nn.ReLU(), nn.SiLU()])  # SiLU not right after
        self.reversed = ReversedSequential([nn.SiLU(), nn.GroupNorm(2, 8)])
        shared = nn.GroupNorm(2, 8)
        self.shared_a = nn.SequentialCell([shared, nn.SiLU()])
        self.shared_b = nn.SequentialCell([shared, nn.Identity()])
        self.head = nn.SequentialCell([nn.GroupNorm(8, 8, eps=1e-3, affine=False), nn.SiLU()])

    def construct(self, x):
        for block in self.blocks:
            x = block(x)
        x = self.custom(x)
        x = self.gapped(x)
        x = self.reversed(x)
        x = self.shared_a(x) + self.shared_b(x)
        return self.head(x)


def make_net(seed=0):
    ms.set_seed(seed)
    net = Net()
    rng = np.random.default_rng(seed)
    for param in net.get_parameters():  # non-trivial affine parameters: a dropped or swapped one shows
        if param.name.endswith(("gamma", "beta", ".weight", ".bias")) and param.ndim == 1:
            param.set_data(Tensor(rng.uniform(0.5, 1.5, param.shape).astype(np.float32)))
    net.blocks[0].in_layers[0].beta.requires_grad = False
    return net


FUSED_CLASSES = (GroupNormSiLU, ms_groupnorm.mint.GroupNormSiLU)
FUSED = ("blocks.0.in_layers", "blocks.0.out_layers", "blocks.1.in_layers", "blocks.1.out_layers",
         "blocks.2.in_layers", "blocks.2.out_layers", "head")


def test_pairs_become_fused_layers_holding_the_same_parameters():
    net = make_net()
    before = {p.name: p for p in net.get_parameters()}
    requires_grad = {name: p.requires_grad for name, p in before.items()}
    convert_group_norm(net, fuse_silu=True)
    cells = dict(net.cells_and_names())
    for name in FUSED:
        seq = cells[name]
        assert type(seq[0]) is (ms_groupnorm.mint.GroupNormSiLU if name.startswith("blocks.1") else GroupNormSiLU)
        assert type(seq[1]) is nn.Identity
        assert len(seq) == (2 if name == "head" else 3) and (name == "head" or isinstance(seq[2], nn.Conv2d))
        assert seq.cell_list[0] is seq[0]  # what SequentialCell.construct iterates
    after = {p.name: p for p in net.get_parameters()}
    assert after.keys() == before.keys()  # checkpoint keys unchanged
    for name, param in after.items():
        assert param is before[name] and param.requires_grad == requires_grad[name], name
    assert cells["head"][0].eps == 1e-3 and not cells["head"][0].affine


def test_everything_else_is_converted_as_without_the_flag():
    net = convert_group_norm(make_net(), fuse_silu=True)
    cells = dict(net.cells_and_names())
    assert type(cells["custom"].norm) is ms_groupnorm.GroupNorm and type(cells["custom"].act) is nn.SiLU
    assert [type(c) for c in cells["gapped"]] == [ms_groupnorm.GroupNorm, nn.ReLU, nn.SiLU]
    assert [type(c) for c in cells["reversed"]] == [nn.SiLU, ms_groupnorm.GroupNorm]
    assert type(cells["shared_a"][0]) is ms_groupnorm.GroupNorm and cells["shared_a"][0] is cells["shared_b"][0]
    assert type(cells["shared_a"][1]) is nn.SiLU


def test_default_is_the_plain_conversion():
    net = convert_group_norm(make_net())
    assert not any(isinstance(c, FUSED_CLASSES) for _, c in net.cells_and_names())
    assert type(net.blocks[0].in_layers[1]) is nn.SiLU


def test_hooks_or_flags_keep_a_pair_apart():
    net = make_net()
    net.blocks[0].in_layers[0].register_forward_hook(lambda cell, inputs, output: None)
    net.blocks[0].out_layers[1].to_float(ms.float16)
    convert_group_norm(net, fuse_silu=True)
    for seq in (net.blocks[0].in_layers, net.blocks[0].out_layers):
        assert type(seq[0]) is ms_groupnorm.GroupNorm and type(seq[1]) is nn.SiLU
    assert type(net.blocks[2].in_layers[0]) is GroupNormSiLU


def _forward_and_grads(net, x):
    params = net.trainable_params()
    weight = Tensor(np.linspace(-1, 1, x.size).reshape(x.shape), ms.float32)
    loss = lambda inp: (net(inp) * weight).sum()  # noqa: E731
    value, (dx, dparams) = ms.value_and_grad(loss, grad_position=0, weights=params)(x)
    return net(x).asnumpy(), value.asnumpy(), dx.asnumpy(), {p.name: g.asnumpy() for p, g in zip(params, dparams)}


def test_converted_net_computes_what_the_original_does(mode):
    x = Tensor(np.random.default_rng(3).standard_normal((2, 8, 5, 5)).astype(np.float32) + 0.3)
    want = _forward_and_grads(make_net(), x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about: pairs were found, nothing compiled
        net = convert_group_norm(make_net(), fuse_silu=True)
    assert sum(isinstance(c, FUSED_CLASSES) for _, c in net.cells_and_names()) == len(FUSED)
    got = _forward_and_grads(net, x)
    for name, a, b in zip(("out", "loss", "dx"), got[:3], want[:3]):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5 * max(1.0, np.abs(b).max()), err_msg=name)
    assert got[3].keys() == want[3].keys()
    for name, grad in want[3].items():
        np.testing.assert_allclose(got[3][name], grad, rtol=2e-5, atol=2e-5 * max(1.0, np.abs(grad).max()),
                                   err_msg=name)


def test_checkpoints_load_across_the_conversion(tmp_path):
    original = make_net(seed=1)
    path = str(tmp_path / "net.ckpt")
    ms.save_checkpoint(original, path)
    fused = convert_group_norm(make_net(seed=2), fuse_silu=True)
    not_loaded, _ = ms.load_param_into_net(fused, ms.load_checkpoint(path))
    assert not not_loaded
    for a, b in zip(original.get_parameters(), fused.get_parameters()):
        assert a.name == b.name and np.array_equal(a.asnumpy(), b.asnumpy()), a.name
    ms.save_checkpoint(fused, str(tmp_path / "fused.ckpt"))  # and back into an unconverted net
    restored = make_net(seed=3)
    assert not ms.load_param_into_net(restored, ms.load_checkpoint(str(tmp_path / "fused.ckpt")))[0]
    x = Tensor(np.ones((1, 8, 3, 3), np.float32))
    np.testing.assert_allclose(restored(x).asnumpy(), original(x).asnumpy(), rtol=1e-6, atol=1e-6)

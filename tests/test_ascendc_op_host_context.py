"""Our three op_host registrations as CANN runs them (tests/op_host_context.py): built as a custom-op
tiling library, OP_ADD registers each tiling in gert's OpImplRegistry, and the tiling runs on a real
gert::TilingContext for a 910B. Every call must give the twin's tiling, field by field, with the
tiling key, block dim, schedule mode and workspace size the kernel launch needs; a bad call must be
refused with the rule named. Skips with a one-line reason without METADEF and ASC_DEVKIT."""
import numpy as np
import pytest

import cann_peer
import op_host_context
import twin

GRAD, SILU_GRAD, FORWARD = (op_host_context.OPERATORS[name] for name in
                            ("GroupNormGradMs", "GroupNormSiluGradMs", "GroupNormSiluMs"))
SCHEDULE_MODE_BATCH = 1  # all blocks resident at once: SyncAll needs it
# (N, C, HxW, G): an SD UNet anchor, a 2-D input, a group past the UB, a split over cores, odd sizes
SHAPES = [(2, 320, 4096, 32), (4096, 512, 1, 32), (1, 64, 16384, 2), (8, 512, 255, 2), (3, 65, 7, 5)]
COLUMNS = range(5)  # the OpDef's dtype columns: fp32, fp16, bf16, fp16/fp32, bf16/fp32


@pytest.fixture(scope="module", autouse=True)
def built():
    return op_host_context.build_or_skip(op_host_context.library)


def _grad_twin(op, N, C, HxW, G, column, mask, swish_scale=1.0):
    dtypes = op.dtypes(column)
    return twin.twin_tiling(N, C, HxW, G, dtypes["dy"], dtypes["mean"], mask=mask, silu=op is SILU_GRAD,
                            swish_scale=swish_scale)


def _check_grad(op, got, want):
    fields = op_host_context.decode(got["raw"], twin.tiling_fields(), ["swish_scale"])
    assert fields == {name: want[name] for name in fields}
    assert got["raw"].size == 8 * len(twin.tiling_fields()) + 8  # the float and the struct's padding
    assert got["tiling_key"] == want["key"] and got["block_dim"] == want["blockDim"]
    assert got["schedule_mode"] == SCHEDULE_MODE_BATCH
    user = 2 * want["N"] * want["hwSlices"] * want["C"] * 4 if want["needWorkspace"] else 0
    assert got["workspace"] == cann_peer.SYSTEM_WORKSPACE + user


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_group_norm_grad_ms_tiles_as_the_twin(shape, column):
    N, C, HxW, G = shape
    for mask in [(True, True, True), (True, False, True), (False, True, False)]:
        got = op_host_context.tiling(GRAD, N, C, HxW, G, column, dx_is_require=mask[0], dgamma_is_require=mask[1],
                                     dbeta_is_require=mask[2])
        _check_grad(GRAD, got, _grad_twin(GRAD, N, C, HxW, G, column, mask))


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_group_norm_silu_grad_ms_tiles_as_the_twin(shape, column):
    N, C, HxW, G = shape
    for mask, scale in [((True, True, True), 1.0), ((False, True, True), 1.7), ((True, False, False), 0.5)]:
        got = op_host_context.tiling(SILU_GRAD, N, C, HxW, G, column, swish_scale=scale, dx_is_require=mask[0],
                                     dgamma_is_require=mask[1], dbeta_is_require=mask[2])
        _check_grad(SILU_GRAD, got, _grad_twin(SILU_GRAD, N, C, HxW, G, column, mask, scale))


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_group_norm_silu_ms_tiles_as_the_twin(shape, column):
    N, C, HxW, G = shape
    dtypes = FORWARD.dtypes(column)
    for eps, silu, scale in [(1e-5, True, 1.0), (1e-6, False, 1.0), (0.1, True, 1.7)]:
        got = op_host_context.tiling(FORWARD, N, C, HxW, G, column, eps=eps, activate_silu=silu, swish_scale=scale)
        want = twin.forward_tiling(N, C, HxW, G, dtypes["x"], dtypes["gamma"], eps=eps, activate_silu=silu,
                                   swish_scale=scale)
        fields = op_host_context.decode(got["raw"], twin.forward_tiling_fields(), ["eps", "swish_scale"])
        assert fields == {**{n: want[n] for n in twin.forward_tiling_fields()},
                          "eps": float(np.float32(eps)), "swish_scale": float(np.float32(scale))}
        assert got["tiling_key"] == want["key"] and got["block_dim"] == want["blockDim"]
        assert got["schedule_mode"] == SCHEDULE_MODE_BATCH
        user = want["numTasks"] * 8 * 4 if want["sliceCount"] > 1 else 0
        assert got["workspace"] == cann_peer.SYSTEM_WORKSPACE + user


def test_optional_attributes_take_their_opdef_defaults():
    """The framework leaves an unset OPTIONAL attribute out of the context: the tiling reads the
    OpDef's default (masks on, eps 1e-5, SiLU on, swish_scale 1)."""
    N, C, HxW, G = SHAPES[0]
    _check_grad(GRAD, op_host_context.tiling(GRAD, N, C, HxW, G), _grad_twin(GRAD, N, C, HxW, G, 0, (True,) * 3))
    _check_grad(SILU_GRAD, op_host_context.tiling(SILU_GRAD, N, C, HxW, G),
                _grad_twin(SILU_GRAD, N, C, HxW, G, 0, (True,) * 3))
    got = op_host_context.tiling(FORWARD, N, C, HxW, G)
    fields = op_host_context.decode(got["raw"], twin.forward_tiling_fields(), ["eps", "swish_scale"])
    want = twin.forward_tiling(N, C, HxW, G)
    assert fields["eps"] == float(np.float32(1e-5)) and fields["swish_scale"] == 1.0
    assert fields["activateSilu"] == 1 and fields["mode"] == want["mode"]


@pytest.mark.parametrize("op", [GRAD, SILU_GRAD, FORWARD], ids=lambda op: op.op_type)
def test_a_bad_call_is_refused(op, capfd):
    """The tiling refuses what the framework would otherwise launch wrongly, naming the rule on
    stderr (CANN's plog): num_groups not dividing C, num_groups 0, a (N, G) statistic of the wrong
    size, and (forward) an eps that is not positive."""
    bad = [dict(G=3), dict(G=0)]
    stat = "mean" if op is not FORWARD else None
    for case in bad:
        with pytest.raises(ValueError, match="tiling refused"):
            op_host_context.tiling(op, 2, 32, 16, case["G"])
    if stat:
        with pytest.raises(ValueError, match="tiling refused"):
            op_host_context.tiling(op, 2, 32, 16, 4, shapes={stat: (2, 5)})
    else:
        with pytest.raises(ValueError, match="tiling refused"):
            op_host_context.tiling(op, 2, 32, 16, 4, eps=0.0)
    assert "num_groups" in capfd.readouterr().err

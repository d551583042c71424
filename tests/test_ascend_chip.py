"""The chip check before the first launch on Ascend (ms_groupnorm.backends.ascend_chip), on
CPU with the simulated Ascend routes (tests/test_ascend_simulated.py): MindSpore's reported
SoC is replaced, the fake CANN tree's package lists the SoCs it was "built for"
(op_impl/ai_core/tbe/config/<soc>), and nothing may reach the stand-in module or be compiled
before a refusal."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor

import ms_groupnorm
from ms_groupnorm.backends import ascend, ascend_chip
from ms_groupnorm.backends import ascend_pyboost
from ms_groupnorm.backends.ascend_chip import UnsupportedChipError
from test_ascend_simulated import _training_step, simulated  # noqa: F401 (the fixture)

X = np.random.default_rng(0).standard_normal((2, 4, 3)).astype(np.float32)


@pytest.fixture
def chip(monkeypatch):
    """Sets the SoC MindSpore reports and the device target the check sees."""
    def report(name, on_device=True):
        monkeypatch.setattr(ascend_chip, "reported_chip", lambda: name)
        monkeypatch.setattr(ascend_chip, "on_ascend_device", lambda: on_device)
    ascend_chip._check_chip.cache_clear()  # pylint: disable=protected-access
    yield report
    ascend_chip._check_chip.cache_clear()  # pylint: disable=protected-access


def _pynative_call(grad=True):
    """The layer in PyNative: a gradient (the backward launches on the module), or (for the
    refusals) the forward alone, which creates the ops and so meets the check. An exception
    inside ms.grad leaves MindSpore's PyNative grad state broken for later tests."""
    net = ms_groupnorm.GroupNorm(2, 4)
    if not grad:
        return net(Tensor(X))
    return ms.grad(lambda x: net(x).sum())(Tensor(X))


@pytest.mark.parametrize("soc, reason", [
    ("ascend910", r"DataCopyPad and Brcb compile to nothing.*SyncAll is ASSERT\(0\).*no bfloat16.*event ids 0-3"),
    ("ascend310p", "Atlas inference products"),
    ("ascend310b", "310B"),
    ("ascend999", "not one the operators are written for"),
])
def test_other_chips_are_refused_by_name_before_anything_is_built(simulated, chip, soc, reason):
    module = simulated()
    chip(soc)
    with pytest.raises(UnsupportedChipError, match=rf"chip '{soc}': .*{reason}.*Supported: ascend910b, "
                       rf"ascend910_93.*What to do: use MindSpore's own GroupNorm") as info:
        _pynative_call(grad=False)
    assert info.value.chip == soc and "ascend910b" in info.value.supported
    assert module.builders == [] and module.calls == []  # nothing built, nothing launched
    with pytest.raises(UnsupportedChipError, match=soc):  # GRAPH_MODE's ops: refused when created
        ascend.backward_custom()


@pytest.mark.parametrize("soc", ["ascend910b", "ascend910_93"])
def test_supported_chips_run(simulated, chip, soc):
    module = simulated()
    chip(soc)
    _training_step(ms.float32, 1e-5)
    assert any(c[0] == "group_norm_grad" for c in module.calls)
    assert ascend.backward_custom() is not None


def test_a_package_built_for_another_chip_is_refused(simulated, chip):
    """The package lists ascend910b only (its config directories); on an A3 it must be rebuilt."""
    module = simulated(socs=("ascend910b",))
    chip("ascend910_93")
    with pytest.raises(UnsupportedChipError, match=r"built for ascend910b only.*build\.sh.*Supported: ascend910b"):
        _pynative_call(grad=False)
    assert module.builders == []
    with pytest.raises(UnsupportedChipError, match="built for ascend910b only"):
        ascend.backward_custom()


def test_ascend950_is_refused_unless_the_user_opts_in(simulated, chip, monkeypatch):
    module = simulated(socs=("ascend910b", "ascend910_93", "ascend950"))
    chip("ascend950")
    with pytest.raises(UnsupportedChipError, match=r"never compiled with bisheng for it nor run on one.*"
                       rf"{ascend_chip.ALLOW_UNVERIFIED_ENV}=ascend950"):
        _pynative_call(grad=False)
    assert module.builders == []
    monkeypatch.setenv(ascend_chip.ALLOW_UNVERIFIED_ENV, "ascend950")
    _pynative_call()
    assert module.calls


def test_ascend950_opt_in_still_needs_a_package_built_for_it(simulated, chip, monkeypatch):
    simulated()  # built for the A2/A3 SoCs only, as an 8.x CANN without ascend950 builds it
    chip("ascend950")
    monkeypatch.setenv(ascend_chip.ALLOW_UNVERIFIED_ENV, "ascend950")
    with pytest.raises(UnsupportedChipError, match="built for ascend910_93, ascend910b only"):
        _pynative_call(grad=False)


def test_no_chip_reported_on_an_ascend_device_is_refused(simulated, chip):
    simulated()
    chip("", on_device=True)
    with pytest.raises(UnsupportedChipError, match="reports no Ascend SoC version"):
        _pynative_call(grad=False)


def test_the_simulation_without_a_chip_is_not_checked(simulated, chip):
    """The stand-in rule: off an Ascend device (device target CPU) MindSpore reports "" and
    the simulated routes run; the same "" on a device is refused (test above)."""
    module = simulated()
    chip("", on_device=False)
    _pynative_call()
    assert module.calls
    assert ascend_chip.reported_chip.__module__ == __name__  # the fixture replaced it


def test_mindspore_reports_no_chip_on_this_cpu_machine():
    """The real reader, here: MindSpore's MSContext answers "" off Ascend (the value the
    simulation relies on)."""
    assert ascend_chip.reported_chip() == ""
    assert not ascend_chip.on_ascend_device()


def test_package_chips_reads_the_config_directories(tmp_path):
    assert ascend_chip.package_chips(tmp_path) is None
    for soc in ("ascend910b", "ascend950"):
        (tmp_path / ascend_chip.CONFIG_DIR / soc).mkdir(parents=True)
    (tmp_path / ascend_chip.CONFIG_DIR / "README").write_text("not a SoC")
    assert ascend_chip.package_chips(tmp_path) == ["ascend910b", "ascend950"]


# ---- $MS_GROUPNORM_ASCEND_FALLBACK=mindspore: MindSpore's own GroupNorm on a refused chip
@pytest.fixture
def fallback(monkeypatch):
    from ms_groupnorm.ops import routing
    monkeypatch.setenv(ascend.FALLBACK_ENV, ascend.FALLBACK_VALUE)
    caches = (ascend._fallback_to_mindspore, routing._forward_op, routing._backward_op)  # pylint: disable=protected-access
    for cache in caches:
        cache.cache_clear()
    yield routing
    for cache in caches:
        cache.cache_clear()


def test_fallback_runs_mindspores_groupnorm_on_a_refused_chip(simulated, chip, fallback):
    """On a 910 with the fallback asked for: one warning naming the chip, then MindSpore's
    GroupNorm forward and backward (nothing reaches our module), gradients as the reference."""
    module = simulated()
    chip("ascend910")
    with pytest.warns(UserWarning, match=r"'ascend910'.*running MindSpore's own GroupNorm"):
        _training_step(ms.float32, 1e-5)
    assert module.builders == [] and module.calls == []
    assert type(fallback.forward_op(3, 1e-5)).__name__ == "BuiltinForward"
    with pytest.raises(UnsupportedChipError, match="ascend910"):  # the functional backward has no kernel
        fallback.backward_op(3)
    assert fallback.fused_backend() is None  # the fused layers run GroupNorm then SiLU
    ms.set_context(mode=ms.GRAPH_MODE)  # and in a graph (the fixture sets PYNATIVE_MODE back)
    _training_step(ms.float32, 1e-5)
    assert module.builders == [] and module.calls == []


def test_fallback_is_not_taken_on_a_supported_chip(simulated, chip, fallback):
    module = simulated()
    chip("ascend910b")
    _training_step(ms.float32, 1e-5)
    assert any(c[0] == "group_norm_grad" for c in module.calls)  # our operators ran


def test_fallback_takes_one_documented_value(simulated, chip, fallback, monkeypatch):
    simulated()
    chip("ascend910")
    monkeypatch.setenv(ascend.FALLBACK_ENV, "builtin")
    with pytest.raises(ValueError, match=r"MS_GROUPNORM_ASCEND_FALLBACK must be unset or 'mindspore'"):
        _pynative_call(grad=False)


def test_the_supported_list_names_ascend950_only_once_opted_in(chip, monkeypatch):
    chip("ascend310p")
    with pytest.raises(UnsupportedChipError) as info:
        ascend_chip.check_chip()
    assert info.value.supported == ("ascend910b", "ascend910_93")
    monkeypatch.setenv(ascend_chip.ALLOW_UNVERIFIED_ENV, "ascend950")
    with pytest.raises(UnsupportedChipError) as info:
        ascend_chip.check_chip()
    assert info.value.supported == ("ascend910b", "ascend910_93", "ascend950")

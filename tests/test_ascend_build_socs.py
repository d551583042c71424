"""Which SoCs kernels/ascendc/build.sh builds for, against stand-in CANN trees of each kind:
an 8.x CANN that does not know ascend950 (its built-in operators have no
opp/built-in/op_impl/ai_core/tbe/config/ascend950), a newer one that does, one without that
directory, and wheels whose custom_compiler does or does not accept ascend950 (MindSpore 2.7.1
and 2.8.0 do not; 2.9.0 and 2.10.0 do). A user's build must never break because of 950."""
import re

import pytest

from test_ascend_scripts import fake, run, scripts_copy  # noqa: F401  (fake is a fixture)

WHEEL_2_7 = 'support_soc_version = {"ascend310p", "ascend310b", "ascend910", "ascend910b", "ascend910_93"}\n'
WHEEL_2_10 = ('support_soc_version = {"ascend310p", "ascend310b", "ascend910", "ascend910b", "ascend910_93", '
              '"ascend950"}\n')
CANN_8 = ("ascend310p", "ascend910", "ascend910b", "ascend910_93")  # no ascend950
CANN_NEW = CANN_8 + ("ascend950",)


def _cann(fake, socs, wheel):  # noqa: F811
    for soc in socs:
        (fake["tmp"] / "cann" / "opp" / "built-in" / "op_impl" / "ai_core" / "tbe" / "config" / soc).mkdir(
            parents=True)
    (fake["compiler"] / "setup.py").write_text(wheel)


def _built(fake, result):  # noqa: F811
    """(SoCs passed to custom_compiler, the AddConfig SoCs of the op_host it was given)."""
    assert result.returncode == 0, result.stdout + result.stderr
    args = (fake["log"] / "setup_args").read_text().split()
    op_host = args[args.index("-o") + 1]
    declared = set()
    for name in ("group_norm_grad_ms.cpp", "group_norm_silu_ms.cpp", "group_norm_silu_grad_ms.cpp"):
        text = open(f"{op_host}/{name}", encoding="utf-8").read()
        declared.add(tuple(re.findall(r'AddConfig\("(\w+)"\)', text)))
    assert len(declared) == 1, declared  # every operator declares the same SoCs
    installed = re.search(r"\(SoCs: ([a-z0-9_;]+)\)", result.stdout).group(1)
    soc_arg = args[args.index("--soc_version") + 1]
    assert installed == soc_arg
    return soc_arg.split(";"), list(declared.pop())


def test_cann_8_without_ascend950_builds_a2_a3_and_says_so(fake):  # noqa: F811
    _cann(fake, CANN_8, WHEEL_2_10)
    root = scripts_copy(fake["tmp"])
    result = run("build.sh", fake["env"], fake["tmp"], root)
    socs, declared = _built(fake, result)
    assert socs == declared == ["ascend910b", "ascend910_93"]
    assert "not building for ascend950: this CANN does not support it" in result.stdout
    assert "building for SoCs: ascend910b, ascend910_93" in result.stdout
    assert 'AddConfig("ascend950")' in (root / "op_host" / "group_norm_grad_ms.cpp").read_text()  # untouched


def test_new_cann_and_wheel_build_ascend950_from_the_sources_themselves(fake):  # noqa: F811
    _cann(fake, CANN_NEW, WHEEL_2_10)
    root = scripts_copy(fake["tmp"])
    result = run("build.sh", fake["env"], fake["tmp"], root)
    socs, declared = _built(fake, result)
    assert socs == declared == ["ascend910b", "ascend910_93", "ascend950"]
    assert "not building" not in result.stdout
    args = (fake["log"] / "setup_args").read_text().split()
    assert args[args.index("-o") + 1] == str(root / "op_host")


def test_new_cann_with_a_wheel_that_predates_ascend950_leaves_it_out(fake):  # noqa: F811
    _cann(fake, CANN_NEW, WHEEL_2_7)
    socs, declared = _built(fake, result := run("build.sh", fake["env"], fake["tmp"]))
    assert socs == declared == ["ascend910b", "ascend910_93"]
    assert "not building for ascend950: this MindSpore wheel's custom_compiler does not accept it" in result.stdout


def test_a_cann_without_config_directories_leaves_ascend950_out(fake):  # noqa: F811
    (fake["compiler"] / "setup.py").write_text(WHEEL_2_10)
    socs, declared = _built(fake, result := run("build.sh", fake["env"], fake["tmp"]))
    assert socs == declared == ["ascend910b", "ascend910_93"]
    assert "not building for ascend950: cannot tell whether this CANN supports it" in result.stdout


def test_the_machines_chip_only(fake):  # noqa: F811
    _cann(fake, CANN_NEW, WHEEL_2_10)
    env = dict(fake["env"], MS_GROUPNORM_SOCS="ascend910_93")
    socs, declared = _built(fake, result := run("build.sh", env, fake["tmp"]))
    assert socs == declared == ["ascend910_93"]
    assert "not building for ascend910b: not in $MS_GROUPNORM_SOCS" in result.stdout


@pytest.mark.parametrize("chip", ["ascend310p", "ascend910"])
def test_a_chip_the_operators_do_not_support_builds_nothing(fake, chip):  # noqa: F811
    _cann(fake, CANN_NEW, WHEEL_2_10)
    result = run("build.sh", dict(fake["env"], MS_GROUPNORM_SOCS=chip), fake["tmp"])
    assert result.returncode == 2
    assert "no SoC left to build for" in result.stderr and f"$MS_GROUPNORM_SOCS: {chip}" in result.stderr
    assert not (fake["log"] / "setup_args").exists()


def test_a_cann_without_an_a2_soc_builds_the_others(fake):  # noqa: F811
    """The CANN filter applies to every SoC: a CANN listing only ascend910_93 gets only that."""
    _cann(fake, ("ascend910_93",), WHEEL_2_10)
    socs, declared = _built(fake, run("build.sh", fake["env"], fake["tmp"]))
    assert socs == declared == ["ascend910_93"]

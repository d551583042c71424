"""CANN's environment as the Ascend routes and build.sh need it: build.sh sources CANN's
set_env.sh itself when the caller has not, mends the copy of the wheel's custom_compiler
setup.py that would write to /cmake/util, and a CANN path that MindSpore's
``ASCEND_OPP_PATH.split('opp')[0]`` would cut short is refused with the reason."""
import pytest

from ms_groupnorm.backends import cann_env as _cann_env
from test_ascend_scripts import fake, run  # noqa: F401  (fake is a fixture)

WHEEL_SETUP = ('support_soc_version = {"ascend910b", "ascend910_93"}\n'
               'dst_item_path = os.path.join(self.custom_project, "/cmake/util/", item)\n')


def test_build_sources_canns_set_env_when_the_environment_is_not_set(fake):  # noqa: F811
    set_env = fake["tmp"] / "cann" / "set_env.sh"
    set_env.write_text(set_env.read_text() + 'touch "$FAKE_LOG/sourced"\n')
    result = run("build.sh", fake["env"], fake["tmp"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert (fake["log"] / "sourced").exists()
    assert "sourcing" in result.stdout


def test_build_keeps_an_environment_that_is_set(fake):  # noqa: F811
    set_env = fake["tmp"] / "cann" / "set_env.sh"
    set_env.write_text(set_env.read_text() + 'touch "$FAKE_LOG/sourced"\n')
    result = run("build.sh", dict(fake["env"], ASCEND_OPP_PATH="/set/by/caller/opp"), fake["tmp"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (fake["log"] / "sourced").exists()


def test_build_mends_the_copied_setup_py_that_writes_to_root_cmake_util(fake):  # noqa: F811
    (fake["compiler"] / "setup.py").write_text(WHEEL_SETUP)
    result = run("build.sh", fake["env"], fake["tmp"])
    assert result.returncode == 0, result.stdout + result.stderr
    copied = (fake["tmp"] / "work" / "custom_compiler" / "setup.py").read_text()
    assert '"/cmake/util/"' not in copied and 'os.path.join(self.custom_project, "cmake/util/", item)' in copied
    assert (fake["compiler"] / "setup.py").read_text() == WHEEL_SETUP  # the wheel itself is untouched


@pytest.mark.parametrize("opp_path", ["/usr/local/Ascend/ascend-toolkit/latest/opp", "/data/cann-8.3/opp/"])
def test_a_cann_path_mindspore_reads_right_is_accepted(monkeypatch, opp_path):
    monkeypatch.setenv("ASCEND_OPP_PATH", opp_path)
    _cann_env.check_cann_environment("the test")


def test_a_cann_path_with_opp_before_its_opp_directory_is_refused(monkeypatch):
    monkeypatch.setenv("ASCEND_OPP_PATH", "/home/hopper/Ascend/ascend-toolkit/latest/opp")
    with pytest.raises(RuntimeError, match=r"split\('opp'\)\[0\] = '/home/h'.*ln -s /home/hopper/Ascend"):
        _cann_env.check_cann_environment("the test")


def test_an_unset_cann_environment_is_refused(monkeypatch):
    monkeypatch.delenv("ASCEND_OPP_PATH", raising=False)
    with pytest.raises(RuntimeError, match=r"the test needs CANN's environment \(\$ASCEND_OPP_PATH is unset\)"):
        _cann_env.check_cann_environment("the test")

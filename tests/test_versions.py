"""The supported MindSpore range: one clear error at import outside it, the same range in
setup.cfg, and a silent import (no warning, nothing on stderr) on the installed version."""
import configparser
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ms_groupnorm import _compat
from ms_groupnorm.backends import cpu_pyboost

ROOT = Path(__file__).resolve().parent.parent


def _run_child(code, extra_path=None):
    """Runs ``code`` in a fresh interpreter with this checkout first on sys.path (then
    ``extra_path``, if given, before it); returns the completed process."""
    paths = ([str(extra_path)] if extra_path else []) + [str(ROOT)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=300, check=False)


@pytest.mark.parametrize("version, supported", [
    ("2.7.0", False), ("2.7.1", True), ("2.7.2", True), ("2.8.0", True), ("2.9.0", True),
    ("2.10.0", True), ("2.10.1rc1", True), ("2.11.0", False), ("3.0.0", False), ("2.6.0", False),
])
def test_supported_range(version, supported):
    assert _compat.is_supported(version) is supported


def test_setup_cfg_requires_the_range_checked_at_import():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    requires = [line.strip() for line in config["options"]["install_requires"].splitlines()]
    assert _compat.SUPPORTED_RANGE in requires, requires


def test_installed_version_is_supported():
    assert _compat.is_supported(_compat.installed_mindspore_version())


def test_unsupported_mindspore_is_refused_at_import_naming_the_range(tmp_path):
    # A stand-in MindSpore 2.6.0 (its package metadata and a module) ahead of the real one.
    dist = tmp_path / "mindspore-2.6.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mindspore\nVersion: 2.6.0\n")
    (tmp_path / "mindspore").mkdir()
    (tmp_path / "mindspore" / "__init__.py").write_text("__version__ = '2.6.0'\n")
    child = _run_child("""
        try:
            import ms_groupnorm
        except ImportError as error:
            print(type(error).__name__, error)
        else:
            print("imported")
    """, extra_path=tmp_path)
    assert child.returncode == 0, child.stderr
    out = child.stdout.strip()
    assert out.startswith("UnsupportedMindSporeError"), out
    assert "mindspore>=2.7.1,<2.11" in out and "2.6.0" in out, out


def test_import_is_silent():
    """Importing ms_groupnorm raises no Python warning and writes nothing to stderr (where
    MindSpore's logger prints its own deprecation notices). The child leaves with os._exit:
    MindSpore's own exit handlers are not the import's business."""
    child = _run_child("""
        import os, sys, warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import ms_groupnorm
        print(repr([f"{w.category.__name__}: {w.message}" for w in caught]))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    """)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[]", child.stdout
    assert child.stderr == "", child.stderr


def test_the_fast_path_is_on_or_off_with_a_one_line_notice(caplog):
    """Where the installed MindSpore can run the PyNative fast path it is built and used;
    where it cannot (off_reason), module() gives one one-line warning and the aot ops run."""
    if cpu_pyboost.missing_tools():
        pytest.skip(f"building the fast path needs {', '.join(cpu_pyboost.missing_tools())}")
    reason = cpu_pyboost.off_reason()
    cpu_pyboost.module.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="ms_groupnorm"):
            module = cpu_pyboost.module()
    finally:
        cpu_pyboost.module.cache_clear()
    if reason is None:
        assert module is not None and not caplog.records
    else:
        assert module is None
        assert len(caplog.records) == 1 and "\n" not in caplog.records[0].getMessage()
        assert reason in caplog.records[0].getMessage()

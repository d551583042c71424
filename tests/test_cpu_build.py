"""The CPU kernel library compiles without a warning here, with setup.py's flags: pip shows the
compiler's output only when a build fails, so a warning (a real one among GCC's false positives
in its own intrinsics headers, silenced per file with the reason) would otherwise pass unseen.
tests/test_cpu_aarch64.py holds the aarch64 build to the same rule."""
import subprocess
from pathlib import Path

import pytest

from test_cpu_aarch64 import _setup_compile_args

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.exhaustive
@pytest.mark.parametrize("source", sorted(p.name for p in (ROOT / "kernels" / "cpu").glob("*.cc")))
def test_each_source_compiles_without_a_warning(source, tmp_path):
    result = subprocess.run(["g++", *_setup_compile_args(), "-fPIC", "-Werror", "-c",
                             str(ROOT / "kernels" / "cpu" / source), "-o", str(tmp_path / "out.o")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]

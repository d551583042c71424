"""The CPU kernels under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize_kernels.sh)."""
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "sanitize_kernels.sh"


@pytest.mark.slow
@pytest.mark.exhaustive
def test_kernels_are_clean_under_asan_and_ubsan(tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("needs g++ with -fsanitize support")
    result = subprocess.run(["bash", str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.count("0 failures") == 2 and "sanitizers: clean" in result.stdout

"""The twin libraries' build lock (backends/twin_build.py): with parallel test workers and the
run's background build, several processes may ask for the same library at once; the second
must wait for the first build and then find its result, not compile the file again."""
import subprocess
import sys
import threading
import time

from ms_groupnorm.backends import twin_build
from ms_groupnorm.backends.twin_build import build_lock

# twin_build imports only the standard library: the helper processes load it by path, without
# importing the package (and MindSpore) behind it.
LOAD = ("import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('twin_build', {twin_build.__file__!r})\n"
        "twin_build = importlib.util.module_from_spec(spec); spec.loader.exec_module(twin_build)\n")
HOLDER = LOAD + """
import time
from pathlib import Path
target = Path(sys.argv[1])
with twin_build.build_lock(target):
    Path(sys.argv[2]).touch()       # "I hold the lock"
    time.sleep(1.0)                 # a build in progress
    target.write_text("built")
"""
DIES_HOLDING = LOAD + """
import os
with twin_build.build_lock(sys.argv[1]):
    os._exit(3)                     # killed mid-build: no clean-up runs
"""


def test_a_second_builder_waits_for_the_first_and_finds_its_result(tmp_path):
    target, holding = tmp_path / "lib.so", tmp_path / "holding"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(target), str(holding)])
    try:
        deadline = time.monotonic() + 60
        while not holding.exists():
            assert holder.poll() is None and time.monotonic() < deadline, "the holder never took the lock"
            time.sleep(0.02)
        with build_lock(target):
            # Without the lock this runs at once, before the holder has written its result.
            assert target.read_text() == "built"
    finally:
        holder.wait(timeout=60)
    assert holder.returncode == 0


def test_a_dead_builder_does_not_block_the_next_one(tmp_path):
    target = tmp_path / "lib.so"
    assert subprocess.run([sys.executable, "-c", DIES_HOLDING, str(target)]).returncode == 3

    def take_it():
        with build_lock(target):
            pass

    taker = threading.Thread(target=take_it, daemon=True)
    taker.start()
    taker.join(timeout=30)
    assert not taker.is_alive(), "the lock outlived the process that held it"

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


# ---- the CustomOpBuilder modules' lock (backends/native_build.py) ---------------------------
NATIVE_HOLDER = """
import importlib.util, os, sys, time
from pathlib import Path
spec = importlib.util.spec_from_file_location('native_build', sys.argv[1])
native_build = importlib.util.module_from_spec(spec); spec.loader.exec_module(native_build)
with native_build.build_lock(Path(sys.argv[2]), 'a test module'):
    Path(sys.argv[3]).touch()
    if sys.argv[4] == 'die':
        os._exit(3)                 # killed mid-build: no clean-up runs
    time.sleep(float(sys.argv[4]))
"""


def _native_build():
    from ms_groupnorm.backends import native_build
    return native_build


def _hold_native_lock(tmp_path, how):
    native_build = _native_build()
    holding = tmp_path / "holding"
    holder = subprocess.Popen([sys.executable, "-c", NATIVE_HOLDER, native_build.__file__, str(tmp_path), str(holding),
                               how])
    deadline = time.monotonic() + 60
    while not holding.exists():
        assert holder.poll() is None or how == "die", "the holder never took the lock"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return holder


class _FakeBuilder:
    """Stands in for ops.CustomOpBuilder: records its calls; fails if MindSpore's own lock is there."""
    calls = []

    def __init__(self, name, sources, build_dir, **options):
        self.name, self.build_dir = name, build_dir

    def load(self):
        from pathlib import Path
        assert not (Path(self.build_dir) / "build.lock").exists(), "MindSpore's builder would wait on this forever"
        (Path(self.build_dir) / f"{self.name}.so").write_text("built")
        _FakeBuilder.calls.append(self.name)
        return "loaded by the builder"


def _fake_building(monkeypatch):
    import mindspore
    native_build = _native_build()
    _FakeBuilder.calls = []
    monkeypatch.setattr(mindspore.ops, "CustomOpBuilder", _FakeBuilder)
    monkeypatch.setattr(native_build, "_load_extension", lambda name, path: f"loaded {path.name}")
    return native_build


def test_a_current_module_loads_without_taking_the_lock(tmp_path, monkeypatch):
    """Issue: every process took the lock (and ran ninja) even when the module was cached."""
    native_build = _fake_building(monkeypatch)
    assert native_build.build_module("m", [], tmp_path, "", "{seconds}") == "loaded by the builder"
    assert _FakeBuilder.calls == ["m"]
    holder = _hold_native_lock(tmp_path, "30")  # the lock is busy now
    try:
        start = time.monotonic()
        assert native_build.build_module("m", [], tmp_path, "", "{seconds}") == "loaded m.so"
        assert time.monotonic() - start < 5, "a cached module waited for the lock"
        assert _FakeBuilder.calls == ["m"]
    finally:
        holder.kill()
        holder.wait()


def test_a_waiter_says_what_it_waits_for_and_where(tmp_path, monkeypatch, capsys):
    native_build = _native_build()
    monkeypatch.setattr(native_build, "WAIT_NOTICE_SECONDS", 0.2)
    holder = _hold_native_lock(tmp_path, "2")
    with native_build.build_lock(tmp_path, "the module m"):
        pass
    holder.wait(timeout=60)
    err = capsys.readouterr().err
    assert f"pid {holder.pid}" in err and "the module m" in err and str(tmp_path / native_build.LOCK_NAME) in err, err


def test_a_dead_builder_and_its_mindspore_lock_block_nobody(tmp_path, monkeypatch):
    """Issue: a process killed while MindSpore's build.lock existed stalled every later one
    silently for 15 minutes."""
    native_build = _fake_building(monkeypatch)
    holder = _hold_native_lock(tmp_path, "die")
    holder.wait(timeout=60)
    (tmp_path / "build.lock").write_text("")  # what MindSpore's builder leaves when killed
    start = time.monotonic()
    assert native_build.build_module("m", [], tmp_path, "", "{seconds}") == "loaded by the builder"
    assert time.monotonic() - start < 5
    assert not (tmp_path / "build.lock").exists()

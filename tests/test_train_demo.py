"""scripts/train_demo.py: short runs in both modes, its failure path, and a data-parallel
run under msrun (2 CPU workers over loopback, MCCL)."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(REPO, "scripts", "train_demo.py")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# Quiet MindSpore's C++ logging (warnings about the CPU backend) in the captured output.
ENV = dict(os.environ, GLOG_v="3", PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _run(args, timeout, cwd):
    """(exit status, stdout + stderr). The command runs in its own process group, which is
    killed as a whole on timeout: msrun's workers must not outlive a hung test."""
    proc = subprocess.Popen(args, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{args[0]} did not finish within {timeout} s:\n{out[-5000:]}")
    return proc.returncode, out


def _largest_difference(output):
    return float(re.search(r"largest loss difference: (\S+) at step", output).group(1))


def _accuracies(output):
    match = re.search(r"held-out accuracy: ms_groupnorm.GroupNorm ([\d.]+)%, mindspore.nn.GroupNorm ([\d.]+)%",
                      output)
    return float(match.group(1)) / 100, float(match.group(2)) / 100


# PyNative steps cost several times GRAPH's on CPU, so its run is shorter.
# The default tier runs the README's demo command (GRAPH_MODE, its default).
@pytest.mark.default_sample(mode=["graph"])
@pytest.mark.parametrize("mode, steps, min_accuracy", [("graph", 45, 0.6), ("pynative", 20, 0.3)])
def test_short_run_agrees_and_learns(mode, steps, min_accuracy, tmp_path):
    plot = tmp_path / "curves.png"
    rc, out = _run([sys.executable, DEMO, "--mode", mode, "--max-steps", str(steps), "--plot", str(plot),
                    "--save-params", str(tmp_path)], timeout=240, cwd=tmp_path)
    assert rc == 0, out
    assert _largest_difference(out) <= 1e-2
    # Far from the full run's 95 % after so few steps, but well above chance (10 %).
    acc_ms, acc_ref = _accuracies(out)
    assert acc_ms > min_accuracy and acc_ref > min_accuracy, out
    assert f"plot saved to {plot}" in out
    assert out.strip().splitlines()[-1].startswith("PASS: ms_groupnorm.GroupNorm trained like"), out[-2000:]
    assert ("compile included" in out) == (mode == "graph")  # PyNative compiles nothing
    assert "device_target" not in out  # no deprecation warning about its own set_context call
    assert plot.read_bytes()[:8] == PNG_MAGIC
    saved = np.load(tmp_path / "rank_0.npz")
    loss_ms, loss_ref = saved["loss_ms"], saved["loss_ref"]
    assert len(loss_ms) == steps and np.all(np.isfinite(loss_ms))
    assert np.max(np.abs(loss_ms - loss_ref)) == pytest.approx(_largest_difference(out), rel=0.01, abs=1e-9)
    assert loss_ms[-5:].mean() < 0.5 * loss_ms[:5].mean()  # it trains


@pytest.mark.exhaustive
def test_exits_nonzero_when_a_gradient_is_wrong(tmp_path):
    """A deliberately wrong dgamma (halved; the forward value is unchanged) in the
    ms_groupnorm copy must push the loss difference past the default tolerance and make
    the demo exit 1."""
    wrong_backward = (
        "import runpy, sys\n"
        "from mindspore import ops\n"
        "import ms_groupnorm\n"
        "class HalvedGammaGradient(ms_groupnorm.GroupNorm):\n"
        "    def construct(self, x):\n"
        "        gamma = self.gamma * 0.5 + ops.stop_gradient(self.gamma * 0.5)\n"
        "        return ms_groupnorm.group_norm(x, self.num_groups, gamma, self.beta, self.eps)\n"
        "ms_groupnorm.GroupNorm = HalvedGammaGradient\n"
        f"sys.argv = [{DEMO!r}] + sys.argv[1:]\n"
        f"runpy.run_path({DEMO!r}, run_name='__main__')\n"
    )
    wrapper = tmp_path / "demo_with_wrong_gradient.py"  # GRAPH_MODE compiles construct from a file
    wrapper.write_text(wrong_backward)
    rc, out = _run([sys.executable, str(wrapper), "--mode", "graph", "--max-steps", "60",
                    "--plot", str(tmp_path / "bad.png")], timeout=240, cwd=tmp_path)
    assert rc == 1, out
    assert _largest_difference(out) > 1e-2
    assert "exceeds tolerance" in out
    assert [line for line in out.splitlines() if line.startswith(("PASS", "FAIL:"))][-1].startswith(
        "FAIL: loss difference")


def test_unavailable_device_is_refused_with_a_clear_message(tmp_path):
    rc, out = _run([sys.executable, DEMO, "--device", "Ascend"], timeout=120, cwd=tmp_path)
    assert rc == 2, out
    assert "FAIL: --device Ascend is not available to this MindSpore build (available: CPU" in out
    assert "Traceback" not in out
    rc, out = _run([sys.executable, DEMO, "--device", "TPU"], timeout=120, cwd=tmp_path)
    assert rc == 2 and "invalid choice: 'TPU'" in out


def test_missing_scikit_learn_gives_a_clear_message(tmp_path):
    blocker = (
        "import runpy, sys\n"
        "class NoSklearn:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'sklearn':\n"
        "            raise ModuleNotFoundError(\"No module named 'sklearn'\", name='sklearn')\n"
        "sys.meta_path.insert(0, NoSklearn())\n"
        f"sys.argv = [{DEMO!r}, '--max-steps', '1']\n"
        f"runpy.run_path({DEMO!r}, run_name='__main__')\n"
    )
    wrapper = tmp_path / "demo_without_sklearn.py"
    wrapper.write_text(blocker)
    rc, out = _run([sys.executable, str(wrapper)], timeout=120, cwd=tmp_path)
    assert rc == 1, out
    assert "FAIL: the demo's data comes from scikit-learn, which is not installed" in out
    assert "Traceback" not in out


def test_imports_the_installed_package_not_the_checkout(tmp_path):
    """The script must not put its checkout ahead of sys.path: a package found first on the
    path (here a stub that fails to import) is the one it gets."""
    stub = tmp_path / "stub" / "ms_groupnorm"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('the stub ms_groupnorm first on the path')\n")
    env = dict(ENV, PYTHONPATH=str(tmp_path / "stub"))
    proc = subprocess.run([sys.executable, DEMO, "--max-steps", "1"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL: cannot import ms_groupnorm (the stub ms_groupnorm first on the path)" in proc.stderr


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.skipif(shutil.which("msrun") is None, reason="msrun (MindSpore's launcher) is not on PATH")
@pytest.mark.exhaustive
def test_msrun_data_parallel_ranks_end_identical(tmp_path):
    params_dir = tmp_path / "params"
    cmd = ["msrun", "--worker_num=2", "--local_worker_num=2", f"--master_port={_free_port()}",
           f"--log_dir={tmp_path / 'logs'}", "--join=True", "--cluster_time_out=120",
           DEMO, "--distributed", "--max-steps", "8", "--save-params", str(params_dir),
           "--plot", str(tmp_path / "dist.png")]
    rc, out = _run(cmd, timeout=300, cwd=tmp_path)
    assert rc == 0, out + "".join(p.read_text(errors="replace")[-3000:] for p in (tmp_path / "logs").glob("*.log"))
    assert "2 rank(s)" in out
    assert "final parameters, largest difference across ranks: ms_groupnorm 0, nn.GroupNorm 0" in out

    ranks = [np.load(params_dir / f"rank_{rank}.npz") for rank in (0, 1)]
    # Each rank trained on its own shard (different losses), yet the averaged gradients
    # kept every parameter bit-identical across ranks.
    assert not np.array_equal(ranks[0]["loss_ms"], ranks[1]["loss_ms"])
    param_keys = [k for k in ranks[0].files if k.startswith(("ms.", "ref."))]
    assert len(param_keys) == 2 * 11
    for key in param_keys:
        np.testing.assert_array_equal(ranks[0][key], ranks[1][key], err_msg=key)
    assert (tmp_path / "dist.png").read_bytes()[:8] == PNG_MAGIC
    assert "PASS: ms_groupnorm.GroupNorm trained like mindspore.nn.GroupNorm on 2 rank(s)" in out


@pytest.mark.skipif(shutil.which("msrun") is None, reason="msrun (MindSpore's launcher) is not on PATH")
@pytest.mark.exhaustive
def test_msrun_reports_a_failed_rank(tmp_path):
    """The msrun command of docs/usage.md (--join=True) with a tolerance no run can meet: every
    rank fails, rank 0 says so, and msrun itself exits non-zero naming the log directory."""
    cmd = ["msrun", "--worker_num=2", "--local_worker_num=2", f"--master_port={_free_port()}",
           f"--log_dir={tmp_path / 'logs'}", "--join=True", "--cluster_time_out=120",
           DEMO, "--distributed", "--max-steps", "2", "--tolerance", "-1", "--plot", str(tmp_path / "dist.png")]
    rc, out = _run(cmd, timeout=300, cwd=tmp_path)
    assert rc != 0, out
    assert "FAIL: rank(s) [0, 1] failed" in out
    assert "Distributed job exited with exception" in out and str(tmp_path / "logs") in out
    assert "FAIL: rank(s) [0, 1] failed" in (tmp_path / "logs" / "worker_0.log").read_text(errors="replace")

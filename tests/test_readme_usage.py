"""The README's "Use it in your network" section: every python block runs as written."""
import os
import re
import shlex
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START, END = "<!-- usage:start -->", "<!-- usage:end -->"


def _usage_section():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as readme:
        text = readme.read()
    assert START in text and END in text, "README.md lacks the usage markers"
    return text[text.index(START) + len(START):text.index(END)]


def _code_blocks(section, language):
    return re.findall(rf"^```{language}\n(.*?)^```", section, flags=re.S | re.M)


def test_section_has_its_heading_and_blocks():
    section = _usage_section()
    assert "## Use it in your network" in section
    assert len(_code_blocks(section, "python")) >= 4  # import, convert, mixed precision, distributed


def test_python_blocks_run(tmp_path):
    blocks = _code_blocks(_usage_section(), "python")
    # One fresh interpreter runs every block as its own file (GRAPH_MODE compiles a Cell
    # from its source file) with its own namespace, in a scratch directory: the blocks
    # write a checkpoint and O1 writes ./rewritten_network/.
    paths = []
    for index, source in enumerate(blocks):
        path = tmp_path / f"readme_block_{index}.py"
        path.write_text(source, encoding="utf-8")
        paths.append(str(path))
    runner = (
        "import runpy, sys\n"
        "for path in sys.argv[1:]:\n"
        "    print('--- running', path, flush=True)\n"
        "    runpy.run_path(path, run_name='__main__')\n"
        "print('--- all blocks ran', flush=True)\n"
    )
    env = dict(os.environ, GLOG_v="3", PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("MS_ROLE", None)  # the distributed block runs as a single process here
    proc = subprocess.run([sys.executable, "-c", runner, *paths], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "--- all blocks ran" in proc.stdout
    assert "(4, 32, 16, 16)" in proc.stdout
    assert "BFloat16 Float32" in proc.stdout
    assert "rank 0/1: loss" in proc.stdout


def test_msrun_command_names_the_demo_and_its_flag():
    """The shell command is run (shortened) by tests/test_train_demo.py; here we check it
    names that script and a flag the script accepts."""
    commands = [line for block in _code_blocks(_usage_section(), "bash") for line in block.splitlines()
                if line.startswith("msrun")]
    assert commands == ["msrun --worker_num=2 --local_worker_num=2 --join=True --log_dir=msrun_logs "
                        "scripts/train_demo.py --distributed"]
    words = shlex.split(commands[0])
    # --join=True: msrun waits for the workers and reports a failed rank (tests/test_train_demo.py runs it)
    assert "--join=True" in words and any(word.startswith("--log_dir=") for word in words)
    script = next(word for word in words if word.endswith(".py"))
    assert os.path.isfile(os.path.join(REPO, script))
    sys.path.insert(0, os.path.join(REPO, "scripts"))
    try:
        import train_demo
    finally:
        sys.path.pop(0)
    assert train_demo.parse_args(["--distributed"]).distributed

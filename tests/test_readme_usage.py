"""The user documentation as written: the README's set-up commands, every python block of the
usage sections (the README's "Use it in your network" and docs/usage.md) runs, and every
relative link in the README and docs/ names a file and heading that exist."""
import os
import re
import shlex
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START, END = "<!-- usage:start -->", "<!-- usage:end -->"
README = "README.md"
USAGE_PAGE = os.path.join("docs", "usage.md")
# The two commands a new user runs on a fresh machine (.ci/run runs the second).
SETUP_COMMANDS = ['pip install -e ".[demo]" && python scripts/train_demo.py',
                  'pip install -e ".[test]" && python -m pytest']


def _read(relative_path):
    with open(os.path.join(REPO, relative_path), encoding="utf-8") as page:
        return page.read()


def _usage_section(relative_path):
    text = _read(relative_path)
    assert START in text and END in text, f"{relative_path} lacks the usage markers"
    return text[text.index(START) + len(START):text.index(END)]


def _code_blocks(section, language):
    return re.findall(rf"^```{language}\n(.*?)^```", section, flags=re.S | re.M)


def _usage_blocks(language):
    return [block for path in (README, USAGE_PAGE) for block in _code_blocks(_usage_section(path), language)]


def _heading_section(text, heading):
    """The text under ``heading`` (a '## ' line) up to the next '## ' heading."""
    match = re.search(rf"^{re.escape(heading)}\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    assert match, f"no {heading!r} section"
    return match.group(1)


def test_readme_holds_exactly_the_two_setup_commands():
    readme = _read(README)
    setup = _heading_section(readme, "## Set up on a fresh machine")
    commands = [line for block in _code_blocks(setup, "bash") for line in block.splitlines() if line.strip()]
    assert commands == SETUP_COMMANDS
    # no other pip install anywhere in the README: the two commands are all a user needs
    assert readme.count("pip install") == len(SETUP_COMMANDS)
    assert "Both need Python ≥ 3.9, `g++` with OpenMP" in setup
    assert SETUP_COMMANDS[1] in _read(os.path.join(".ci", "run"))


def test_sections_have_their_headings_and_blocks():
    readme_section = _usage_section(README)
    assert "## Use it in your network" in readme_section
    assert len(_code_blocks(readme_section, "python")) >= 1  # import
    page_section = _usage_section(USAGE_PAGE)
    for heading in ("## Convert an existing network", "## Mixed precision", "## Distributed (data parallel)"):
        assert heading in page_section
    assert len(_code_blocks(page_section, "python")) >= 3  # convert, mixed precision, distributed
    assert "](docs/usage.md)" in _read(README)


def test_python_blocks_run(tmp_path):
    blocks = _usage_blocks("python")
    assert len(blocks) >= 4  # import, convert, mixed precision, distributed
    # One fresh interpreter runs every block as its own file (GRAPH_MODE compiles a Cell
    # from its source file) with its own namespace, in a scratch directory: the blocks
    # write a checkpoint and O1 writes ./rewritten_network/.
    paths = []
    for index, source in enumerate(blocks):
        path = tmp_path / f"usage_block_{index}.py"
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
    commands = [line for block in _usage_blocks("bash") for line in block.splitlines()
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


# ---------------------------------------------------------------- links
def _pages():
    docs = os.path.join(REPO, "docs")
    return [README] + sorted(os.path.join("docs", name) for name in os.listdir(docs) if name.endswith(".md"))


def _without_code(text):
    """Markdown outside fenced code blocks (a '# comment' in a block is no heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _anchors(text):
    """GitHub's heading anchors: lower case, punctuation other than '-' and '_' dropped,
    spaces turned into '-'."""
    anchors = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", _without_code(text), flags=re.M):
        anchors.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return anchors


def _relative_links(text):
    links = re.findall(r"\]\(([^)\s]+)\)", _without_code(text))
    return [link for link in links if not re.match(r"[a-z]+:", link)]


def test_anchor_rule_matches_github():
    assert _anchors("## Differences from MindSpore's GroupNorm\n## The backward contract (`group_norm_backward`)") \
        == {"differences-from-mindspores-groupnorm", "the-backward-contract-group_norm_backward"}


def test_relative_links_name_existing_files_and_headings():
    pages = _pages()
    assert len(pages) > 1, "docs/ holds no pages"
    broken = []
    for page in pages:
        for link in _relative_links(_read(page)):
            target, _, anchor = link.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(page), target)) if target else page
            if not os.path.exists(os.path.join(REPO, path)):
                broken.append(f"{page}: {link} (no file {path})")
            elif anchor and path.endswith(".md") and anchor not in _anchors(_read(path)):
                broken.append(f"{page}: {link} (no heading #{anchor} in {path})")
    assert not broken, "\n".join(broken)


def test_every_docs_page_is_linked_from_the_readme():
    readme_links = {os.path.normpath(link.partition("#")[0]) for link in _relative_links(_read(README))}
    unlinked = [page for page in _pages()[1:] if page not in readme_links]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"

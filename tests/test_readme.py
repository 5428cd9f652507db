"""README.md is the front door: its two commands and every command it shows must stay true."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from mirror.cli.main import cli
from mirror.config import ENV_SEMANTIC
from tests.user_env import user_env

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, re.S | re.M)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def _sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def test_two_commands_and_ci_agree():
    run_block, test_block = (b.strip() for b in _sh_blocks(_section("Two commands")))
    assert run_block == (
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/dk-mirror demo"
    )
    assert test_block == "bash .ci/check"
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.strip().splitlines()[-1] == f"exec {test_block}"


def test_the_run_command_installs_into_a_virtualenv_it_makes():
    """Debian's and Ubuntu's Python refuse a system-wide `pip install`
    (externally-managed-environment): the first command makes a venv and every later step
    runs that venv's pip and dk-mirror, never whatever is first on PATH."""
    run_block = _sh_blocks(_section("Two commands"))[0].strip()
    steps = [shlex.split(step) for step in run_block.split("&&")]
    made = steps[0]
    assert made[:3] == ["python3", "-m", "venv"] and len(made) == 4
    bin_dir = made[3].rstrip("/") + "/bin/"
    for step in steps[1:]:
        assert step[0].startswith(bin_dir), f"{step[0]} is not the venv's own"
    assert [Path(s[0]).name for s in steps[1:]] == ["pip", "dk-mirror"]
    assert steps[1][1:] == ["install", "-e", "."] and steps[2][1:] == ["demo"]
    # The folder it makes is one git ignores, so a clone stays clean.
    ignored = (ROOT / ".gitignore").read_text().split()
    assert made[3].rstrip("/") + "/" in ignored


@pytest.mark.slow
def test_the_run_command_works_with_no_key_and_no_network(tmp_path: Path):
    env = user_env()
    env["DK_MIRROR_HOME"] = str(tmp_path / "home")
    demo = subprocess.run(
        [sys.executable, "-m", "mirror", "demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert demo.returncode == 0, demo.stderr
    assert "mirrored 50 documents" in demo.stderr
    assert "no network used" in demo.stdout
    assert (tmp_path / "home" / "dk-mirror.sqlite3").is_file()
    # The question the README's opening asks of the demo's store finds the page it names.
    asked = re.search(
        r'`dk-mirror search --offline "([^"]+)"` finds\s+"([^"]+)" first', " ".join(README.split())
    )
    assert asked, "the README's opening shows a question asked of the demo's store"
    found = subprocess.run(
        [sys.executable, "-m", "mirror", "search", "--offline", asked[1], "--json"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    first = json.loads(found.stdout)["results"][0]["document"]
    assert first["title"] == asked[2], found.stdout
    # Every "next:" suggestion the demo prints works on the store it made.
    for line in demo.stdout.split("next:")[1].strip().splitlines():
        args = shlex.split(line)[1:]
        step = subprocess.run(
            [sys.executable, "-m", "mirror", *args], env=env, capture_output=True, text=True
        )
        assert step.returncode == 0, (line, step.stderr)
        assert step.stdout.strip()


def _resolve(args: list[str]) -> tuple[click.Command, list[str]]:
    command: click.Command = cli
    rest = list(args)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(click.Context(command), rest[0])
        if sub is None:
            break
        command, rest = sub, rest[1:]
    return command, rest


def test_every_command_and_option_shown_exists():
    shown = [
        line.split("#")[0].strip()
        for block in _sh_blocks(README)
        for line in block.splitlines()
        if line.strip().startswith("dk-mirror ")
    ]
    assert len(shown) >= 15
    for line in shown:
        command, rest = _resolve(shlex.split(line)[1:])
        assert command is not cli, line
        known = {opt for p in command.params for opt in getattr(p, "opts", [])}
        known |= {opt for p in cli.params for opt in getattr(p, "opts", [])}
        for word in rest:
            if word.startswith("--"):
                assert word in known, f"README shows {word} for `{line}`, which has no such option"


def test_environment_variables_in_readme_are_the_ones_the_code_reads():
    from bench.common import CORPUS_ENV
    from bench.pg_scratch import PG_URL_ENV
    from mirror import config

    documented = set(re.findall(r"`((?:DK_MIRROR|DEVELOPER_KNOWLEDGE)_[A-Z_]+)", README))
    in_code = {v for k, v in vars(config).items() if k.startswith("ENV_") and k != "ENV_VARS"}
    assert in_code == set(config.ENV_VARS)
    assert documented == in_code | {CORPUS_ENV, PG_URL_ENV}  # the last two are bench/'s


# A path the README names inside the repository: it starts at a top-level folder, not after
# a host name (`developer.chrome.com/tests/x`) or another word. `../` is caught to be refused.
_REPO_PATH = re.compile(r"(?<![\w./-])((?:\.\./|\.ci/|mirror/|tests/|bench/|migrations/)[\w./*-]*)")


@pytest.mark.slow
def test_every_repository_path_named_exists_in_a_clone():
    named = {m.rstrip(".,") for m in _REPO_PATH.findall(README)}
    assert {"tests/emulator.py", ".ci/check"} <= named  # the pattern finds what it should
    outside = sorted(p for p in named if p.startswith("../"))
    assert not outside, f"README points outside the repository, which a clone lacks: {outside}"
    missing = sorted(p for p in named if not any(ROOT.glob(p.rstrip("/"))))
    assert not missing, f"README names paths the repository does not have: {missing}"
    # Committed, not just present here: a clone holds only what git tracks.
    git = shutil.which("git")
    listed = git and subprocess.run(
        [git, "-C", str(ROOT), "ls-files"], capture_output=True, text=True
    )
    tracked = listed.stdout.splitlines() if listed and listed.returncode == 0 else []
    if tracked:  # else no git, or not a checkout: existence above is all that can be checked
        untracked = sorted(
            p
            for p in named
            if not any(
                t == p or t.startswith(p.rstrip("/") + "/") or fnmatch.fnmatch(t, p)
                for t in tracked
            )
        )
        assert not untracked, f"README names paths git does not track: {untracked}"


def test_every_benchmark_shown_exists():
    shown = re.findall(r"python3 -m (bench\.\w+)", README)
    assert len(shown) >= 5
    for module in shown:
        assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), module


@pytest.mark.slow
def test_the_team_section_copies_a_store_into_postgresql(pg_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Its `export TEAM_DB` and `db copy` lines, run as written by a shell, on a real server."""
    block = _sh_blocks(_section("A team mirror on PostgreSQL"))[0]
    lines = [line.split("  #")[0].strip() for line in block.splitlines()]
    copy = next(line for line in lines if " db copy " in line)
    assert any(line.startswith("export TEAM_DB=postgresql://") for line in lines)
    home = tmp_path / "home"
    store = home / ".local" / "share" / "dk-mirror" / "dk-mirror.sqlite3"
    store.parent.mkdir(parents=True)
    env = user_env()
    env.update(HOME=str(home), PYTHONPATH=str(ROOT))
    # The suite's semantic switch stays (tests/conftest.py): this is about the copy, and with
    # the tier on the import loaded the model and embedded the sample first.
    env[ENV_SEMANTIC] = os.environ[ENV_SEMANTIC]
    made = subprocess.run(
        [sys.executable, "-m", "mirror", "--db", str(store), "import", "--sample"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    # The README's line, with the team database pointed at the test's server.
    script = f'TEAM_DB={shlex.quote(pg_url)}\ndk-mirror() {{ {sys.executable} -m mirror "$@"; }}\n'
    run = subprocess.run(
        ["bash", "-c", script + copy], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert "copied 50 documents" in run.stdout and "snapshot root sha256:" in run.stdout


# The fast local loop the README gives (section Tests); changing either alone fails below.
FAST_LOOP = 'python3 -m pytest -n 2 -m "not slow and not postgresql"'


def _registered_markers() -> set[str]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    lines = config["tool"]["pytest"]["ini_options"]["markers"]
    return {re.split(r"[(:]", line, maxsplit=1)[0] for line in lines}


def test_the_fast_loop_is_shown_with_its_time_and_names_registered_markers():
    section = _section("Tests")
    shown = [line.strip() for block in _sh_blocks(section) for line in block.splitlines()]
    assert shown == [FAST_LOOP]
    args = shlex.split(FAST_LOOP)
    expression = args[args.index("-m", 3) + 1]  # pytest's -m, not python's
    named = set(re.findall(r"\w+", expression)) - {"not", "and", "or"}
    assert named == {"slow", "postgresql"} and named <= _registered_markers()
    assert re.search(r"under \d+ minutes? on a 2-core machine", section), section[:300]
    assert "apt-get" in section and "Chromium" in section and "PostgreSQL" in section


@pytest.mark.slow
def test_the_fast_loop_leaves_out_processes_and_postgresql():
    """The loop as written, collected: it runs, and selects no PostgreSQL run and no test of
    a module that only spawns processes (a clone, a wheel build, a browser)."""
    args = shlex.split(FAST_LOOP)
    done = subprocess.run(
        [sys.executable, *args[1:], "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert len(ids) > 1000
    assert not [i for i in ids if re.search(r"[\[-]postgresql[\]-]", i)]  # a backend's id
    spawning = (
        "test_clean_clone.py",
        "test_wheel.py",
        "test_browser.py",
        "test_crawl_kill.py",
        "test_interrupt.py",
        "test_forked_dense.py",
        "test_index_damage.py",
        "test_concurrent_writers.py",
    )
    assert not [i for i in ids if i.split("::")[0].endswith(spawning)]


@pytest.mark.slow
def test_the_search_and_answer_examples_answer_from_a_full_store_with_no_key(tmp_path: Path):
    """Each `dk-mirror search` / `answer` line of the README, run as written on a store holding
    the sample, with no API key: the README says they fall back to the local index."""
    block = _sh_blocks(_section("Commands"))[0]
    lines = [
        line.split("  #")[0].strip()
        for line in block.splitlines()
        if line.startswith(("dk-mirror search ", "dk-mirror answer "))
    ]
    assert len(lines) >= 4
    env = user_env()
    env.update(DK_MIRROR_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT))
    made = subprocess.run(
        [sys.executable, "-m", "mirror", "import", "--sample"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    script = f'dk-mirror() {{ {sys.executable} -m mirror "$@"; }}\n'
    for line in lines:
        run = subprocess.run(
            ["bash", "-c", script + line], env=env, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, (line, run.stderr)
        assert run.stdout.strip(), line


def test_the_stdio_client_configuration_names_the_store():
    """A client starts `serve --stdio` in an environment of its own: the README's
    configuration names the store with --db, and its args are options the command has."""
    import json

    (block,) = re.findall(r"```json\n(.*?)```", _section("Serving: MCP, REST and a browser"), re.S)
    server = json.loads(block)["mcpServers"]["dk-mirror"]
    assert server["command"] == "dk-mirror"
    args = server["args"]
    assert args[:2] == ["serve", "--stdio"] and args[args.index("--db") + 1].endswith(".sqlite3")
    command, rest = _resolve(args)
    known = {opt for p in command.params for opt in getattr(p, "opts", [])}
    assert all(word in known for word in rest if word.startswith("--"))

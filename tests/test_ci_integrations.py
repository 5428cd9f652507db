"""The CI integrations: the GitHub Action, the GitLab template and the pre-commit hook.

The action's steps run here in order (tests/action_runner.py) in a scratch repository holding a
lock and a snapshot made from the sample documents, and must reach what the README's own
command reaches: the same store, byte for byte. The YAML files must name only inputs, steps and
jobs that exist.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mirror.config import ENV_SEMANTIC
from tests.action_runner import (
    Job,
    StepFailed,
    expressions,
    load,
    python_like_this_one,
    run_action,
)
from tests.emulator import Emulator
from tests.pinned_repo import A11Y, LOCKED, NOT_LOCKED, PinnedRepo, dk_mirror, make_pinned_repo
from tests.test_readme import _resolve

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
GITLAB = ROOT / "ci" / "gitlab" / "dk-mirror.gitlab-ci.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The action and GitLab runs pip-install dk-mirror and sync a store: minutes on a busy machine.
pytestmark = pytest.mark.timeout(600)
# What an action checkout and a pip install of it need.
_SHIPPED = ("pyproject.toml", "README.md", "action.yml", "mirror", "migrations")


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> PinnedRepo:
    return make_pinned_repo(tmp_path_factory.mktemp("pinned") / "project")


@pytest.fixture(scope="module")
def action_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This repository as a runner checks an action out: a copy, so building it leaves no trace."""
    target = tmp_path_factory.mktemp("actions") / "dk-mirror"
    target.mkdir()
    for name in _SHIPPED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, target / name)
    return target


def _runner_env(home: Path) -> dict[str, str]:
    # A runner's environment: no dk-mirror settings, no PYTHONPATH (the installed dk-mirror
    # runs), and pip pointed at no index (tests never reach a registry; dependencies come
    # from this interpreter's site-packages, setuptools too, hence no build isolation).
    # The suite's semantic switch (tests/conftest.py) stays: these jobs test the sync, and
    # with the tier on each one loaded the model and embedded every page it wrote (the
    # action's test took 65 s against 40 s without).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DK_MIRROR", "DEVELOPER_KNOWLEDGE", "GITHUB_", "PYTHON"))}  # fmt: skip
    env.update({k: v for k, v in os.environ.items() if k == ENV_SEMANTIC})
    env.update(HOME=str(home), PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0",
               DK_MIRROR_HOME=str(home / "dk-mirror"))  # fmt: skip
    return env


def _checkout(pinned: PinnedRepo, where: Path, *, snapshot: bool) -> Path:
    """A fresh clone of the scratch project: the toml and lock, and the snapshot if committed."""
    where.mkdir(parents=True)
    for f in (pinned.toml, pinned.lock, *([pinned.snapshot] if snapshot else [])):
        shutil.copy2(f, where / f.name)
    return where


def _job(tmp: Path, checkout: Path, workspace: Path, cache_dir: Path) -> Job:
    temp = tmp / "runner-temp"
    temp.mkdir(parents=True)
    return Job(checkout, workspace, temp, cache_dir, _runner_env(tmp))


def _export(db: Path, out: Path, lock: Path) -> bytes:
    dk_mirror("snapshot", "export", str(out), "--lock", str(lock), db=db)
    return out.read_bytes()


def _readme_command(fragment: str) -> list[str]:
    lines = [ln.split("#")[0].strip() for ln in README.splitlines()
             if ln.strip().startswith("dk-mirror ") and fragment in ln]  # fmt: skip
    return shlex.split(lines[0])


@pytest.mark.slow
def test_the_action_syncs_from_the_cache_and_matches_the_readme_commands(
    tmp_path: Path, pinned: PinnedRepo, action_checkout: Path
) -> None:
    action, cache_dir = load(ACTION), tmp_path / "actions-cache"
    inputs = {"lock-file": "dk-mirror.lock", "snapshot": "docs.snap", "strict-offline": "true"}

    # Run 1: the snapshot is committed, the cache is empty.
    ws1 = _checkout(pinned, tmp_path / "run1" / "ws", snapshot=True)
    job1 = _job(tmp_path / "run1", action_checkout, ws1, cache_dir)
    out1 = run_action(job1, action, inputs)
    assert out1["cache-hit"] == "false" and out1["snapshot"] == "docs.snap"
    assert job1.env["DK_MIRROR_DB"] == out1["db"] and Path(out1["db"]).is_file()
    assert job1.summary == "" and out1["changed"] == ""  # report-changes is off by default
    assert f"{len(LOCKED)} locked: 0 already exact, {len(LOCKED)} written" in "".join(job1.log)
    # A later step of the user's job reads the pinned bytes through DK_MIRROR_DB.
    job1.run_script(f"dk-mirror get --strict-offline {A11Y} > a11y.md\n", {}, None)
    assert (ws1 / "a11y.md").read_text().startswith("#") and (ws1 / "a11y.md").stat().st_size > 1000
    with pytest.raises(StepFailed) as refused:
        job1.run_script(f"dk-mirror get --strict-offline {NOT_LOCKED}\n", {}, None)
    assert NOT_LOCKED.removeprefix("documents/") in refused.value.stderr
    # The cache saved the snapshot under a key made from the lock's hash.
    (entry,) = [p for p in cache_dir.iterdir()]
    assert entry.name.startswith("dk-mirror-snapshot-") and len(entry.name) > 40

    # The README's command, on another store, reaches the same store: export both, compare.
    readme_db = tmp_path / "readme.sqlite3"
    args = _readme_command("sync --locked --from docs.snap")
    assert args[1:] == ["sync", "--locked", "--from", "docs.snap", "--strict-offline"]
    readme = subprocess.run(
        args, cwd=ws1, capture_output=True, text=True,
        env={**_runner_env(tmp_path), "DK_MIRROR_DB": str(readme_db),
             "PATH": job1.path[0] + os.pathsep + os.environ["PATH"]},
    )  # fmt: skip
    assert readme.returncode == 0, readme.stderr
    from_action = _export(Path(out1["db"]), tmp_path / "a.snap", ws1 / "dk-mirror.lock")
    from_readme = _export(readme_db, tmp_path / "r.snap", ws1 / "dk-mirror.lock")
    assert from_action == from_readme == pinned.snapshot.read_bytes()

    # Run 2: a clone without the snapshot; the cache restores it, keyed by the same lock.
    ws2 = _checkout(pinned, tmp_path / "run2" / "ws", snapshot=False)
    out2 = run_action(_job(tmp_path / "run2", action_checkout, ws2, cache_dir), action, inputs)
    assert out2["cache-hit"] == "true" and (ws2 / "docs.snap").read_bytes() == from_action

    # Run 3: the lock changed (another key), no snapshot: strict offline fails, saying why.
    ws3 = _checkout(pinned, tmp_path / "run3" / "ws", snapshot=False)
    lock = ws3 / "dk-mirror.lock"
    lock.write_text("\n".join(ln for ln in lock.read_text().splitlines() if A11Y not in ln) + "\n")
    job3 = _job(tmp_path / "run3", action_checkout, ws3, cache_dir)
    with pytest.raises(StepFailed) as missed:
        run_action(job3, action, inputs)
    assert "no snapshot at docs.snap" in missed.value.stdout
    assert job3.outputs["cache"]["cache-hit"] == "false" and len(list(cache_dir.iterdir())) == 1


def _sample() -> list[dict[str, Any]]:
    path = ROOT / "mirror" / "sample" / "docs.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.slow
def test_online_fill_then_the_readme_drift_job_fails_when_a_pinned_doc_changes(
    tmp_path: Path, pinned: PinnedRepo, action_checkout: Path
) -> None:
    action = load(ACTION)
    docs = {d["name"]: d for d in _sample()}
    with Emulator(docs.values(), api_key="test-key") as upstream:
        ws = _checkout(pinned, tmp_path / "ws", snapshot=False)
        job = _job(tmp_path, action_checkout, ws, tmp_path / "cache")
        job.base_env.update(DK_MIRROR_UPSTREAM=upstream.base_url,
                            DEVELOPER_KNOWLEDGE_API_KEY="test-key")  # fmt: skip
        # strict-offline "false" and a cache miss: fetched, verified, snapshot written and cached.
        run_action(job, action, {"strict-offline": "false"})
        # Its metadata is upstream's (updateTime), its content the locked bytes: a strict sync
        # from it into a new store succeeds.
        dk_mirror("--strict-offline", "sync", "--locked", "--lock", str(ws / "dk-mirror.lock"),
                  "--from", str(ws / "docs.snap"), db=tmp_path / "check.sqlite3")  # fmt: skip
        assert len(list((tmp_path / "cache").iterdir())) == 1

        # The README's scheduled job: its last step, as written, after the action's steps.
        workflow = _readme_workflows()["docs-drift"]
        check = workflow["jobs"]["check"]["steps"][-1]
        env = {"SNAPSHOT": "docs.snap", "DEVELOPER_KNOWLEDGE_API_KEY": "test-key"}
        job.run_script(check["run"], env, None)  # nothing changed upstream: passes
        upstream.put({**docs[A11Y], "content": docs[A11Y]["content"] + "\nNew paragraph.\n"})
        with pytest.raises(StepFailed) as changed:
            job.run_script(check["run"], env, None)
        assert changed.value.code == 1 and f"changed upstream  {A11Y}" in changed.value.stdout


@pytest.mark.slow
def test_the_action_writes_what_changed_per_page_to_the_job_summary(
    tmp_path: Path, pinned: PinnedRepo, action_checkout: Path
) -> None:
    docs = {d["name"]: d for d in _sample()}
    edited = docs[A11Y]["content"] + "\n## Deprecated APIs\n\nUse chrome.scripting.\n"
    with Emulator(docs.values(), api_key="test-key") as upstream:
        upstream.put({**docs[A11Y], "content": edited})
        ws = _checkout(pinned, tmp_path / "ws", snapshot=True)
        job = _job(tmp_path, action_checkout, ws, tmp_path / "cache")
        job.base_env.update(DK_MIRROR_UPSTREAM=upstream.base_url,
                            DEVELOPER_KNOWLEDGE_API_KEY="test-key")  # fmt: skip
        # Strictly offline sync from the committed snapshot, then the online report.
        out = run_action(job, load(ACTION), {"report-changes": "true"})
    assert out["changed"] == "true" and Path(out["changes"]).read_text() == job.summary
    assert job.summary.startswith(
        "### dk-mirror: Pinned docs differ from `dk-mirror.lock`: 1 changed."
    )
    (row,) = [ln for ln in job.summary.splitlines() if ln.startswith("| changed |")]
    assert "(https://developer.chrome.com/docs/extensions/mv3/a11y)" in row
    assert "+4 / -0 lines<br>deprecation notice added<br>new section: Deprecated APIs" in row
    assert f"`dk-mirror diff {A11Y} --from " in row


# --- the files parse and name only what exists ----------------------------------------------


def _readme_workflows() -> dict[str, dict[str, Any]]:
    blocks = re.findall(r"```yaml\n(.*?)```", README, re.S)
    found = {}
    for block in blocks:
        data = yaml.safe_load(block)
        if isinstance(data, dict) and "jobs" in data:
            found[data["name"]] = data
    return found


def test_action_yml_names_only_inputs_and_steps_that_exist() -> None:
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    inputs, steps = action["inputs"], action["runs"]["steps"]
    assert {"lock-file", "snapshot", "strict-offline", "python-version"} <= set(inputs)
    ids: list[str] = []
    for step in steps:
        text = json.dumps(step)
        for expr in expressions(text):
            for name in re.findall(r"inputs\.([\w-]+)", expr):
                assert name in inputs, f"{step['name']} uses undeclared input {name}"
            for step_id in re.findall(r"steps\.([\w-]+)\.", expr):
                assert step_id in ids, f"{step['name']} reads step {step_id} before it runs"
        # Inputs reach scripts through env:, never pasted into the script (injection).
        assert not expressions(step.get("run", "")), step["name"]
        ids.append(step.get("id", ""))
    for name, output in action["outputs"].items():
        (step_id,) = re.findall(r"steps\.([\w-]+)\.outputs", output["value"])
        assert step_id in ids, name
    assert [s.get("uses", "run") for s in steps][:3] == [
        "actions/setup-python@v5", "run", "actions/cache@v4"]  # fmt: skip
    sync = next(s for s in steps if s.get("id") == "sync")["run"]
    assert "args=(sync --locked" in sync and "--strict-offline" in sync and "GITHUB_ENV" in sync


def test_readme_workflows_use_the_action_as_declared() -> None:
    action = load(ACTION)
    workflows = _readme_workflows()
    assert set(workflows) == {"docs", "docs-drift"}
    assert "schedule" in workflows["docs-drift"][True]  # YAML 1.1 reads `on:` as True
    for workflow in workflows.values():
        for job in workflow["jobs"].values():
            ids = {s["id"] for s in job["steps"] if "id" in s}
            for step in job["steps"]:
                if step.get("uses", "").startswith("OWNER/dk-mirror@"):
                    assert set(step.get("with", {})) <= set(action["inputs"]), step
                for expr in expressions(json.dumps(step)):
                    if m := re.match(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
                        assert m[1] in ids and m[2] in action["outputs"], expr
                for line in str(step.get("run", "")).splitlines():
                    if line.startswith("dk-mirror "):
                        command, _ = _resolve(shlex.split(line)[1:])
                        assert command.name in ("get", "check"), line


def test_gitlab_template_parses_and_names_only_inputs_and_jobs_that_exist() -> None:
    header, jobs = yaml.safe_load_all(GITLAB.read_text(encoding="utf-8"))
    inputs = header["spec"]["inputs"]
    assert {"lock-file", "snapshot", "strict-offline", "python-version"} <= set(inputs)
    used = set(re.findall(r"\$\[\[\s*inputs\.([\w-]+)\s*\]\]", GITLAB.read_text()))
    assert used == set(inputs), "every input is used and every use is declared"
    docs = jobs[".dk-mirror-docs"]
    (cache,) = docs["cache"]
    assert cache["key"]["files"] == ["$[[ inputs.lock-file ]]"]
    assert cache["paths"] == ["$[[ inputs.snapshot ]]"]
    assert "DK_MIRROR_DB" in docs["variables"]
    for name, job in jobs.items():
        assert job.get("extends", ".dk-mirror-docs") in jobs, name
    drift = jobs["dk-mirror-drift"]
    assert drift["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
    # Shell variables the scripts read are the job's own, GitLab's, or the documented key.
    scripts = "\n".join(docs["before_script"] + drift["script"])
    for var in set(re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", scripts)):
        assert var in docs["variables"] or var.startswith("CI_"), var
    # The include shown in the README passes only declared inputs, and the job it extends exists.
    (include,) = [b for b in map(yaml.safe_load, re.findall(r"```yaml\n(.*?)```", README, re.S))
                  if isinstance(b, dict) and "include" in b]  # fmt: skip
    assert include["include"][0]["file"] == "/" + GITLAB.relative_to(ROOT).as_posix()
    assert set(include["include"][0]["inputs"]) <= set(inputs)
    assert include["test"]["extends"] in jobs


@pytest.mark.slow
def test_the_runners_python_sees_the_packages_the_tests_run_with(tmp_path: Path) -> None:
    """The runner's Python (setup-python here, the GitLab job's image) installs dk-mirror
    with no registry, so it must see the dependencies this interpreter has, also when the
    tests run in a virtualenv whose base interpreter has none of them."""
    python_like_this_one(tmp_path / "py")
    probe = "import json, sys, httpx, sqlalchemy, yaml, pip; print(json.dumps(sys.path))"
    done = subprocess.run([str(tmp_path / "py" / "bin" / "python"), "-c", probe],
                          capture_output=True, text=True, env=_runner_env(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert set(site.getsitepackages()) <= set(json.loads(done.stdout))


def _gitlab_project(action_checkout: Path, server: Path, project: str, ref: str) -> None:
    """dk-mirror's shipped files committed at `ref` in a git repository where GitLab would
    serve `project` from, with `server` standing for CI_SERVER_URL (a file: URL here)."""
    repo = server / f"{project}.git"
    shutil.copytree(action_checkout, repo, ignore=shutil.ignore_patterns("*.egg-info", "build"))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q", "-b", ref], ["add", "-A"], ["commit", "-q", "-m", "release"]):
        subprocess.run([*git, *args], check=True, capture_output=True)


def _gitlab_jobs(inputs: dict[str, str]) -> dict[str, Any]:
    """The template's jobs with `inputs` filled in as GitLab does (defaults for the rest)."""
    text = GITLAB.read_text(encoding="utf-8")
    header, _ = yaml.safe_load_all(text)
    values = {k: str(v.get("default", "")).lower() if v.get("type") == "boolean"
              else str(v.get("default", "")) for k, v in header["spec"]["inputs"].items()}  # fmt: skip
    values.update(inputs)
    filled = re.sub(r"\$\[\[\s*inputs\.([\w-]+)\s*\]\]", lambda m: values[m[1]], text)
    jobs: dict[str, Any] = list(yaml.safe_load_all(filled))[1]
    return jobs


def _gitlab_before_script(inputs: dict[str, str]) -> tuple[dict[str, Any], str]:
    """The hidden job with `inputs` filled in as GitLab does (defaults for the rest)."""
    docs = _gitlab_jobs(inputs)[".dk-mirror-docs"]
    return docs, "set -e\n" + "\n".join(docs["before_script"])


@pytest.mark.slow
def test_gitlab_job_installs_dk_mirror_from_its_own_project_and_syncs_strictly_offline(
    tmp_path: Path, pinned: PinnedRepo, action_checkout: Path
) -> None:
    """The hidden job's before_script, inputs filled in as GitLab does, run with sh. Its
    install step, left at its default, builds dk-mirror from the project and ref the file is
    included from (the package index has none), as the Action installs its own checkout."""
    server = tmp_path / "gitlab"
    _gitlab_project(action_checkout, server, "tools/dk-mirror", "v9")
    inputs = {"dk-mirror-project": "tools/dk-mirror", "dk-mirror-ref": "v9"}
    docs, script = _gitlab_before_script(inputs)
    assert docs["variables"]["DK_MIRROR_INSTALL"] == ""  # the default: its own source
    ws = _checkout(pinned, tmp_path / "project", snapshot=True)
    venv_dir = tmp_path / "image"
    python_like_this_one(venv_dir)  # the image's Python, with dk-mirror's dependencies
    env = {**_runner_env(tmp_path), "CI_PROJECT_DIR": str(ws), "CI_SERVER_URL": server.as_uri()}
    env["PATH"] = f"{venv_dir / 'bin'}{os.pathsep}{env['PATH']}"
    env.update({k: v.replace("$CI_PROJECT_DIR", str(ws)) for k, v in docs["variables"].items()})
    script += f"\ndk-mirror get {A11Y} > a11y.md\ncommand -v dk-mirror\n"
    done = subprocess.run(["sh", "-c", script], cwd=ws, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The job's own dk-mirror, built from the git project, ran the sync.
    assert done.stdout.strip().endswith(str(venv_dir / "bin" / "dk-mirror"))
    assert f"{len(LOCKED)} locked: 0 already exact, {len(LOCKED)} written" in done.stderr
    assert (ws / "a11y.md").stat().st_size > 1000
    assert Path(env["DK_MIRROR_DB"]).is_file()

    # The scheduled drift job on that store: a pinned page changed upstream, so it fails and
    # leaves the per-page report where its artifact is collected.
    drift = _gitlab_jobs(inputs)["dk-mirror-drift"]
    assert drift["artifacts"]["when"] == "always" and drift["artifacts"]["expose_as"]
    docs_by_name = {d["name"]: d for d in _sample()}
    with Emulator(docs_by_name.values(), api_key="test-key") as upstream:
        edited = docs_by_name[A11Y]["content"] + "\n## Quotas\n\n10 calls a minute.\n"
        upstream.put({**docs_by_name[A11Y], "content": edited})
        online = {**env, "DK_MIRROR_UPSTREAM": upstream.base_url,
                  "DEVELOPER_KNOWLEDGE_API_KEY": "test-key"}  # fmt: skip
        ran = subprocess.run(["sh", "-c", "set -e\n" + "\n".join(drift["script"])], cwd=ws,
                             env=online, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    (report,) = drift["artifacts"]["paths"]
    text = (ws / report).read_text()
    assert text.startswith("### dk-mirror: Pinned docs differ from `dk-mirror.lock`: 1 changed.")
    assert (
        "new section: Quotas" in text
        and "(https://developer.chrome.com/docs/extensions/mv3/a11y)" in text
    )

    # Neither `install` nor the project and ref: one error saying which inputs to set.
    docs, script = _gitlab_before_script({})
    env.update({k: v.replace("$CI_PROJECT_DIR", str(ws)) for k, v in docs["variables"].items()})
    missing = subprocess.run(["sh", "-c", script], cwd=ws, env=env, capture_output=True,
                             text=True, timeout=60)  # fmt: skip
    assert missing.returncode == 1
    assert "set the inputs dk-mirror-project and dk-mirror-ref" in missing.stderr


def test_the_template_and_the_action_install_the_same_way_by_default() -> None:
    header, _ = yaml.safe_load_all(GITLAB.read_text(encoding="utf-8"))
    gitlab, action = header["spec"]["inputs"], load(ACTION)["inputs"]
    assert gitlab["install"]["default"] == action["install"]["default"] == ""


@pytest.mark.slow
def test_pre_commit_hook_runs_lock_check(tmp_path: Path, pinned: PinnedRepo) -> None:
    (hook,) = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    assert hook["id"] == "dk-mirror-lock" and hook["pass_filenames"] is False
    assert re.search(hook["files"], "dk-mirror.toml") and re.search(hook["files"], "dk-mirror.lock")
    assert not re.search(hook["files"], "src/dk-mirror.toml.bak")
    ws = _checkout(pinned, tmp_path / "repo", snapshot=False)
    entry = shlex.split(hook["entry"])
    command, _ = _resolve(entry[1:])
    assert command.name == "lock"
    env = {**_runner_env(tmp_path), "PYTHONPATH": str(ROOT)}
    # The hook's entry as pre-commit runs it: in the repository root, no file arguments.
    run = [sys.executable, "-m", "mirror", *entry[1:]]
    assert subprocess.run(run, cwd=ws, env=env, capture_output=True).returncode == 0
    toml = ws / "dk-mirror.toml"
    toml.write_text(toml.read_text().replace("prefixes = [", 'prefixes = ["x.com/new/", '))
    failed = subprocess.run(run, cwd=ws, env=env, capture_output=True, text=True)
    assert failed.returncode == 1
    assert (
        "added to the requirements, not in the lock: prefix documents/x.com/new/" in failed.stderr
    )

"""Runs a composite GitHub Action's steps locally, in order, the way the runner does.

`run:` steps run in bash (`bash --noprofile --norc -eo pipefail`, GitHub's `shell: bash`) with
the step's `env:`, the GITHUB_ENV / GITHUB_OUTPUT / GITHUB_PATH / GITHUB_STEP_SUMMARY files and `${{ }}` expressions
evaluated. `uses:` steps are replaced by what they do here: `actions/setup-python` puts a
Python on PATH (a venv over this interpreter: the registry is not reachable from a test) and
`actions/cache` restores a directory keyed by the evaluated key, saving it after the job on a
miss. An expression naming an input that is not declared, or a step that has not run, fails.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import site
import subprocess
import sys
import venv
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def expressions(text: str) -> list[str]:
    """Every `${{ ... }}` expression in `text`."""
    return _EXPR.findall(text)


@dataclass
class Job:
    """One job's state on the fake runner: workspace, files, env, step outputs, the cache."""

    action_path: Path
    workspace: Path
    temp: Path
    cache_dir: Path
    base_env: dict[str, str]
    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)
    post: list[Callable[[], None]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    # The job summary: what steps appended to their GITHUB_STEP_SUMMARY file, in order.
    summary: str = ""

    def evaluate(self, expr: str) -> str:
        """The value of one expression (the subset actions use here)."""
        if m := re.fullmatch(r"inputs\.([\w-]+)", expr):
            assert m[1] in self.inputs, f"${{{{ {expr} }}}}: no input {m[1]!r} is declared"
            return self.inputs[m[1]]
        if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
            assert m[1] in self.outputs, f"${{{{ {expr} }}}}: no step {m[1]!r} has run"
            return self.outputs[m[1]].get(m[2], "")
        if m := re.fullmatch(r"hashFiles\((.*)\)", expr):
            # GitHub hashes each file's sha256; any digest that follows the bytes will do here.
            digest = hashlib.sha256()
            for pattern in (self.evaluate(a.strip()) for a in m[1].split(",")):
                for f in sorted(self.workspace.glob(pattern)):
                    digest.update(hashlib.sha256(f.read_bytes()).digest())
            return digest.hexdigest()
        fixed = {"github.action_path": str(self.action_path), "github.workspace":
                 str(self.workspace), "runner.temp": str(self.temp), "runner.os": "Linux"}  # fmt: skip
        assert expr in fixed, f"${{{{ {expr} }}}}: not an expression this runner knows"
        return fixed[expr]

    def render(self, text: Any) -> str:
        """`text` with every expression replaced by its value."""
        return _EXPR.sub(lambda m: self.evaluate(m[1]), str(text))

    def run_script(self, script: str, step_env: dict[str, str], step_id: str | None) -> None:
        """A `run:` step in bash, reading back the files it writes."""
        files = {k: self.temp / f"{k.lower()}-{len(self.log)}" for k in
                 ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")}  # fmt: skip
        for f in files.values():
            f.write_text("")
        env = {**self.base_env, **self.env, **{k: str(v) for k, v in files.items()}}
        env["PATH"] = os.pathsep.join([*self.path, self.base_env.get("PATH", "")])
        env.update(GITHUB_ACTION_PATH=str(self.action_path), GITHUB_WORKSPACE=str(self.workspace),
                   RUNNER_TEMP=str(self.temp), RUNNER_OS="Linux", CI="true")  # fmt: skip
        env.update(step_env)
        script_file = self.temp / f"step-{len(self.log)}.sh"
        script_file.write_text(script)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)],
            cwd=self.workspace, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        self.log.append(done.stdout + done.stderr)
        if done.returncode != 0:
            raise StepFailed(done.returncode, done.stdout, done.stderr)
        self.summary += files["GITHUB_STEP_SUMMARY"].read_text()
        self.env.update(_key_values(files["GITHUB_ENV"].read_text()))
        self.path[:0] = [p for p in files["GITHUB_PATH"].read_text().splitlines() if p]
        if step_id:
            self.outputs[step_id] = _key_values(files["GITHUB_OUTPUT"].read_text())


class StepFailed(Exception):
    """A `run:` step exited non-zero."""

    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        super().__init__(f"exit {code}\n{stdout}\n{stderr}")
        self.code, self.stdout, self.stderr = code, stdout, stderr


def _key_values(text: str) -> dict[str, str]:
    # GITHUB_ENV / GITHUB_OUTPUT: `KEY=value` lines, or `KEY<<DELIM` ... `DELIM` blocks.
    out: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delim = line.split("<<", 1)
            out[key] = "\n".join(iter(lambda: next(lines), delim))
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
    return out


def setup_python(job: Job, with_: dict[str, str]) -> dict[str, str]:
    """actions/setup-python: a Python of the asked version first on PATH."""
    wanted = with_["python-version"]
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert wanted == running, f"this runner has only Python {running}, the step asks for {wanted}"
    target = job.temp / "python"
    python_like_this_one(target)
    job.path.insert(0, str(target / "bin"))
    return {"python-version": running}


def python_like_this_one(target: Path) -> None:
    """A venv at `target` that sees the packages this interpreter sees (dk-mirror's
    dependencies, pip, setuptools), so it needs no registry: the system site-packages, and,
    when the tests run in a virtualenv, that virtualenv's (venv alone would give the base
    interpreter's, which may lack them). No pip of its own, so `python -m pip` is this
    interpreter's pip installing into the venv. Only the folders are added, not the .pth
    files in them, so an editable dk-mirror of this checkout is not imported from there."""
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(target)
    if sys.prefix == sys.base_prefix:
        return
    (own,) = (target / "lib").glob("python3*/site-packages")
    (own / "_parent_site_packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")


def cache(job: Job, with_: dict[str, str]) -> dict[str, str]:
    """actions/cache: restore `path` from the entry named `key`; on a miss, save it after the job."""
    path, key = job.workspace / with_["path"], with_["key"]
    assert key.strip() and not key.endswith("-"), f"cache key {key!r} has an empty part"
    entry = job.cache_dir / key / with_["path"]
    if entry.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(entry, path)
        return {"cache-hit": "true"}

    def save() -> None:
        if path.exists():
            entry.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, entry)

    job.post.append(save)
    return {"cache-hit": "false"}


USES: dict[str, Callable[[Job, dict[str, str]], dict[str, str]]] = {
    "actions/setup-python@v5": setup_python,
    "actions/cache@v4": cache,
}


def load(path: Path) -> dict[str, Any]:
    """The action's metadata, parsed."""
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def run_action(job: Job, action: dict[str, Any], given: dict[str, str]) -> dict[str, str]:
    """Run every step in order, then the post steps; returns the action's outputs."""
    declared = action.get("inputs", {})
    unknown = set(given) - set(declared)
    assert not unknown, f"inputs {sorted(unknown)} are not declared"
    job.inputs = {k: str(given.get(k, spec.get("default", ""))) for k, spec in declared.items()}
    for step in action["runs"]["steps"]:
        step_id = step.get("id")
        if "uses" in step:
            with_ = {k: job.render(v) for k, v in step.get("with", {}).items()}
            outputs = USES[step["uses"]](job, with_)
            if step_id:
                job.outputs[step_id] = outputs
        else:
            assert step.get("shell") == "bash", f"{step.get('name')}: composite steps need a shell"
            env = {k: job.render(v) for k, v in step.get("env", {}).items()}
            job.run_script(job.render(step["run"]), env, step_id)
    for save in job.post:  # a failed job (StepFailed above) saves no cache, as on GitHub
        save()
    return {k: job.render(v["value"]) for k, v in action.get("outputs", {}).items()}

"""The image's install step works: the Dockerfile's own pip line, run in a fresh virtualenv.

There is no Docker engine here, so the test does what the build does: it assembles the build
context from .dockerignore, reads the ``pip install`` line(s) out of the Dockerfile (so they
cannot drift apart), runs them in a new virtualenv without torch, and starts the service's
entry points from it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        keyword, _, rest = pending.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        pending = ""
    return instructions


def pip_commands(text: str) -> list[tuple[list[str], dict[str, str]]]:
    """Each ``pip ...`` command of the RUN instructions that call pip (commands joined by ``&&``),
    as (its words after ``pip``, {bind mount target: source})."""
    found = []
    for keyword, rest in dockerfile_instructions(text):
        if keyword != "RUN" or "pip " not in rest:
            continue
        words = shlex.split(rest)
        mounts: dict[str, str] = {}
        while words and words[0].startswith("--mount="):
            options = dict(part.split("=", 1) for part in words.pop(0)[len("--mount=") :].split(",") if "=" in part)
            assert options.get("type") == "bind", f"only bind mounts are understood here, not {options}"
            mounts[options["target"]] = options.get("source", ".")
        for command in " ".join(words).split("&&"):
            args = shlex.split(command)
            assert args[:1] == ["pip"], f"every command of the install step should be pip: {command!r}"
            found.append((args[1:], mounts))
    return found


def build_context(destination: Path) -> Path:
    """The files `docker build .` sends: .dockerignore here is '*' then '!path' allowances."""
    lines = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()]
    rules = [line for line in lines if line and not line.startswith("#")]
    assert rules[0] == "*", ".dockerignore should exclude everything first, then allow paths"
    allowed = [rule[1:].rstrip("/") for rule in rules[1:] if rule.startswith("!")]
    excluded_names = [rule.rsplit("/", 1)[-1] for rule in rules[1:] if not rule.startswith("!")]
    ignore = shutil.ignore_patterns(*excluded_names)
    for relative in allowed:
        source = ROOT / relative
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=ignore)
        else:
            shutil.copy2(source, target)
    return destination


def test_dockerfile_is_parsed_into_its_install_step() -> None:
    commands = pip_commands(DOCKERFILE.read_text())
    assert [args for args, _ in commands] == [
        ["install", "--no-cache-dir", "--require-hashes", "--no-deps", "-r", "/src/image-requirements.txt"],
        ["install", "--no-cache-dir", "--no-deps", "--no-build-isolation", "/src"],
        ["check"],
    ]
    assert all(mounts == {"/src": "."} for _, mounts in commands)
    assert not any("train" in arg for args, _ in commands for arg in args), "the image must not install torch"
    instructions = dict(dockerfile_instructions(DOCKERFILE.read_text()))
    assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", instructions["FROM"]), "the base is pinned by digest"
    assert instructions["USER"].split(":")[0].isdigit(), "a numeric USER lets the kubelet check runAsNonRoot"
    assert instructions["ENTRYPOINT"] == '["trainyard"]'


def _in_context(arg: str, mounts: dict[str, str], context: Path) -> str:
    """``arg`` with a path under a bind mount's target rewritten to the same path in ``context``."""
    for target, source in mounts.items():
        if arg == target or arg.startswith(target + "/"):
            return str(context / source / arg[len(target) :].lstrip("/"))
    return arg


@pytest.mark.slow
def test_image_dependency_set_serves_without_torch(tmp_path: Path) -> None:
    context = build_context(tmp_path / "context")
    venv = tmp_path / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    for args, mounts in pip_commands(DOCKERFILE.read_text()):
        # The mount targets are where the build sees the context; --no-cache-dir keeps the image
        # small but would make every test run download everything again, and changes nothing
        # about what is installed.
        local = [_in_context(arg, mounts, context) for arg in args if arg != "--no-cache-dir"]
        subprocess.run([str(python), "-m", "pip", *local], check=True, env=env, timeout=400)

    outside = tmp_path / "elsewhere"  # not the source tree: imports must come from the virtualenv
    outside.mkdir()
    help_text = subprocess.run(
        [str(venv / "bin" / "trainyard"), "serve", "--help"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=outside,
    ).stdout
    assert "--tls-cert-dir" in help_text
    probe = (
        "import importlib.util, sys, scheduler.controllers, webhooks, webhooks.server, trainyard.cli.serve\n"
        "assert importlib.util.find_spec('torch') is None, 'torch is installed'\n"
        "assert 'torch' not in sys.modules\n"
        "print(scheduler.controllers.__file__)\n"
    )
    located = subprocess.run(
        [str(python), "-c", probe], check=True, capture_output=True, text=True, env=env, cwd=outside
    ).stdout
    assert Path(located.strip()).is_relative_to(venv), f"scheduler.controllers came from {located.strip()}"
    frozen = subprocess.run([str(python), "-m", "pip", "freeze"], check=True, capture_output=True, text=True).stdout
    # PEP 503 normalised names (pip freeze spells some with underscores)
    names = {re.sub(r"[-_.]+", "-", re.split(r"[=@ ]", line, maxsplit=1)[0]).lower() for line in frozen.splitlines()}
    assert "torch" not in names
    assert {"aiohttp", "kubernetes-asyncio", "pydantic"} <= names

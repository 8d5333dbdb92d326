"""image-requirements.txt: every package the image installs, pinned to the version pyproject.toml
names and hash-checked. (test_image_install.py installs it with --require-hashes from PyPI, which
checks each hash against the wheel itself.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "image-requirements.txt"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def locked() -> dict[str, tuple[str, list[str]]]:
    """name -> (pinned version, its sha256 hashes), from the lock file's entries."""
    text = re.sub(r"\\\n", " ", LOCK.read_text())  # an entry's continuation lines, joined
    entries: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, *options = line.split()
        name, _, version = requirement.partition("==")
        assert version, f"{requirement}: every entry is pinned with =="
        hashes = [option.removeprefix("--hash=sha256:") for option in options]
        assert all(option.startswith("--hash=sha256:") for option in options), line
        entries[canonicalize_name(name)] = (version, hashes)
    return entries


def test_every_entry_is_pinned_and_hashed() -> None:
    entries = locked()
    assert len(entries) >= 40
    for name, (_, hashes) in entries.items():
        assert hashes, f"{name} has no hash"
        assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for digest in hashes), name


def _assert_locked(requirements: list[str], where: str) -> None:
    entries = locked()
    for line in requirements:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in entries, f"{requirement.name} ({where}) is missing from {LOCK.name}"
        version = entries[name][0]
        assert version in SpecifierSet(str(requirement.specifier)), f"{name}: locked {version}, {where} says {line}"


def test_the_lock_pins_what_pyproject_names() -> None:
    _assert_locked(PYPROJECT["project"]["dependencies"], "pyproject.toml [project] dependencies")
    assert "torch" not in locked(), "the image never trains"


def test_the_lock_holds_the_build_backend_pyproject_asks_for() -> None:
    # the image builds trainyard with --no-build-isolation: with the lock's setuptools and wheel
    _assert_locked(PYPROJECT["build-system"]["requires"], "pyproject.toml [build-system]")

"""The compiled engine is used only while it matches its sources; otherwise pure Python runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from scheduler.engine import native


@pytest.fixture
def build_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(native, "BUILD_DIR", tmp_path)
    monkeypatch.setattr(native, "STAMP", tmp_path / "engine.sha256")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(native.PURE_ENV, raising=False)
    return tmp_path


def test_a_matching_build_goes_first_on_the_package_path(build_dir: Path) -> None:
    (build_dir / "engine.sha256").write_text(native.source_digest() + "\n")
    path = ["/src/scheduler/engine"]
    assert native.activate(path)
    assert path == [str(build_dir / "scheduler" / "engine"), "/src/scheduler/engine"]
    assert str(build_dir) in sys.path


def test_a_stale_or_missing_build_is_ignored(build_dir: Path) -> None:
    path = ["/src/scheduler/engine"]
    assert not native.activate(path)  # no stamp: never built
    (build_dir / "engine.sha256").write_text("0" * 64 + "\n")  # built from other sources
    assert not native.activate(path)
    assert path == ["/src/scheduler/engine"]


def test_pure_python_can_be_forced(build_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (build_dir / "engine.sha256").write_text(native.source_digest() + "\n")
    monkeypatch.setenv(native.PURE_ENV, "1")
    path = ["/src/scheduler/engine"]
    assert not native.activate(path)
    assert path == ["/src/scheduler/engine"]


def test_the_digest_follows_every_compiled_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in native.COMPILED:
        (tmp_path / f"{name}.py").write_bytes((native.PACKAGE_DIR / f"{name}.py").read_bytes())
    before = native.source_digest()
    monkeypatch.setattr(native, "PACKAGE_DIR", tmp_path)
    assert native.source_digest() == before
    for name in native.COMPILED:
        source = tmp_path / f"{name}.py"
        original = source.read_bytes()
        source.write_bytes(original + b"\n")
        assert native.source_digest() != before, name
        source.write_bytes(original)


def test_this_process_runs_the_build_exactly_when_it_matches() -> None:
    """What `make install` leaves behind is what the tests run: compiled when build/native
    matches the sources (unless TRAINYARD_PURE_ENGINE is set), pure Python otherwise."""
    built = native.STAMP.is_file() and native.STAMP.read_text().strip() == native.source_digest()
    assert native.is_compiled() == (built and not os.environ.get(native.PURE_ENV))

"""The compiled modules are used only while they match their sources; otherwise pure Python runs."""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

import pytest

from scheduler import native


@pytest.fixture
def build_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(native, "BUILD_DIR", tmp_path)
    monkeypatch.setattr(native, "STAMP", tmp_path / "engine.sha256")
    monkeypatch.setattr(native, "RUNTIME_DIR", tmp_path / "runtime")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(native.PURE_ENV, raising=False)
    return tmp_path


@pytest.mark.parametrize("package", sorted(native.COMPILED))
def test_a_matching_build_goes_first_on_the_package_path(build_dir: Path, package: str) -> None:
    (build_dir / "engine.sha256").write_text(native.source_digest() + "\n")
    path = ["/src/" + package.replace(".", "/")]
    assert native.activate(path, package)
    assert path == [str(build_dir.joinpath(*package.split("."))), "/src/" + package.replace(".", "/")]
    assert str(build_dir / "runtime") in sys.path
    assert str(build_dir) not in sys.path  # its scheduler/ tree would shadow the real package


def test_a_stale_or_missing_build_is_ignored(build_dir: Path) -> None:
    path = ["/src/scheduler/engine"]
    assert not native.activate(path, "scheduler.engine")  # no stamp: never built
    (build_dir / "engine.sha256").write_text("0" * 64 + "\n")  # built from other sources
    assert not native.activate(path, "scheduler.engine")
    assert path == ["/src/scheduler/engine"]


def test_pure_python_can_be_forced(build_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (build_dir / "engine.sha256").write_text(native.source_digest() + "\n")
    monkeypatch.setenv(native.PURE_ENV, "1")
    path = ["/src/scheduler/topology"]
    assert not native.activate(path, "scheduler.topology")
    assert path == ["/src/scheduler/topology"]


def test_the_digest_follows_every_compiled_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for package, modules in native.COMPILED.items():
        for name in modules:
            copy = tmp_path.joinpath(*package.split("."), f"{name}.py")
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(native.source_path(package, name).read_bytes())
    before = native.source_digest()
    monkeypatch.setattr(native, "ROOT", tmp_path)
    assert native.source_digest() == before
    for package, modules in native.COMPILED.items():
        for name in modules:
            source = tmp_path.joinpath(*package.split("."), f"{name}.py")
            original = source.read_bytes()
            source.write_bytes(original + b"\n")
            assert native.source_digest() != before, f"{package}.{name}"
            source.write_bytes(original)


def test_a_spawned_process_imports_the_real_packages() -> None:
    """A child started by multiprocessing's spawn inherits sys.path, the runtime directory
    included; it must still find the scheduler package itself, compiled modules and all."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        found = pool.apply(_engine_names)
    assert found == ("AdmissionEngine", "TopologyPlacer", native.is_compiled())


def _engine_names() -> tuple[str, str, bool]:
    from scheduler.engine import AdmissionEngine
    from scheduler.topology import TopologyPlacer

    return AdmissionEngine.__name__, TopologyPlacer.__name__, native.is_compiled()


def test_this_process_runs_the_build_exactly_when_it_matches() -> None:
    """What `make install` leaves behind is what the tests run: compiled when build/native
    matches the sources (unless TRAINYARD_PURE_ENGINE is set), pure Python otherwise; the engine
    and the placer together."""
    built = native.STAMP.is_file() and native.STAMP.read_text().strip() == native.source_digest()
    assert native.is_compiled() == (built and not os.environ.get(native.PURE_ENV))

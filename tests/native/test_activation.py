"""The compiled build runs only while it matches its sources, all of it or none of it; the one
activation point is a finder the ``.pth`` hook puts first on ``sys.meta_path``."""

from __future__ import annotations

import importlib.machinery
import json
import multiprocessing
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from trainyard.native import activation, build
from trainyard.native.activation import CompiledModuleFinder, check_build, extension_path
from trainyard.native.modules import ROOT, compiled_modules, source_digest

SUFFIX = str(sysconfig.get_config_var("EXT_SUFFIX"))
MODULES = ("pkg.hot", "pkg.sub.loop")
RUNTIME = "abc123__mypyc"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with two listed modules and a build of them that matches (the extension files
    are placeholders: these tests read specs, they never load one)."""
    monkeypatch.delenv(activation.PURE_ENV, raising=False)
    monkeypatch.delenv(activation.REQUIRE_ENV, raising=False)
    for module in MODULES:
        source = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(f"NAME = {module!r}\n")
    _write_build(tmp_path, {module: source_digest(module, tmp_path) for module in MODULES})
    return tmp_path


def _write_build(root: Path, digests: dict[str, str], ext_suffix: str = SUFFIX) -> None:
    build_dir = root / "build" / "native"
    for module in [*digests, RUNTIME]:
        placeholder = extension_path(build_dir, module, RUNTIME)
        placeholder.parent.mkdir(parents=True, exist_ok=True)
        placeholder.write_bytes(b"")
    manifest = {"ext_suffix": ext_suffix, "runtime": RUNTIME, "modules": digests}
    (build_dir / "manifest.json").write_text(json.dumps(manifest))


def _finder(root: Path) -> CompiledModuleFinder:
    return CompiledModuleFinder(root / "build" / "native", root, MODULES)


def test_a_matching_build_serves_every_listed_module_and_the_runtime(project: Path) -> None:
    finder = _finder(project)
    assert finder.find_spec("pkg.other") is None  # not listed: the ordinary finders import it
    for module in MODULES:
        spec = finder.find_spec(module)
        assert spec is not None
        assert isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)
        *package, name = module.split(".")
        assert spec.origin == str(project.joinpath("build", "native", *package, f"{name}{SUFFIX}"))
    runtime = finder.find_spec(RUNTIME)
    assert runtime is not None
    assert runtime.origin == str(project / "build" / "native" / "runtime" / f"{RUNTIME}{SUFFIX}")
    assert finder.state.usable


def test_an_edited_source_turns_the_whole_build_off_and_says_which(project: Path) -> None:
    (project / "pkg" / "sub" / "loop.py").write_text("NAME = 'edited'\n")
    finder = _finder(project)
    assert finder.find_spec("pkg.hot") is None  # unchanged, but compiled code must not mix with pure
    assert finder.find_spec("pkg.sub.loop") is None
    assert "stale: pkg/sub/loop.py changed" in finder.state.reason
    assert "make install" in finder.state.reason


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (lambda root: (root / "build" / "native" / "manifest.json").unlink(), "no compiled build"),
        (lambda root: (root / "build" / "native" / "manifest.json").write_text("{"), "unreadable"),
        (lambda root: _write_build(root, {"pkg.hot": "0" * 64}), "stale"),
        (lambda root: _write_build(root, {m: source_digest(m, root) for m in MODULES}, ".other.so"), "another Python"),
        (lambda root: extension_path(root / "build" / "native", "pkg.hot", RUNTIME).unlink(), "incomplete"),
        (lambda root: (root / "pkg" / "hot.py").unlink(), "pkg/hot.py changed"),
    ],
    ids=["missing", "unreadable", "list-changed", "other-python", "incomplete", "source-removed"],
)
def test_a_build_that_does_not_match_is_not_used(project: Path, spoil: object, says: str) -> None:
    spoil(project)  # type: ignore[operator]
    state = check_build(project / "build" / "native", project, MODULES)
    assert not state.usable
    assert says in state.reason
    assert _finder(project).find_spec("pkg.hot") is None


def test_make_test_turns_a_stale_build_into_an_import_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "pkg" / "hot.py").write_text("NAME = 'edited'\n")
    monkeypatch.setenv(activation.REQUIRE_ENV, "1")
    with pytest.raises(ImportError, match=r"pkg\.hot: .*stale: pkg/hot\.py changed.*make install"):
        _finder(project).find_spec("pkg.hot")
    monkeypatch.setenv(activation.PURE_ENV, "1")  # asked for pure Python: nothing to complain about
    assert _finder(project).find_spec("pkg.hot") is None


def test_pure_python_can_be_forced(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(activation.PURE_ENV, "1")
    finder = _finder(project)
    assert finder.find_spec("pkg.hot") is None
    assert finder.state.pure_asked
    monkeypatch.setenv(activation.PURE_ENV, "0")
    assert _finder(project).find_spec("pkg.hot") is not None


def test_install_puts_one_finder_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if not isinstance(f, CompiledModuleFinder)])
    activation.install()
    activation.install()
    assert isinstance(sys.meta_path[0], CompiledModuleFinder)
    assert sum(isinstance(f, CompiledModuleFinder) for f in sys.meta_path) == 1


def test_the_hook_installs_the_finder_when_an_interpreter_starts(tmp_path: Path) -> None:
    hook = build.install_hook(tmp_path)
    assert hook.name.endswith(".pth")
    probe = (
        "import site, sys; site.addsitedir(sys.argv[1]); "
        "from trainyard.native.activation import CompiledModuleFinder; "
        "print(type(sys.meta_path[0]) is CompiledModuleFinder)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-S", "-c", probe, str(tmp_path)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def _compiled_now() -> dict[str, bool]:
    """Every listed module imported so far: loaded from an extension module or not."""
    import scheduler.topology.placer  # noqa: F401  (the engine and the placer at least)
    import simulations.simulator  # noqa: F401
    from scheduler.engine import AdmissionEngine  # noqa: F401

    return {
        name: str(getattr(sys.modules[name], "__file__", "")).endswith(SUFFIX)
        for name in compiled_modules()
        if name in sys.modules
    }


def test_this_process_runs_the_build_exactly_when_it_matches() -> None:
    """What ``make install`` leaves behind is what the tests run: every listed module compiled when
    the build matches its sources (and pure Python was not asked for), none of them otherwise."""
    compiled = _compiled_now()
    assert len(compiled) >= 20
    expected = activation.engine_build() == "mypyc"
    assert set(compiled.values()) == {expected}, activation.build_state().reason


def test_a_spawned_process_runs_what_this_one_runs() -> None:
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        child = pool.apply(_compiled_now)
    assert child == {name: compiled for name, compiled in _compiled_now().items() if name in child}

"""The one activation point of the compiled build: a finder first on ``sys.meta_path``.

``make install`` writes a ``.pth`` file into the virtualenv that calls ``install()`` when any
interpreter of it starts (spawned workers and subprocesses included). The finder answers only for
the modules the build compiled, and only while ``build/native/manifest.json`` matches their
sources: it checks the whole build once, at the first import of a compiled module, and serves all
of it or none of it (compiled modules call each other natively, so a mix would be wrong). Until
then, and whenever the check fails, the ordinary finders import the Python sources.

Every interpreter of the virtualenv imports this module at start, so it imports only what the
interpreter has loaded by then; reading the manifest waits for the first compiled module.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from trainyard.native.modules import BUILD_DIR, ROOT, compiled_modules, source_digest, source_path

PURE_ENV = "TRAINYARD_PURE_ENGINE"  # pure Python, whatever was built
REQUIRE_ENV = "TRAINYARD_REQUIRE_COMPILED"  # a stale or missing build is an ImportError (make test)
REBUILD = "run `make install` to rebuild it, or set TRAINYARD_PURE_ENGINE=1 to run pure Python"


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


class BuildState:
    """Whether the compiled modules can run, and if not, why in words."""

    __slots__ = ("reason", "runtime_module", "usable")

    def __init__(self, usable: bool, reason: str, runtime_module: str = "") -> None:
        self.usable = usable
        self.reason = reason
        self.runtime_module = runtime_module  # mypyc's shared runtime module, named after the build

    def __repr__(self) -> str:
        return f"BuildState(usable={self.usable}, reason={self.reason!r})"

    @property
    def pure_asked(self) -> bool:
        return self.reason.startswith(PURE_ENV)


def check_build(build_dir: Path = BUILD_DIR, root: Path = ROOT, modules: Sequence[str] | None = None) -> BuildState:
    """Read the manifest and compare it with the sources now: usable, or why not."""
    import json
    import sysconfig

    if _flag(PURE_ENV):
        return BuildState(False, f"{PURE_ENV} is set")
    manifest_path = build_dir / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError:
        return BuildState(False, f"no compiled build in {build_dir}: {REBUILD}")
    except (OSError, ValueError) as error:
        return BuildState(False, f"{manifest_path} is unreadable ({error}): {REBUILD}")
    suffix = str(sysconfig.get_config_var("EXT_SUFFIX"))
    if manifest.get("ext_suffix") != suffix:
        return BuildState(False, f"{build_dir} was built for another Python ({manifest.get('ext_suffix')}): {REBUILD}")
    wanted = compiled_modules() if modules is None else list(modules)
    built: dict[str, str] = manifest.get("modules", {})
    changed = [m for m in wanted if not _unchanged(m, built, root)]
    if changed or set(built) != set(wanted):
        names = ", ".join(str(source_path(m, root).relative_to(root)) for m in changed) or "the list of modules"
        return BuildState(False, f"{build_dir} is stale: {names} changed since it was built; {REBUILD}")
    runtime = str(manifest.get("runtime", ""))
    missing = [p for p in [extension_path(build_dir, m, runtime) for m in [*wanted, runtime]] if not p.is_file()]
    if missing:
        return BuildState(False, f"{build_dir} is incomplete: no {missing[0].name}; {REBUILD}")
    return BuildState(True, f"compiled with mypyc in {build_dir}", runtime)


def _unchanged(module: str, built: dict[str, str], root: Path) -> bool:
    return module in built and source_path(module, root).is_file() and built[module] == source_digest(module, root)


def extension_path(build_dir: Path, module: str, runtime_module: str) -> Path:
    """Where the build keeps a compiled module: its package's folder, mypyc's runtime in ``runtime/``."""
    import sysconfig

    suffix = str(sysconfig.get_config_var("EXT_SUFFIX"))
    if module == runtime_module:
        return build_dir / "runtime" / f"{module}{suffix}"
    *package, name = module.split(".")
    return build_dir.joinpath(*package, f"{name}{suffix}")


class CompiledModuleFinder:
    """Finds the compiled build's extension modules in place of their sources, all or none."""

    def __init__(self, build_dir: Path = BUILD_DIR, root: Path = ROOT, modules: Sequence[str] | None = None) -> None:
        self.build_dir = build_dir
        self.root = root
        self.modules = frozenset(compiled_modules() if modules is None else modules)
        self._state: BuildState | None = None

    @property
    def state(self) -> BuildState:
        if self._state is None:
            self._state = check_build(self.build_dir, self.root, sorted(self.modules))
        return self._state

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules and (self._state is None or fullname != self._state.runtime_module):
            return None  # not ours; mypyc's runtime module is asked for only after a compiled one
        state = self.state
        if not state.usable:
            if _flag(REQUIRE_ENV) and not state.pure_asked:
                raise ImportError(f"{fullname}: {state.reason} ({REQUIRE_ENV} is set)", name=fullname)
            return None
        import importlib.util

        location = str(extension_path(self.build_dir, fullname, state.runtime_module))
        loader = importlib.machinery.ExtensionFileLoader(fullname, location)
        return importlib.util.spec_from_file_location(fullname, location, loader=loader)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): what the ``.pth`` hook calls at startup."""
    if not any(isinstance(finder, CompiledModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, CompiledModuleFinder())


def installed_finder() -> CompiledModuleFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, CompiledModuleFinder)), None)


def build_state() -> BuildState:
    """What this process runs: the compiled build, or pure Python and why."""
    finder = installed_finder()
    if finder is None:
        state = check_build()
        if not state.usable:
            return state
        return BuildState(False, f"the activation hook is not installed in {sys.prefix}: {REBUILD}")
    return finder.state


def engine_build() -> str:
    """``mypyc`` or ``python``: what benchmarks report as ``engine_build``."""
    return "mypyc" if build_state().usable else "python"

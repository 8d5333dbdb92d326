"""Editing any compiled module's source makes ``make install`` rebuild the compiled build.

The Makefile's dependencies of the build come from ``trainyard.native.modules``: make's own
database lists every compiled source as a prerequisite of the build, and ``make -q`` (is the
target up to date? nothing is run) with ``-W FILE`` (take FILE as just edited) answers "rebuild"
for a compiled module of each package and "up to date" for an interpreted one. The build and the installed stamp are stand-in files (fresh), so nothing
outside the edited file can make the target out of date.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from trainyard.native.modules import COMPILED, ROOT, build_inputs, compiled_modules, source_path

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """make arguments that point the install stamp and the build at fresh stand-ins."""
    folder = tmp_path_factory.mktemp("make")
    installed, built = folder / "installed", folder / "manifest.json"
    installed.touch()
    built.touch()  # after the stamp: the build is newer than everything it depends on
    return [f"STAMP={installed}", f"NATIVE={built}", str(built)]


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True)


def test_the_build_is_up_to_date_until_a_source_changes(targets: list[str]) -> None:
    assert _make("-q", *targets).returncode == 0
    dry_run = _make("-n", "-W", str(source_path("simulations.simulator").relative_to(ROOT)), *targets)
    assert "-m trainyard.native.build" in dry_run.stdout


def test_every_compiled_module_is_a_dependency_of_the_build(targets: list[str]) -> None:
    """make's own database (``-p``): the build target's prerequisites name every listed source."""
    database = _make("-p", "-q", *targets).stdout
    rule = next(line for line in database.splitlines() if line.startswith(f"{targets[-1]}:"))
    prerequisites = set(rule.partition(":")[2].split())
    missing = [m for m in compiled_modules() if str(source_path(m).relative_to(ROOT)) not in prerequisites]
    assert not missing, f"editing these would not rebuild: {missing}"


@pytest.mark.parametrize("module", [f"{package}.{names[-1]}" for package, names in COMPILED.items()])
def test_editing_a_compiled_module_rebuilds(targets: list[str], module: str) -> None:
    edited = str(source_path(module).relative_to(ROOT))
    assert _make("-q", "-W", edited, *targets).returncode == 1, f"make install would not rebuild after {edited}"


def test_editing_an_interpreted_module_does_not_rebuild(targets: list[str]) -> None:
    assert "scheduler.engine.restore" not in compiled_modules()
    assert _make("-q", "-W", "scheduler/engine/restore.py", *targets).returncode == 0


def test_the_dependencies_are_the_list(targets: list[str]) -> None:
    printed = _make("-s", "--eval", "print-native-sources: ; @echo $(NATIVE_SOURCES)", "print-native-sources")
    assert printed.returncode == 0, printed.stderr
    assert sorted(printed.stdout.split()) == sorted(str(p.relative_to(ROOT)) for p in build_inputs())
    assert {str(Path(p)) for p in printed.stdout.split()} >= {"trainyard/native/modules.py"}

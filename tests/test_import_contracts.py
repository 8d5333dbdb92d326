"""The layering of DESIGN.md, checked by import-linter from the test suite as well as `make contracts`."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold() -> None:
    linter = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(linter)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_webhook_and_scheduler_never_import_torch() -> None:
    code = (
        "import sys, importlib, pkgutil\n"
        "for pkg in ('scheduler', 'webhooks'):\n"
        "    mod = importlib.import_module(pkg)\n"
        "    for info in pkgutil.walk_packages(mod.__path__, pkg + '.'):\n"
        "        importlib.import_module(info.name)\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_every_engine_part_is_held_to_the_facade_contract() -> None:
    """A new engine module is covered too: the contract lists every module but the facade itself."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    facade = next(c for c in contracts if c.get("forbidden_modules") == ["scheduler.engine.engine"])
    parts = {
        f"scheduler.engine.{path.stem}"
        for path in (ROOT / "scheduler" / "engine").glob("*.py")
        if path.stem not in ("__init__", "engine")
    }
    assert set(facade["source_modules"]) == parts

"""The layering of DESIGN.md, checked by import-linter from the test suite as well as `make contracts`."""

import subprocess
import sys
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

"""One line at the end of the session when the upstream parity tests skipped for want of their files."""

from __future__ import annotations

import pytest
from anchors import MISSING, how_to_get_them


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = [report for report in terminalreporter.stats.get("skipped", []) if MISSING in str(report.longrepr)]
    if skipped:
        terminalreporter.write_line(how_to_get_them(len(skipped)), yellow=True)

"""The demo's tables fit the terminal it runs in, also when its output is piped (issue 32)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import sys
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

from trainyard.cli.demo import terminal_columns, terminal_width
from trainyard.cli.main import main

SAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "samples"


@pytest.fixture
def terminal() -> Iterator[TextIO]:
    """A pseudo-terminal 97 columns wide, as the file a process would have for its stderr."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 97, 0, 0))
    stream = os.fdopen(follower, "w")
    try:
        yield stream
    finally:
        stream.close()
        os.close(leader)


def test_the_width_is_read_from_the_first_stream_that_is_a_terminal(terminal: TextIO) -> None:
    assert terminal_width([io.StringIO(), terminal]) == 97
    assert terminal_width([io.StringIO()]) is None


def test_piped_output_gets_the_terminals_width_for_the_steps(terminal: TextIO, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # `trainyard demo | tee demo.log`
    monkeypatch.setattr(sys, "stderr", terminal)
    with terminal_columns():
        assert os.environ["COLUMNS"] == "97"
    assert "COLUMNS" not in os.environ


def test_the_admission_tables_fit_the_width_they_are_given(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["admit", str(SAMPLES / "kueue")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any("Workloads" in line for line in lines)
    assert any("ClusterQueues" in line for line in lines)
    assert max(len(line) for line in lines) <= 100

"""Child processes that never outlive their parent: the real components, each with its own log.

Every component runs in a process group of its own, with a parent-death signal (Linux's
``PR_SET_PDEATHSIG``): if the Python process that started it dies, even by SIGKILL, the kernel
kills the child too, so no etcd or kube-apiserver is ever left holding a port. ``stop()`` sends
SIGTERM to the group, waits, then SIGKILL. Output goes to ``LOGDIR/NAME.log``; a process that
exits early is reported with the tail of that log.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

_PR_SET_PDEATHSIG = 1


class ComponentFailed(RuntimeError):
    """A component exited or never became ready; the message holds the tail of its log."""


def _die_with_parent() -> None:  # runs in the child, between fork and exec
    os.setpgid(0, 0)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.strip().splitlines()[-lines:])


@dataclass
class ComponentProcess:
    """One running component: its command, its log and its process."""

    name: str
    command: Sequence[str]
    log_path: Path
    env: dict[str, str] | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> ComponentProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                list(self.command),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                preexec_fn=_die_with_parent,
            )
        return self

    @property
    def pid(self) -> int:
        return self.process.pid if self.process is not None else 0

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise ComponentFailed(
                f"{self.name} exited with code {self.process.returncode}; the end of {self.log_path}:\n"
                f"{log_tail(self.log_path)}"
            )

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM to its process group, then SIGKILL after ``grace`` seconds."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL at once (a crash, for tests of what survives one)."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def wait_until(check: Callable[[], bool], *, timeout: float, what: str, watch: Sequence[ComponentProcess] = ()) -> None:
    """Poll ``check()`` until true; fail early if a watched process dies."""
    deadline = time.monotonic() + timeout
    while True:
        for process in watch:
            process.check_alive()
        if check():
            return
        if time.monotonic() > deadline:
            tails = "".join(f"\n--- {p.name} ({p.log_path}):\n{log_tail(p.log_path)}" for p in watch)
            raise ComponentFailed(f"{what}: not ready after {timeout:.0f} s{tails}")
        time.sleep(0.1)

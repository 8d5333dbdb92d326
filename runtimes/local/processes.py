"""Run a gang of local processes: stream their output, stop them all on the first failure.

Every process gets its own session (process group), so stopping one also stops whatever it
spawned, and a Ctrl-C in the terminal reaches the launcher only: the launcher decides, then
sends SIGTERM to every group, waits a grace period, and SIGKILLs what is left. No process of a
gang outlives :func:`run_gang`, whether it returns, raises, or is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runtimes.local.errors import LocalRunError
from runtimes.local.policy import RankExit, exit_code_of
from runtimes.local.torchrun import ProcessSpec

LineSink = Callable[[ProcessSpec, str], None]

# How long a process's output may keep flowing after it exited (a grandchild holding the pipe).
_DRAIN_SECONDS = 2.0


@dataclass(frozen=True)
class GangOutcome:
    """How a gang ended: every exit observed, and the first failure (None when all succeeded)."""

    exits: tuple[RankExit, ...]
    first_failure: RankExit | None


@dataclass
class _Running:
    spec: ProcessSpec
    process: asyncio.subprocess.Process
    pump: asyncio.Task[None]


async def _pump(running_spec: ProcessSpec, stream: asyncio.StreamReader, sink: LineSink) -> None:
    while True:
        raw = await stream.readline()
        if not raw:
            return
        sink(running_spec, raw.decode(errors="replace").rstrip("\r\n"))


def _signal_group(process: asyncio.subprocess.Process, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


async def stop_processes(processes: Sequence[asyncio.subprocess.Process], grace_seconds: float) -> None:
    """SIGTERM every process group, wait up to ``grace_seconds``, then SIGKILL the groups."""
    for process in processes:
        _signal_group(process, signal.SIGTERM)
    waits = [asyncio.ensure_future(p.wait()) for p in processes]
    if waits:
        _, pending = await asyncio.wait(waits, timeout=grace_seconds)
        for process in processes:
            # Also reaches grandchildren left in the group after the leader exited.
            _signal_group(process, signal.SIGKILL)
        if pending:
            await asyncio.wait(pending)


async def run_gang(
    specs: Sequence[ProcessSpec],
    sink: LineSink,
    replicated_job: str,
    container: str,
    grace_seconds: float = 5.0,
    on_started: Callable[[], None] | None = None,
) -> GangOutcome:
    """Start every process, wait until all succeed or one fails; on failure stop the others."""
    running: list[_Running] = []
    wait_tasks: list[asyncio.Future[int]] = []
    try:
        for spec in specs:
            running.append(await _start(spec, sink))
        if on_started is not None:
            on_started()
        waits: dict[asyncio.Future[int], _Running] = {asyncio.ensure_future(r.process.wait()): r for r in running}
        wait_tasks.extend(waits)
        return await _wait_for_gang(running, waits, replicated_job, container, grace_seconds)
    finally:
        # Reached on success, failure, error and cancellation alike: leave no process and no task.
        await _clean_up(running, wait_tasks, grace_seconds)


async def _start(spec: ProcessSpec, sink: LineSink) -> _Running:
    """One process in its own session (so its whole group can be signalled), its output pumped to ``sink``."""
    try:
        process = await asyncio.create_subprocess_exec(
            *spec.command,
            env=dict(spec.env),
            cwd=spec.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as error:
        raise LocalRunError(f"{spec.label}: cannot start {spec.command[0]!r}: {error}") from None
    assert process.stdout is not None
    pump = asyncio.create_task(_pump(spec, process.stdout, sink), name=f"pump {spec.label}")
    return _Running(spec, process, pump)


async def _wait_for_gang(
    running: list[_Running],
    waits: dict[asyncio.Future[int], _Running],
    replicated_job: str,
    container: str,
    grace_seconds: float,
) -> GangOutcome:
    """Every exit until all succeed or one fails; after a failure the rest are stopped and listed too."""
    exits: list[RankExit] = []
    first_failure: RankExit | None = None
    pending = set(waits)
    while pending and first_failure is None:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        # Within one wake-up, report the failures in start order (stable, deterministic).
        for task in sorted(done, key=lambda t: running.index(waits[t])):
            item = waits[task]
            ended = RankExit(item.spec.label, replicated_job, container, exit_code_of(task.result()))
            exits.append(ended)
            if ended.failed and first_failure is None:
                first_failure = ended
    if pending:
        await stop_processes([waits[t].process for t in pending], grace_seconds)
        for task in pending:
            item = waits[task]
            exits.append(RankExit(item.spec.label, replicated_job, container, exit_code_of(task.result())))
    return GangOutcome(tuple(exits), first_failure)


async def _clean_up(running: list[_Running], wait_tasks: list[asyncio.Future[int]], grace_seconds: float) -> None:
    """Stop what still runs (its whole process group), then await every wait and pump task."""
    alive = [r.process for r in running if r.process.returncode is None]
    if alive:
        await stop_processes(alive, grace_seconds)
    for item in running:
        _signal_group(item.process, signal.SIGKILL)
    if wait_tasks:
        await asyncio.gather(*wait_tasks, return_exceptions=True)
    pumps = [r.pump for r in running]
    if pumps:
        _, stuck = await asyncio.wait(pumps, timeout=_DRAIN_SECONDS)
        for stuck_pump in stuck:
            stuck_pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)

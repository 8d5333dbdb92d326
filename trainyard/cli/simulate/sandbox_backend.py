"""`trainyard simulate --backend sandbox`: a scenario through the whole service, beside the simulator.

The scenario's cluster is loaded into a ``Sandbox`` (the sandbox API server on loopback HTTPS,
trainyard's admission webhook registered with it, trainyard's controllers and the stand-ins for
JobSet, Job, the binder and the kubelet). Every job is created as a TrainJob over the API;
``sandbox.compare.driver`` plays the scenario in lockstep virtual time (or paced on
a sped-up wall clock) and plays KWOK's pod stages; the embedded simulator runs the same
scenario; both are printed side by side with the share of jobs on which they decided the same.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainyard.cli.errors import UserError

if TYPE_CHECKING:
    from sandbox.compare.records import RunRecord
    from scheduler.controllers.workqueue import WorkQueue
    from simulations.scenarios import BuiltScenario

# The lockstep driver waits for quiescence before time moves on, so the controllers' debounce
# (which gathers a burst of changes into one cycle) only costs wall time here: keep it short.
LOCKSTEP_DEBOUNCE = 0.002
LOCKSTEP_BATCH = 0.002


async def run_sandbox(
    built: BuiltScenario,
    seed: int = 1,
    *,
    speedup: float | None = None,
    webhook: bool = True,
    progress: Callable[[int, int, float], None] | None = None,
) -> RunRecord:
    """The scenario through a fresh ``Sandbox``: webhook, controllers, stand-ins and the driver.

    ``speedup`` None: lockstep virtual time. N: virtual time runs N times faster than the wall
    clock and the controllers keep their own debounce, so arrivals closer than it share a cycle.
    The driver plays KWOK's pod stages itself (in virtual time), so the sandbox's own are off.
    """
    from sandbox.compare.driver import LockstepRun
    from sandbox.embedded import Sandbox

    async with Sandbox(built.scenario, webhook=webhook, kwok=False, heartbeat_seconds=None, seed=seed) as sandbox:
        replica = sandbox.controllers
        assert replica is not None
        await replica.service.manager.leading.wait()
        queue = replica.service.queue.queue
        standins = await sandbox.cluster.start_standins()
        if speedup is None:
            queue.debounce = LOCKSTEP_DEBOUNCE
            queue.min_interval = LOCKSTEP_DEBOUNCE
            for standin in (standins.jobset, standins.job):
                if standin is not None:
                    standin.batch_seconds = LOCKSTEP_BATCH

        def queues() -> Iterable[WorkQueue[Any]]:
            return [c.queue for c in (*replica.service.manager.controllers, *standins.controllers)]

        driver = LockstepRun(built, sandbox.client(), sandbox.server, queues, seed, speedup=speedup, progress=progress)
        record = await driver.run()
        record.cycles = queue.cycles
        return record


def compare_backends(
    built: BuiltScenario, seed: int = 1, *, speedup: float | None = None, webhook: bool = True
) -> dict[str, Any]:
    """Both runs of one (comparable) scenario and their comparison, as one JSON-ready dict."""
    from sandbox.compare.comparison import compare, side_by_side, simulate_recorded

    _, simulated = simulate_recorded(built, seed)
    sandboxed = asyncio.run(run_sandbox(built, seed, speedup=speedup, webhook=webhook))
    jobs = sorted(set(simulated.decisions) | set(sandboxed.decisions) | set(simulated.jobs) | set(sandboxed.jobs))
    comparison = compare(simulated, sandboxed, jobs, with_time=speedup is None)
    return {
        "scenario": built.scenario.name,
        "seed": seed,
        "clock": "lockstep virtual time" if speedup is None else f"wall clock sped up {speedup:g}x",
        "nodes": len(built.nodes),
        "comparison": comparison.to_dict(),
        "simulator": {"wall_seconds": round(simulated.wall_seconds, 2), "cycles": simulated.cycles},
        "sandbox": {
            "wall_seconds": round(sandboxed.wall_seconds, 2),
            "api_requests": sandboxed.api_requests,
            "cycles": sandboxed.cycles,
        },
        "metrics": [
            {"metric": m, "simulator": a, "sandbox": b}
            for m, a, b in side_by_side(simulated.summary, sandboxed.summary)
        ],
    }


def run(args: argparse.Namespace) -> int:
    """The `--backend sandbox` branch of `trainyard simulate`."""
    from sandbox.compare.comparison import comparable
    from simulations.errors import SimulationInputError
    from simulations.scenarios import build, resolve_scenario, with_trace

    if args.speedup <= 0:
        raise UserError(f"--speedup: must be greater than 0, got {args.speedup:g}")
    if args.compare:
        raise UserError("--backend sandbox runs one scenario beside the simulator; drop --compare")
    try:
        scenario = resolve_scenario(args.scenario)
        if args.trace is not None:
            scenario = with_trace(scenario, args.trace)
        built = build(comparable(scenario))
    except SimulationInputError as error:
        raise UserError(str(error)) from None
    started = time.perf_counter()
    speedup = None if args.speedup == 1.0 else args.speedup
    report = compare_backends(built, args.seed, speedup=speedup)
    report["wall_seconds"] = round(time.perf_counter() - started, 2)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    # lockstep must agree on every decision; a paced run reports how far batching took it
    return 0 if speedup is not None or report["comparison"]["decisions_equal_pct"] == 100.0 else 1


def _print(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    comparison = report["comparison"]
    table = Table(
        title=f"{report['scenario']}: embedded simulator vs the service in a sandbox "
        f"({report['clock']}, seed {report['seed']})"
    )
    table.add_column("metric")
    table.add_column("simulator", justify="right")
    table.add_column("sandbox", justify="right")
    for row in report["metrics"]:
        table.add_row(row["metric"], _text(row["simulator"]), _text(row["sandbox"]))
    table.add_row("wall seconds", _text(report["simulator"]["wall_seconds"]), _text(report["sandbox"]["wall_seconds"]))
    table.add_row("admission cycles", _text(report["simulator"]["cycles"]), _text(report["sandbox"]["cycles"]))
    console.print(table)
    console.print(
        f"decisions equal on {comparison['decisions_equal']}/{comparison['jobs']} jobs "
        f"([bold]{comparison['decisions_equal_pct']}%[/]); admission order equal at "
        f"{comparison['admission_order_equal_pct']}% of positions; "
        f"{report['sandbox']['api_requests']} API requests"
    )
    first = comparison["first_difference"]
    if first is not None:
        console.print(f"first difference: job {first['job']}")
        console.print(f"  simulator: {'; '.join(first['simulator']) or 'no decision'}")
        console.print(f"  sandbox:   {'; '.join(first['sandbox']) or 'no decision'}")
        console.print(why_they_differ(report), highlight=False)


def why_they_differ(report: dict[str, Any]) -> str:
    """Why a run's decisions can differ from the simulator's: batching into cycles, or clock skew."""
    comparison = report["comparison"]
    cycles = (report["simulator"]["cycles"], report["sandbox"]["cycles"])
    skew = comparison.get("admission_time_skew_seconds") or {}
    if report["clock"].startswith("lockstep"):
        return (
            "in lockstep every instant gets its own admission cycle, as in the simulator: a difference here is "
            "a disagreement between the service and the simulator, not timing"
        )
    return (
        f"why: on a sped-up wall clock, arrivals closer than the controller's debounce share one admission cycle "
        f"(simulator {cycles[0]} cycles, sandbox {cycles[1]}), so a job can be tried beside or before another it "
        f"followed in the simulator; and decisions are stamped at the wall clock's reading "
        f"(admission time skew mean {skew.get('mean', '-')} s, max {skew.get('max', '-')} s of virtual time)"
    )


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


# ------------------------------------------------------------------ --backend kwok --controllers trainyard


class ControllersThread:
    """trainyard's controller service against a kubeconfig, on its own event loop in a thread.

    ``simulations.kwok.cluster_run.run_on_kwok`` owns the main thread's loop (it submits the
    TrainJobs and reads the Workloads); the controllers run beside it as an installed
    ``trainyard serve controller`` would, with no leader election (do not run this beside an
    installed trainyard controller: both would admit).
    """

    def __init__(self, kubeconfig: Path, *, launcher_mode: str = "jobset", fair_sharing: bool = False) -> None:
        self.kubeconfig = kubeconfig
        self.launcher_mode = launcher_mode
        self.fair_sharing = fair_sharing
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="trainyard-controllers", daemon=True)

    def start(self, timeout: float = 60.0) -> None:
        """Start, and wait until the controllers lead (their informers listed everything once)."""
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"trainyard's controllers did not start within {timeout:g}s")
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30.0)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # handed to the starting thread; this one just ends
            self.error = error
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        from scheduler.controllers.service import build_controller_service
        from scheduler.engine import EngineConfig
        from scheduler.kube import KubeClient, close_api_client, load_api_client

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        api_client = await load_api_client(self.kubeconfig)
        try:
            service = build_controller_service(
                KubeClient(api_client),
                launcher_mode="trainer" if self.launcher_mode == "trainer" else "jobset",
                leader_elect=False,
                config=EngineConfig(fair_sharing=self.fair_sharing),
            )
            task = asyncio.create_task(service.manager.run(), name="trainyard-controllers")
            leading = asyncio.create_task(service.manager.leading.wait())
            await asyncio.wait([task, leading], return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                leading.cancel()
                task.result()  # it ended before leading: raise what ended it
            self._ready.set()
            await self._stop.wait()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        finally:
            await close_api_client(api_client)


def run_kwok_trainyard(
    built: BuiltScenario, kubeconfig: Path, *, seed: int = 1, timeout: float = 3600.0, speedup: float = 1.0
) -> dict[str, Any]:
    """``run_on_kwok`` with trainyard's own controllers admitting and launching, instead of Kueue's."""
    from simulations.kwok.cluster_run import run_on_kwok

    controllers = ControllersThread(kubeconfig, fair_sharing=built.scenario.fair_sharing)
    controllers.start()
    try:
        summary = run_on_kwok(built, kubeconfig, seed=seed, timeout=timeout, speedup=speedup)
    finally:
        controllers.stop()
    summary["controllers"] = "trainyard"
    return summary


def run_kwok(args: argparse.Namespace) -> int:
    """`trainyard simulate --backend kwok --controllers trainyard --kubeconfig PATH`."""
    import yaml
    from aiohttp import ClientError

    from scheduler.kube.errors import KubeApiError, KubeConfigError
    from simulations.errors import SimulationInputError
    from simulations.scenarios import build, resolve_scenario, with_trace

    if args.kubeconfig is None:
        raise UserError("--backend kwok needs --kubeconfig PATH (the KWOK cluster's kubeconfig)")
    if args.speedup <= 0:
        raise UserError(f"--speedup: must be greater than 0, got {args.speedup:g}")
    if args.compare:
        raise UserError("--backend kwok runs one scenario; drop --compare")
    try:
        scenario = resolve_scenario(args.scenario)
        if args.trace is not None:
            scenario = with_trace(scenario, args.trace)
        built = build(scenario)
    except SimulationInputError as error:
        raise UserError(str(error)) from None
    try:
        summary = run_kwok_trainyard(built, args.kubeconfig, seed=args.seed, timeout=args.timeout, speedup=args.speedup)
    except KubeConfigError as error:
        raise UserError(f"--kubeconfig: {error}") from None
    except yaml.YAMLError as error:
        raise UserError(f"--kubeconfig {args.kubeconfig}: not a kubeconfig (YAML): {error}") from None
    except (ClientError, OSError, KubeApiError) as error:
        raise UserError(f"--kubeconfig {args.kubeconfig}: cannot reach the KWOK cluster: {error}") from None
    print(json.dumps(summary, indent=2))
    return 0

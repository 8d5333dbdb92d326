"""What `trainyard serve` runs against a cluster: the webhook's informers and the controller service.

Each owns its own API connection (``load_api_client``: a kubeconfig or the Pod's service
account), starts as a task that stops the whole service when it ends, and reports how it ended
as an exit code. Heavy imports (kubernetes-asyncio, the controllers) happen in ``connect``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.cli.errors import UserError

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient
    from prometheus_client import CollectorRegistry

    from scheduler.controllers.admission_check.beside_kueue import BesideKueueService
    from scheduler.controllers.service import ControllerService
    from scheduler.kube import InformerGroup, KubeClient
    from webhooks.objects import ObjectCache


async def _stop_task(task: asyncio.Task[None] | None) -> None:
    if task is not None and not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _exit_code(task: asyncio.Task[None] | None, what: str) -> int:
    if task is None or not task.done() or task.cancelled():
        return 0
    error = task.exception()
    if error is None:
        return 0
    print(f"trainyard serve: {what} stopped: {error!r}", file=sys.stderr)
    return 1


class ClusterFeed:
    """Informers for every kind the webhook caches, from a kubeconfig or the in-cluster config."""

    def __init__(self, api_client: ApiClient, group: InformerGroup, source: str) -> None:
        self.api_client = api_client
        self.group = group
        self.source = source
        self.task: asyncio.Task[None] | None = None
        self.synced_task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, kubeconfig: Path | None, context: str | None, cache: ObjectCache) -> ClusterFeed:
        from scheduler.kube import InformerGroup, KubeClient, KubeConfigError, load_api_client
        from webhooks.objects import CACHED_KINDS

        try:
            api_client = await load_api_client(kubeconfig, context=context)
        except KubeConfigError as error:
            raise UserError(str(error)) from None
        kinds = [*CACHED_KINDS, "Namespace"]
        group = InformerGroup(KubeClient(api_client), kinds, cache)
        source = str(kubeconfig) if kubeconfig is not None else "the in-cluster service account"
        print(f"trainyard serve: watching {', '.join(kinds)} through {source}", file=sys.stderr)
        return cls(api_client, group, source)

    def start(self, stop: asyncio.Event) -> None:
        self.task = asyncio.create_task(self.group.run(), name="webhook-informers")
        # The informers retry every API error themselves; if they stop anyway, so does the service.
        self.task.add_done_callback(lambda task: stop.set())

        async def report_synced() -> None:
            await self.group.synced.wait()
            print(f"trainyard serve: cache synced from {self.source}; ready", file=sys.stderr)

        self.synced_task = asyncio.create_task(report_synced(), name="webhook-informers-synced")

    def exit_code(self) -> int:
        return _exit_code(self.task, "the cluster informers")

    async def close(self) -> None:
        for task in (self.task, self.synced_task):
            await _stop_task(task)
        from scheduler.kube import close_api_client

        await close_api_client(self.api_client)


class Controllers:
    """The controller service (queue controller, launcher, ungater; beside Kueue the topology
    check in the queue controller's place) on its own API connection."""

    def __init__(self, api_client: ApiClient, service: ControllerService | BesideKueueService, source: str) -> None:
        self.api_client = api_client
        self.service = service
        self.source = source
        self.task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, args: argparse.Namespace, registry: CollectorRegistry) -> Controllers:
        from scheduler.kube import KubeClient, KubeConfigError, load_api_client, running_in_cluster

        if args.kubeconfig is None and not running_in_cluster():
            raise UserError("the controllers need a cluster: pass --kubeconfig PATH (or run in a Pod)")
        if args.wait_for_pods_ready is not None and args.wait_for_pods_ready <= 0:
            raise UserError(f"--wait-for-pods-ready {args.wait_for_pods_ready:g} must be a positive number of seconds")
        try:
            api_client = await load_api_client(args.kubeconfig, context=args.context)
        except KubeConfigError as error:
            raise UserError(str(error)) from None
        service = _build_service(args, KubeClient(api_client), registry)
        source = str(args.kubeconfig) if args.kubeconfig is not None else "the in-cluster service account"
        leader = service.leader
        election = (
            f"leader election on Lease {leader.namespace}/{leader.name} as {leader.identity}"
            if leader is not None
            else "no leader election"
        )
        what = "topology admission check beside Kueue" if args.mode == "admission-check" else "queue controller"
        print(
            f"trainyard serve: controllers ({what}, launcher {args.launcher}) through {source}, {election}",
            file=sys.stderr,
        )
        return cls(api_client, service, source)

    def start(self, stop: asyncio.Event) -> None:
        self.task = asyncio.create_task(self.service.manager.run(), name="controllers")
        self.task.add_done_callback(lambda task: stop.set())

    def exit_code(self) -> int:
        return _exit_code(self.task, "the controllers")

    async def close(self) -> None:
        await _stop_task(self.task)
        from scheduler.kube import close_api_client

        await close_api_client(self.api_client)


def _build_service(
    args: argparse.Namespace, client: KubeClient, registry: CollectorRegistry
) -> ControllerService | BesideKueueService:
    """The standalone service, or beside Kueue (``--mode admission-check``) the topology check's."""
    from scheduler.engine import EngineConfig, WaitForPodsReady

    if args.mode == "admission-check":
        from scheduler.controllers.admission_check.beside_kueue import CheckSettings, build_beside_kueue_service

        return build_beside_kueue_service(
            client,
            leader_elect=args.leader_elect,
            lease_namespace=args.lease_namespace,
            identity=args.identity,
            settings=CheckSettings(retry_base_seconds=args.check_retry_seconds),
        )
    from scheduler.controllers.service import build_controller_service

    wait = WaitForPodsReady(timeout_seconds=args.wait_for_pods_ready) if args.wait_for_pods_ready else None
    return build_controller_service(
        client,
        launcher_mode=args.launcher,
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        identity=args.identity,
        config=EngineConfig(wait_for_pods_ready=wait),
        registry=registry,
    )


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop`` (a graceful shutdown) while the block runs."""
    import signal

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        yield
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)

"""``Standins``: the JobSet and Job controllers, the binder, the pod runner, the service-account
controller and the coscheduling plugin's PodGroup status on one client and one cache.

    async with Standins(client) as standins:   # starts the informers and the four controllers
        await standins.synced()                 # optional: every kind listed once
        ...
    # leaving the block (or ``await standins.stop()``) cancels and awaits every task

Each part can be left out (``jobset=False`` ...) when the cluster has the real thing. They run
on trainyard's own controller framework (``scheduler.controllers``): informers feed one
``ClusterCache``, and each stand-in is a ``Reconciler`` worked by a ``Controller``. There is no
leader election, so they are started directly, each informer and controller its own task.
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.runtime import Controller
from scheduler.kube import Informer, InformerSettings, KubeClient
from scheduler.kube.backoff import Backoff

from .binder import Binder
from .job import JobController
from .jobset import JobSetController
from .podgroups import PodGroupStatusController
from .runner import PodRunner
from .service_accounts import ServiceAccountController

log = logging.getLogger(__name__)

StandinController = (
    JobSetController | JobController | Binder | PodRunner | ServiceAccountController | PodGroupStatusController
)


def fast_informers() -> InformerSettings:
    """Informer settings for a local server: short watches, quick retries."""
    return InformerSettings(
        watch_timeout_seconds=60, inactivity_timeout=70.0, backoff=Backoff(initial=0.02, maximum=1.0)
    )


class Standins:
    def __init__(
        self,
        client: KubeClient,
        *,
        jobset: bool = True,
        job: bool = True,
        binder: bool = True,
        runner: bool = True,
        service_accounts: bool = True,
        podgroups: bool = True,
        start_seconds: float = 0.0,
        run_seconds: float = 1.0,
        informer_settings: InformerSettings | None = None,
    ) -> None:
        self.client = client
        kinds = ["Node", "Pod"] + (["Job"] if jobset or job else []) + (["JobSet"] if jobset else [])
        kinds += ["Namespace", "ServiceAccount"] if service_accounts else []
        kinds += ["PodGroup"] if podgroups else []
        self.cache = ClusterCache()
        settings = informer_settings or fast_informers()
        self.informers = [Informer(client, kind, self.cache, settings=settings) for kind in kinds]
        self.jobset = JobSetController(client, self.cache) if jobset else None
        self.job = JobController(client, self.cache) if job else None
        self.binder = Binder(client, self.cache) if binder else None
        self.runner = (
            PodRunner(client, self.cache, start_seconds=start_seconds, run_seconds=run_seconds) if runner else None
        )
        self.service_accounts = ServiceAccountController(client, self.cache) if service_accounts else None
        self.podgroups = PodGroupStatusController(client, self.cache) if podgroups else None
        found: list[StandinController | None] = [
            self.jobset,
            self.job,
            self.binder,
            self.runner,
            self.service_accounts,
            self.podgroups,
        ]
        self.controllers = [Controller(r, workers=r.workers, queue=r.queue) for r in found if r is not None]
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        """Start the informers and the controllers' workers, each its own task."""
        if self._tasks:
            raise RuntimeError("the stand-ins are already running")
        loop = asyncio.get_running_loop()
        for informer in self.informers:
            self._tasks.append(loop.create_task(informer.run(), name=f"standins-informer-{informer.kind.kind}"))
        for controller in self.controllers:
            self._tasks.append(loop.create_task(controller.run(), name=f"standins-{controller.name}"))

    async def synced(self, timeout: float = 30.0) -> None:
        """Wait until every watched kind has been listed once (raises TimeoutError)."""
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(informer.synced.wait() for informer in self.informers))

    async def stop(self) -> None:
        """Cancel every task and wait for it to end.

        Cancellation is repeated until each task is done: on Python 3.11 ``asyncio.wait_for`` can
        swallow a cancellation that arrives as its inner call finishes (fixed in 3.12); code that
        still uses it somewhere below must not leave a plain ``cancel(); await`` waiting for ever.
        """
        tasks, self._tasks = self._tasks, []
        for controller in self.controllers:
            controller.queue.shutdown()  # no timer fires after this; idle workers return
        while True:
            pending = [t for t in tasks if not t.done()]
            if not pending:
                break
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=0.5)
        for task in tasks:
            if not task.cancelled() and task.exception() is not None:
                log.error("stand-in task %s ended with %r", task.get_name(), task.exception())

    async def __aenter__(self) -> Standins:
        self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.stop()

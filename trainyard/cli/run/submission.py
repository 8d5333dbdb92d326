"""`trainyard run TRAINJOB.yaml --kubeconfig PATH`: submit a TrainJob to a cluster and follow it.

The TrainJob is created as written: the cluster's admission webhooks default it (trainyard's puts
it in the namespace's default LocalQueue and suspends it) or refuse it, and a refusal is printed
in the webhook's own words. Unless ``--no-wait``, the job is then followed until it finishes,
each change printed as the API server serves it: its Workload (named as Kueue names a job's
Workload, so Kueue's own controller is followed the same way) pending with the controller's
reason and position, admitted by a ClusterQueue with its flavors and placement, evicted or
preempted and why; and the TrainJob's own phase. Nothing here decides anything.

Stopping the follow (Ctrl-C, or ``--timeout``) leaves the job running on the cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtimes.api.kueue_labels import QUEUE_NAME_LABEL
from scheduler.kube import InformerGroup, KubeApiError, KubeClient, close_api_client, load_api_client
from scheduler.trainjob import TRAINJOB_KIND
from trainyard.cli.errors import UserError
from trainyard.cli.progress import condition, nodes_in_words, placement, trainjob_phase, workload_phase

TIMED_OUT = 124  # as timeout(1): the job goes on, the follow stopped
Echo = Callable[[str], None]


@dataclass(frozen=True)
class Submission:
    document: dict[str, Any]  # the TrainJob as written in the file
    where: str  # file:line, for messages
    kubeconfig: Path
    context: str | None
    namespace: str


def submit(submission: Submission, *, wait: bool, timeout: float | None, echo: Echo) -> int:
    """Create the TrainJob; follow it when ``wait``. The exit code: 0 Complete, 1 Failed, 124 timed out."""
    return asyncio.run(_submit(submission, wait=wait, timeout=timeout, echo=echo))


async def _submit(submission: Submission, *, wait: bool, timeout: float | None, echo: Echo) -> int:
    try:
        api = await load_api_client(submission.kubeconfig, context=submission.context)
    except Exception as error:  # a kubeconfig that cannot be read or names no usable cluster
        raise UserError(f"{submission.kubeconfig}: cannot use this kubeconfig: {error}") from None
    try:
        client = KubeClient(api)
        if not wait:
            _created_line(await _create(client, submission), echo)
            return 0
        name = str((submission.document.get("metadata") or {}).get("name"))
        # Watching starts before the create, so no step of a fast job is missed.
        async with JobWatch(client, submission.namespace, name, echo) as watch:
            created = await _create(client, submission)
            _created_line(created, echo)
            watch.follow(str(created["metadata"].get("uid") or ""))
            return await watch.finished(timeout)
    finally:
        await close_api_client(api)


def _created_line(created: Mapping[str, Any], echo: Echo) -> None:
    metadata = created["metadata"]
    queue = (metadata.get("labels") or {}).get(QUEUE_NAME_LABEL)
    held = " (suspended until admitted)" if (created.get("spec") or {}).get("suspend") else ""
    echo(f"TrainJob {metadata['namespace']}/{metadata['name']} created in queue {queue or '(none)'}{held}")


async def _create(client: KubeClient, submission: Submission) -> dict[str, Any]:
    document = submission.document
    name = (document.get("metadata") or {}).get("name")
    try:
        return await client.create(document, namespace=submission.namespace)
    except KubeApiError as error:
        subject = f"TrainJob {submission.namespace}/{name}"
        if error.status == 409:
            raise UserError(
                f"{submission.where}: {subject} already exists on the cluster; delete it first "
                f"(kubectl delete trainjob {name} -n {submission.namespace}) or give this one another metadata.name"
            ) from None
        if error.status in (400, 403, 422):
            raise UserError(f"{submission.where}: the cluster refused {subject}: {error.message}") from None
        if error.status == 404:
            raise UserError(
                f"{submission.where}: the cluster has no TrainJob kind or no namespace {submission.namespace!r} "
                f"({error.message}); install Kubeflow Trainer's CRDs (or trainyard's, manifests/crds) and "
                "create the namespace"
            ) from None
        raise UserError(f"{submission.where}: creating {subject} failed: {error}") from None
    except OSError as error:
        raise UserError(f"cannot reach the cluster of {submission.kubeconfig}: {error}") from None


class JobWatch:
    """Informers on the namespace's TrainJobs and Workloads (list, then watch, as kubectl get -w),
    printing every change of the one job's state as the server delivers it."""

    def __init__(
        self, client: KubeClient, namespace: str, name: str, echo: Echo, *, sync_timeout: float = 30.0
    ) -> None:
        self.namespace, self.name, self.echo = namespace, name, echo
        self.sync_timeout = sync_timeout
        self.uid: str | None = None  # of the TrainJob we created: an older namesake is not ours
        self._informers = InformerGroup(client, ("TrainJob", "Workload"), self, namespace=namespace)
        self._task: asyncio.Task[None] | None = None
        self._said: dict[str, str] = {}
        self._seen: dict[str, dict[str, Any]] = {}  # our objects, delivered before we knew the uid
        self._phase: str | None = None
        self._done = asyncio.Event()
        self._started = time.monotonic()

    async def __aenter__(self) -> JobWatch:
        self._task = asyncio.create_task(self._informers.run())
        try:
            async with asyncio.timeout(self.sync_timeout):
                await self._informers.synced.wait()
        except TimeoutError:
            await self.__aexit__()
            raise UserError(
                f"cannot list and watch TrainJobs and Workloads in namespace {self.namespace!r} "
                f"within {self.sync_timeout:g} s: "
                "check that this kubeconfig's user may (kubectl auth can-i watch workloads.kueue.x-k8s.io "
                f"-n {self.namespace}) and that the cluster has Trainer's and Kueue's CRDs; --no-wait only creates"
            ) from None
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def follow(self, uid: str) -> None:
        self.uid = uid
        for document in list(self._seen.values()):
            self.apply(document)

    async def finished(self, timeout: float | None) -> int:
        """0 once the TrainJob is Complete, 1 Failed or deleted, 124 if ``timeout`` passes first."""
        try:
            async with asyncio.timeout(timeout):
                await self._done.wait()
        except TimeoutError:
            self.echo(
                f"still {self._phase or 'Suspended'} after {timeout:g} s; it goes on on the cluster "
                f"(kubectl get trainjob {self.name} -n {self.namespace})"
            )
            return TIMED_OUT
        return 0 if self._phase == "Complete" else 1

    # ------------------------------------------------------------------ the informers' sink

    def apply(self, document: dict[str, Any]) -> None:
        kind = str(document.get("kind"))
        metadata = document.get("metadata") or {}
        if kind == "TrainJob" and metadata.get("name") == self.name:
            self._seen[kind] = document
            if self.uid is not None and metadata.get("uid") == self.uid:
                self._phase = trainjob_phase(document)
                self._say(kind, trainjob_line(document))
                if self._phase in ("Complete", "Failed"):
                    self._done.set()
        elif kind == "Workload":
            owners = _trainjob_owners(document)
            if self.uid is not None and any(owner.get("uid") == self.uid for owner in owners):
                self._say(kind, workload_line(document))
            elif self.uid is None and any(owner.get("name") == self.name for owner in owners):
                self._seen[kind] = document

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        if kind == "TrainJob" and name == self.name and self.uid is not None:
            self.echo(f"TrainJob {self.namespace}/{self.name} was deleted")
            self._phase = "Deleted"
            self._done.set()

    def mark_loaded(self) -> None:
        return

    def _say(self, subject: str, line: str) -> None:
        if self._said.get(subject) != line:
            self._said[subject] = line
            self.echo(f"[{time.monotonic() - self._started:6.1f}s] {subject}: {line}")


def _trainjob_owners(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The TrainJob owner references of a Workload (Kueue's job integration sets one)."""
    references = (document.get("metadata") or {}).get("ownerReferences") or []
    return [reference for reference in references if reference.get("kind") == TRAINJOB_KIND]


def workload_line(workload: Mapping[str, Any]) -> str:
    """The Workload's phase in words, with the condition that explains it."""
    name = workload["metadata"]["name"]
    phase = workload_phase(workload)
    if phase == "Pending":
        return f"{name} pending: {_message(workload, 'QuotaReserved')}"
    if phase in ("Admitted", "QuotaReserved"):
        admission = (workload.get("status") or {}).get("admission") or {}
        flavor, nodes = placement(workload)
        where = f", nodes {nodes_in_words(nodes)}" if nodes else ""
        return f"{name} {phase.lower()} by ClusterQueue {admission.get('clusterQueue', '?')}: flavor {flavor}{where}"
    if phase == "Preempted":
        return f"{name} preempted: {_message(workload, 'Preempted')}"
    if phase.startswith("Evicted"):
        return f"{name} evicted: {_message(workload, 'Evicted')}"
    return f"{name} {phase.lower()}"


def trainjob_line(trainjob: Mapping[str, Any]) -> str:
    phase = trainjob_phase(trainjob)
    if phase in ("Complete", "Failed"):
        return f"{phase}: {_message(trainjob, phase)}"
    return phase


def _message(document: Mapping[str, Any], kind: str) -> str:
    found = condition(document, kind) or {}
    reason, message = found.get("reason"), found.get("message")
    return " ".join(part for part in (f"({reason})" if reason else "", message or "") if part) or "no reason given"

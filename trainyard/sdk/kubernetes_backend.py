"""The SDK's Kubernetes backend: ``TrainerClient(KubernetesBackendConfig(...))`` submits TrainJobs
to a cluster, as kubeflow's ``KubernetesBackend`` does.

It lives in ``trainyard`` (not ``runtimes.sdk``) because it talks to the API server through
``scheduler.kube.KubeClient`` and ``runtimes`` never imports ``scheduler``. The SDK is synchronous
like kubeflow's; the backend runs its own asyncio loop in a daemon thread and waits on it, so it
works the same from a script and from a notebook whose loop is already running.

- runtimes: ClusterTrainingRuntimes with the ``trainer.kubeflow.org/framework`` label;
- ``train``: the very TrainJob ``runtimes.sdk.trainjobs.build_trainjob`` builds (a CustomTrainer's
  function travels inside the trainer command, written to a file by ``bash -c``), with the
  ``kueue.x-k8s.io/queue-name`` label when a queue is configured;
- status from the TrainJob's conditions, steps from its pods (label
  ``jobset.sigs.k8s.io/jobset-name``), logs from ``pods/{name}/log``; a pod on a simulated node
  (KWOK's ``kwok.x-k8s.io/node: fake``) has no container and no log, on a real KWOK cluster as in
  the sandbox, so its step yields one line that says so instead of an error.

The backend closes its connections and its loop when ``close()`` is called, when the client is
used as a context manager, and otherwise when it is garbage collected or the interpreter exits
(so a script that forgets ``close()`` leaves no "Unclosed client session" behind).
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
import threading
import weakref
from collections.abc import AsyncGenerator, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import aiohttp
from kubernetes_asyncio.client import ApiClient

from runtimes.api.kueue_labels import QUEUE_NAME_LABEL
from runtimes.api.trainer import FRAMEWORK_LABEL
from runtimes.sdk.backend import wait_for_status
from runtimes.sdk.trainjobs import build_trainjob, entrypoint_source, new_job_name
from runtimes.sdk.types import BuiltinTrainer, CustomTrainer, Initializer, Runtime, TrainJob
from scheduler.kube import KubeApiError, KubeClient, KubeError, close_api_client, load_api_client
from trainyard.sdk.views import job_view, runtime_view

T = TypeVar("T")

DEFAULT_RUNTIME = "torch-distributed"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
# Where a CustomTrainer's function is written inside the trainer container (a writable place
# even under a read-only root filesystem).
SCRIPT_DIR = PurePosixPath("/tmp/trainyard")
# The annotation KWOK manages fake Nodes by (its --manage-nodes-with-annotation-selector).
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NO_LOGS = "no logs found for container"  # how KWOK's kubelet answers a pod it keeps no logs for


@dataclass
class KubernetesBackendConfig:
    """Where the cluster is: ``kubeconfig`` (default: the in-cluster service account),
    ``context`` (default: the kubeconfig's current one), the ``namespace`` jobs live in, and the
    LocalQueue every submitted TrainJob is labelled for (``queue_name``; None leaves it to the
    namespace's default LocalQueue, which trainyard's webhook fills in)."""

    kubeconfig: Path | str | None = None
    context: str | None = None
    namespace: str = "default"
    queue_name: str | None = None
    request_timeout: float = 30.0

    def build_backend(self) -> KubernetesBackend:
        return KubernetesBackend(self)


def trainer_command(launcher: list[str], script: PurePosixPath, source: str) -> list[str]:
    """``bash -c`` that writes ``source`` to ``script`` and execs ``launcher script`` (the way
    kubeflow's SDK ships a function: no image build, no ConfigMap)."""
    marker = f"TRAINYARD_EOF_{secrets.token_hex(4)}"
    while marker in source:
        marker = f"TRAINYARD_EOF_{secrets.token_hex(4)}"
    script_text = (
        f"mkdir -p {shlex.quote(str(script.parent))}\n"
        f"cat > {shlex.quote(str(script))} <<'{marker}'\n{source}\n{marker}\n"
        f"exec {shlex.join([*launcher, str(script)])}\n"
    )
    return ["bash", "-c", script_text]


class _LoopThread:
    """The backend's loop, its thread and its API client: what closing releases. Kept apart from
    the backend so that a finalizer can close them without keeping the backend alive."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="trainyard-sdk-kube", daemon=True)
        self.thread.start()
        self.api_client: ApiClient | None = None
        self.closed = False

    def close(self) -> None:
        if self.closed or threading.current_thread() is self.thread:
            return  # a finalizer run on the loop's own thread cannot wait for that loop
        self.closed = True
        if self.api_client is not None:
            asyncio.run_coroutine_threadsafe(close_api_client(self.api_client), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class KubernetesBackend:
    """``runtimes.sdk.backend.TrainingBackend`` over the Kubernetes API. ``close()`` (or
    ``trainyard.sdk.TrainerClient`` as a context manager) stops its loop and connections; a
    backend left open is closed when collected or at interpreter exit."""

    def __init__(self, config: KubernetesBackendConfig | None = None) -> None:
        self.config = config or KubernetesBackendConfig()
        self.namespace = self.config.namespace
        self._resources = _LoopThread()
        self._loop = self._resources.loop
        # weakref.finalize also runs at interpreter exit (before daemon threads are stopped)
        self._finalizer = weakref.finalize(self, self._resources.close)
        self._client: KubeClient | None = None

    @property
    def _closed(self) -> bool:
        return self._resources.closed

    @property
    def _api_client(self) -> ApiClient | None:
        return self._resources.api_client

    # ------------------------------------------------------------------ plumbing

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coroutine.close()
            raise RuntimeError("this Kubernetes backend is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _kube(self) -> KubeClient:
        if self._client is None:
            kubeconfig = Path(self.config.kubeconfig).expanduser() if self.config.kubeconfig is not None else None
            try:
                self._resources.api_client = await load_api_client(kubeconfig, context=self.config.context)
            except KubeError as error:
                raise ValueError(str(error)) from None
            self._client = KubeClient(self._resources.api_client, request_timeout=self.config.request_timeout)
        return self._client

    def close(self) -> None:
        self._finalizer()

    def _failure(self, doing: str, error: KubeApiError) -> Exception:
        if error.status == 404:
            return ValueError(f"{doing}: not found in namespace {self.namespace!r} ({error.message})")
        return RuntimeError(f"{doing} failed: {error}")

    # ------------------------------------------------------------------ runtimes

    async def _runtime_documents(self) -> list[dict[str, Any]]:
        kube = await self._kube()
        try:
            listed = await kube.list("ClusterTrainingRuntime", label_selector=FRAMEWORK_LABEL)
        except KubeApiError as error:
            raise self._failure("listing ClusterTrainingRuntimes", error) from None
        return listed.items

    def list_runtimes(self) -> list[Runtime]:
        return [runtime_view(d) for d in self._run(self._runtime_documents())]

    async def _runtime_document(self, name: str) -> dict[str, Any]:
        kube = await self._kube()
        try:
            document = await kube.get("ClusterTrainingRuntime", name)
        except KubeApiError as error:
            if error.status == 404:
                known = ", ".join(sorted(d["metadata"]["name"] for d in await self._runtime_documents()))
                raise ValueError(f"ClusterTrainingRuntime {name!r} not found; available: {known or 'none'}") from None
            raise self._failure(f"reading ClusterTrainingRuntime {name!r}", error) from None
        if FRAMEWORK_LABEL not in ((document.get("metadata") or {}).get("labels") or {}):
            raise ValueError(f"ClusterTrainingRuntime {name!r} has no {FRAMEWORK_LABEL} label; the SDK needs it")
        return document

    def get_runtime(self, name: str) -> Runtime:
        return runtime_view(self._run(self._runtime_document(name)))

    # ------------------------------------------------------------------ jobs

    def trainjob_manifest(
        self,
        name: str,
        runtime: Runtime,
        initializer: Initializer | None,
        trainer: CustomTrainer | BuiltinTrainer | None,
    ) -> dict[str, Any]:
        """The TrainJob ``train`` submits (``build_trainjob``'s, ready for a cluster)."""
        framework = runtime.trainer.framework
        script = SCRIPT_DIR / f"train_{name}.py"
        manifest = build_trainjob(name, runtime.name, framework, trainer, initializer, Path(script), self.namespace)
        if isinstance(trainer, CustomTrainer):
            trainer_spec = manifest["spec"]["trainer"]
            launcher = trainer_spec["command"][:-1]
            trainer_spec["command"] = trainer_command(launcher, script, entrypoint_source(trainer))
        if self.config.queue_name:
            manifest["metadata"]["labels"] = {QUEUE_NAME_LABEL: self.config.queue_name}
        return manifest

    async def _train(
        self,
        runtime: str | Runtime | None,
        initializer: Initializer | None,
        trainer: CustomTrainer | BuiltinTrainer | None,
    ) -> str:
        runtime_name = runtime.name if isinstance(runtime, Runtime) else (runtime or DEFAULT_RUNTIME)
        chosen = runtime_view(await self._runtime_document(runtime_name))
        kube = await self._kube()
        for _ in range(3):  # a random name that is taken: draw another
            name = new_job_name()
            manifest = self.trainjob_manifest(name, chosen, initializer, trainer)
            try:
                await kube.create(manifest)
            except KubeApiError as error:
                if error.status == 409:
                    continue
                if error.status in (400, 403, 422):
                    raise ValueError(f"TrainJob {name!r} was refused: {error.message}") from None
                raise self._failure(f"creating TrainJob {name!r}", error) from None
            return name
        raise RuntimeError("three random TrainJob names were all taken; try again")

    def train(
        self,
        runtime: str | Runtime | None = None,
        initializer: Initializer | None = None,
        trainer: CustomTrainer | BuiltinTrainer | None = None,
    ) -> str:
        return self._run(self._train(runtime, initializer, trainer))

    async def _pods(self, job_name: str | None) -> list[dict[str, Any]]:
        kube = await self._kube()
        selector = f"{JOBSET_NAME_LABEL}={job_name}" if job_name else JOBSET_NAME_LABEL
        try:
            return (await kube.list("Pod", self.namespace, label_selector=selector)).items
        except KubeApiError as error:
            raise self._failure("listing the TrainJob's pods", error) from None

    async def _runtimes_by_name(self) -> dict[str, Runtime]:
        return {d["metadata"]["name"]: runtime_view(d) for d in await self._runtime_documents()}

    async def _get_job(self, name: str) -> TrainJob:
        kube = await self._kube()
        try:
            document = await kube.get("TrainJob", name, self.namespace)
        except KubeApiError as error:
            raise self._failure(f"reading TrainJob {name!r}", error) from None
        return job_view(document, await self._runtimes_by_name(), await self._pods(name))

    def get_job(self, name: str) -> TrainJob:
        return self._run(self._get_job(name))

    async def _list_jobs(self, runtime: Runtime | None) -> list[TrainJob]:
        kube = await self._kube()
        try:
            documents = (await kube.list("TrainJob", self.namespace)).items
        except KubeApiError as error:
            raise self._failure("listing TrainJobs", error) from None
        runtimes = await self._runtimes_by_name()
        pods_by_job: dict[str, list[dict[str, Any]]] = {}
        for pod in await self._pods(None):
            job = ((pod.get("metadata") or {}).get("labels") or {}).get(JOBSET_NAME_LABEL, "")
            pods_by_job.setdefault(job, []).append(pod)
        views = [job_view(d, runtimes, pods_by_job.get(d["metadata"]["name"], [])) for d in documents]
        return [v for v in views if runtime is None or v.runtime.name == runtime.name]

    def list_jobs(self, runtime: Runtime | None = None) -> list[TrainJob]:
        return self._run(self._list_jobs(runtime))

    def wait_for_job_status(self, name: str, status: set[str], timeout: float, polling_interval: float) -> TrainJob:
        return wait_for_status(self.get_job, name, status, timeout, polling_interval)

    async def _delete_job(self, name: str) -> None:
        kube = await self._kube()
        try:
            await kube.delete("TrainJob", name, self.namespace)
        except KubeApiError as error:
            raise self._failure(f"deleting TrainJob {name!r}", error) from None

    def delete_job(self, name: str) -> None:
        self._run(self._delete_job(name))

    # ------------------------------------------------------------------ logs

    async def _simulated_node(self, pod: str) -> str | None:
        """The simulated (KWOK) node ``pod`` is bound to, or None (a real node, or not bound yet)."""
        kube = await self._kube()
        try:
            document = await kube.get("Pod", pod, self.namespace)
            node_name = (document.get("spec") or {}).get("nodeName")
            if not node_name:
                return None
            node = await kube.get("Node", node_name)
        except KubeApiError:
            return None  # unreadable: the log request itself says what is wrong
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        return str(node_name) if annotations.get(KWOK_NODE_ANNOTATION) == "fake" else None

    async def _log_lines(self, pod: str, container: str, follow: bool) -> AsyncGenerator[str, None]:
        simulated = await self._simulated_node(pod)
        if simulated is not None:
            # KWOK's fake kubelet starts no container: a real KWOK cluster has no log to give either
            yield (
                f"(no log: pod {pod} runs on simulated node {simulated} ({KWOK_NODE_ANNOTATION}=fake), "
                "where no container runs)"
            )
            return
        await self._kube()
        assert self._api_client is not None
        query = [("container", container)]
        if follow:
            query.append(("follow", "true"))
        response = await self._api_client.call_api(
            f"/api/v1/namespaces/{self.namespace}/pods/{pod}/log",
            "GET",
            query_params=query,
            header_params={"Accept": "text/plain"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            # a followed log is as long as the container runs: no read timeout
            _request_timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.config.request_timeout),
        )
        try:
            if response.status != 200:
                error = KubeApiError.from_body(response.status, await response.read())
                if error.message.startswith(KWOK_NO_LOGS):
                    # KWOK's kubelet, for a node KWOK manages by another selector than the annotation
                    yield f"(no log: pod {pod} runs on a simulated node: {error.message})"
                    return
                raise self._failure(f"reading the log of pod {pod!r} container {container!r}", error)
            while line := await response.content.readline():
                yield line.decode("utf-8", "replace").rstrip("\n")
        finally:
            response.release()

    def get_job_logs(self, name: str, step: str | None = "node-0", follow: bool = False) -> Iterator[str]:
        job = self.get_job(name)
        steps = [s for s in job.steps if step is None or s.name == step]
        if not steps:
            known = ", ".join(s.name for s in job.steps) or "none yet (no pods)"
            raise ValueError(f"TrainJob {name!r} has no step {step!r}; its steps: {known}")
        for chosen in steps:
            container = "node" if chosen.name.startswith("node-") else chosen.name
            lines = self._log_lines(chosen.pod_name, container, follow)
            try:
                while True:
                    try:
                        yield self._run(_next_line(lines))
                    except StopAsyncIteration:
                        break
            finally:
                if not self._closed:
                    self._run(lines.aclose())


async def _next_line(lines: AsyncGenerator[str, None]) -> str:
    return await lines.__anext__()

"""The cluster side of `trainyard queues`: read the queue objects, ask the visibility API, patch.

Everything goes through ``scheduler.kube.KubeClient`` (kubernetes-asyncio over the kubeconfig's
credentials). Kinds whose CRD the cluster lacks (a 404 on the list) are skipped with a note.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtimes.k8s.core import Node
from runtimes.k8s.meta import Resource
from scheduler.api.kueue import KUEUE_KINDS, Workload
from trainyard.cli.errors import UserError

VISIBILITY_PREFIX = "/apis/visibility.kueue.x-k8s.io/v1beta1"
QUEUE_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Topology")


@dataclass
class ClusterObjects:
    objects: list[Resource] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    resource_versions: dict[str, str] = field(default_factory=dict)  # ClusterQueue -> resourceVersion
    notes: list[str] = field(default_factory=list)


def _parse(kind: str, item: dict[str, Any]) -> Resource:
    from pydantic import ValidationError

    model: type[Resource] = Node if kind == "Node" else KUEUE_KINDS[kind]
    try:
        return model.model_validate(item)
    except ValidationError as error:
        name = (item.get("metadata") or {}).get("name", "?")
        raise UserError(f"the cluster's {kind} {name!r} cannot be read: {error}") from None


async def read_cluster(kubeconfig: Path, context: str | None, *, nodes: bool = True) -> ClusterObjects:
    from scheduler.kube import KubeApiError, KubeClient, KubeConfigError, load_api_client

    try:
        api = await load_api_client(kubeconfig, context=context)
    except KubeConfigError as error:
        raise UserError(str(error)) from None
    found = ClusterObjects()
    try:
        client = KubeClient(api)
        kinds = [*QUEUE_KINDS, "Workload", "Namespace"] + (["Node"] if nodes else [])
        for kind in kinds:
            try:
                listed = await client.list(kind)
            except KubeApiError as error:
                if error.status == 404:
                    found.notes.append(f"the cluster serves no {kind} objects (404); skipped")
                    continue
                raise UserError(f"cannot list {kind} objects: {error}") from None
            for item in listed.items:
                if kind == "Namespace":
                    metadata = item.get("metadata") or {}
                    found.namespaces[str(metadata.get("name"))] = dict(metadata.get("labels") or {})
                    continue
                obj = _parse(kind, item)
                if isinstance(obj, Workload):
                    found.workloads.append(obj)
                else:
                    found.objects.append(obj)
                if kind == "ClusterQueue":
                    found.resource_versions[obj.name] = str(obj.metadata.resource_version or "")
    except OSError as error:
        raise UserError(f"cannot reach the cluster of {kubeconfig}: {error}") from None
    finally:
        await api.close()
    return found


def read_cluster_sync(kubeconfig: Path, context: str | None) -> ClusterObjects:
    return asyncio.run(read_cluster(kubeconfig, context))


# ------------------------------------------------------------------------------ visibility


def visibility_path(cluster_queue: str | None, namespace: str | None, local_queue: str | None) -> str:
    if cluster_queue is not None:
        return f"{VISIBILITY_PREFIX}/clusterqueues/{cluster_queue}/pendingworkloads"
    return f"{VISIBILITY_PREFIX}/namespaces/{namespace}/localqueues/{local_queue}/pendingworkloads"


async def _visibility(
    kubeconfig: Path, context: str | None, paths: list[str], limit: int
) -> dict[str, dict[str, Any]] | str:
    """path -> PendingWorkloadsSummary, or why the cluster does not answer."""
    from kubernetes_asyncio.client.exceptions import ApiException

    from scheduler.kube import KubeConfigError, load_api_client

    try:
        api = await load_api_client(kubeconfig, context=context)
    except KubeConfigError as error:
        return str(error)
    answers: dict[str, dict[str, Any]] = {}
    try:
        for path in paths:
            try:
                answer = await api.call_api(
                    path,
                    "GET",
                    query_params=[("limit", str(limit)), ("offset", "0")],
                    header_params={"Accept": "application/json"},
                    response_types_map={200: "object"},
                    auth_settings=["BearerToken"],
                    _return_http_data_only=True,
                    _request_timeout=30,
                )
            except ApiException as error:
                return f"GET {path} answered {error.status} {error.reason}"
            except OSError as error:
                return f"GET {path} failed: {error}"
            if not isinstance(answer, dict) or answer.get("kind") != "PendingWorkloadsSummary":
                return f"GET {path} did not answer a PendingWorkloadsSummary"
            answers[path] = answer
    finally:
        await api.close()
    return answers


def ask_visibility(
    kubeconfig: Path, context: str | None, paths: list[str], limit: int
) -> dict[str, dict[str, Any]] | str:
    return asyncio.run(_visibility(kubeconfig, context, paths, limit))


# ------------------------------------------------------------------------------ set-quota


async def _patch_cluster_queue(
    kubeconfig: Path, context: str | None, name: str, resource_version: str, resource_groups: list[Any]
) -> dict[str, Any]:
    from scheduler.kube import KubeApiError, KubeClient, load_api_client

    api = await load_api_client(kubeconfig, context=context)
    try:
        # A merge patch replaces lists whole, so the groups travel complete; the resourceVersion
        # makes it conditional: a ClusterQueue changed since it was read answers 409.
        patch = {"metadata": {"resourceVersion": resource_version}, "spec": {"resourceGroups": resource_groups}}
        return await KubeClient(api).patch("ClusterQueue", name, patch)
    except KubeApiError as error:
        if error.status == 409:
            raise UserError(
                f"ClusterQueue {name!r} changed since it was read (resourceVersion {resource_version}); "
                "run the command again to judge the change against its current quota"
            ) from None
        raise UserError(f"the API server refused the change to ClusterQueue {name!r}: {error}") from None
    finally:
        await api.close()


def patch_cluster_queue(
    kubeconfig: Path, context: str | None, name: str, resource_version: str, resource_groups: list[Any]
) -> dict[str, Any]:
    return asyncio.run(_patch_cluster_queue(kubeconfig, context, name, resource_version, resource_groups))


def note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)

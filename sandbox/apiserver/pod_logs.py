"""``pods/log``: what ``kubectl logs`` gets from a cluster whose nodes are KWOK's.

The API server's part is the real one: the container is chosen or checked as kube-apiserver's pod
registry does (400 naming the choices when a pod has several and none was given, or an unknown
one), and a pod with no node yet has an empty log. The rest is the node's: the sandbox's nodes are
KWOK's, whose containers are never run, and KWOK's kubelet endpoint answers a log request it has
no ``Logs`` configuration for with ``no logs found for container "C" in pod "NS/NAME"`` (400),
which kube-apiserver passes on; so does this server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from .errors import ApiError
from .routes import Target
from .store import Store


def _container_names(pod: Mapping[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    return [
        str(c.get("name"))
        for key in ("containers", "initContainers", "ephemeralContainers")
        for c in spec.get(key) or []
        if isinstance(c, dict)
    ]


def _chosen_container(pod: Mapping[str, Any], asked: str | None) -> str:
    name = pod["metadata"]["name"]
    if asked:
        if asked not in _container_names(pod):
            raise ApiError.bad_request(f"container {asked} is not valid for pod {name}")
        return asked
    containers = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    if len(containers) == 1:
        return containers[0]
    if not containers:
        raise ApiError.bad_request(f"a container name must be specified for pod {name}")
    choices = " ".join(_container_names(pod))
    raise ApiError.bad_request(f"a container name must be specified for pod {name}, choose one of: [{choices}]")


def pod_log(store: Store, target: Target, query: Mapping[str, str]) -> web.Response:
    pod = store.get(target.rtype, target.namespace, str(target.name))
    container = _chosen_container(pod, query.get("container"))
    if not (pod.get("spec") or {}).get("nodeName"):
        return web.Response(text="", content_type="text/plain")
    namespace, name = pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
    raise ApiError.bad_request(f'no logs found for container "{container}" in pod "{namespace}/{name}"')

"""The webhook's object cache changes version only when something a handler reads changes.

On a live cluster most updates are status writes: Kueue rewrites queue status at every admission
and kubelets refresh their Nodes' conditions. Were each a new version, the webhook would rebuild
its engine and forget every remembered verdict several times a second.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from webhooks.objects import ObjectCache, load_directory

FIXTURES = Path(__file__).parent / "fixtures" / "objects"


def loaded() -> tuple[ObjectCache, dict[str, dict[str, Any]]]:
    cache = ObjectCache()
    load_directory(FIXTURES, cache)
    documents: dict[str, dict[str, Any]] = {}
    for path in sorted(FIXTURES.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                documents.setdefault(document["kind"], document)
    return cache, documents


def test_status_writes_and_heartbeats_keep_the_version() -> None:
    cache, documents = loaded()
    engine = cache.derived("admission-engine", lambda c: object())
    before = cache.version

    queue = copy.deepcopy(documents["ClusterQueue"])
    queue["metadata"]["resourceVersion"] = "99"
    queue["status"] = {"pendingWorkloads": 7, "admittedWorkloads": 3}  # Kueue's status write
    cache.apply(queue)

    node = copy.deepcopy(documents["Node"])
    node["metadata"]["resourceVersion"] = "100"
    node.setdefault("status", {})["conditions"] = [
        {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-25T03:00:00Z"}
    ]
    cache.apply(node)
    node["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-11-25T03:00:10Z"  # a heartbeat
    cache.apply(node)

    assert cache.version == before
    assert cache.derived("admission-engine", lambda c: object()) is engine  # not rebuilt


def test_a_change_a_handler_reads_is_a_new_version() -> None:
    cache, documents = loaded()
    node = copy.deepcopy(documents["Node"])
    node.setdefault("status", {})["conditions"] = [{"type": "Ready", "status": "True"}]
    cache.apply(node)
    version = cache.version

    node["status"]["conditions"][0]["status"] = "False"  # the node fails: the engine must know
    cache.apply(node)
    assert cache.version == version + 1
    assert not cache.get("Node", node["metadata"]["name"]).ready  # type: ignore[union-attr]

    queue = copy.deepcopy(documents["ClusterQueue"])
    queue["spec"]["cohortName"] = "somewhere-else"  # a spec change
    cache.apply(queue)
    assert cache.version == version + 2

    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"a": "b"}}}
    cache.apply(namespace)
    cache.apply(copy.deepcopy(namespace))  # the same labels again
    assert cache.version == version + 3

    cache.delete("ClusterQueue", queue["metadata"]["name"])
    cache.apply(queue)  # back after a deletion: a change, though its content is what it was
    assert cache.version == version + 5

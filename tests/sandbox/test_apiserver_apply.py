"""Server-side apply on the embedded API server, through the real kubernetes-asyncio client.

What kubectl apply --server-side relies on and a real kube-apiserver does: an apply creates a
missing object (201) and updates an existing one; fields a manager stops applying are removed
unless another manager owns them; a field another manager set is a 409 conflict naming it, until
``force`` takes it over; managedFields say who owns what; a write that is not an apply moves the
fields it changes to its own manager.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from sandbox.apiserver.field_sets import fields_of, from_fields_v1, path_text, to_fields_v1
from sandbox.apiserver.kinds import Registry
from sandbox.apiserver.schemas import kind_schema
from tests.builders import trainjob

APPLY = "application/apply-patch+yaml"


def config_map(data: dict[str, str], **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "settings", "namespace": "default"}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


async def apply(core: client.CoreV1Api, body: dict[str, Any], manager: str = "kubectl", **options: Any) -> Any:
    return await core.patch_namespaced_config_map(
        "settings", "default", body, field_manager=manager, _content_type=APPLY, **options
    )


def managers(obj: Any) -> dict[tuple[str, str], set[str]]:
    """(manager, operation) -> the paths it owns, as text."""
    return {
        (entry.manager, entry.operation): {path_text(p) for p in from_fields_v1(entry.fields_v1)}
        for entry in obj.metadata.managed_fields or []
    }


async def test_apply_creates_then_updates_and_prunes_what_it_no_longer_applies(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    created = await apply(core, config_map({"a": "1", "b": "2"}, team="x"))
    assert created.data == {"a": "1", "b": "2"}
    assert managers(created) == {("kubectl", "Apply"): {".data.a", ".data.b", ".metadata.labels.team"}}
    updated = await apply(core, config_map({"a": "10"}))
    assert updated.data == {"a": "10"}  # b and the label were the manager's alone: gone
    assert not updated.metadata.labels
    assert updated.metadata.uid == created.metadata.uid
    assert managers(updated) == {("kubectl", "Apply"): {".data.a"}}


async def test_a_field_another_manager_changed_is_a_conflict_until_forced(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    await apply(core, config_map({"a": "1", "b": "2"}))
    await core.patch_namespaced_config_map("settings", "default", {"data": {"a": "edited"}}, field_manager="editor")
    with pytest.raises(ApiException) as refused:
        await apply(core, config_map({"a": "1", "b": "2"}))
    assert refused.value.status == 409
    status = json.loads(refused.value.body)
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "editor" using v1: .data.a'
    assert status["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "editor" using v1', "field": ".data.a"}
    ]
    # leaving the field out is no conflict, and does not remove it: the editor owns it now
    kept = await apply(core, config_map({"b": "2"}))
    assert kept.data == {"a": "edited", "b": "2"}
    forced = await apply(core, config_map({"a": "1", "b": "2"}), force=True)
    assert forced.data == {"a": "1", "b": "2"}
    assert managers(forced) == {("kubectl", "Apply"): {".data.a", ".data.b"}}


async def test_two_appliers_of_one_value_share_it(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    await apply(core, config_map({"a": "1"}))
    shared = await apply(core, config_map({"a": "1", "c": "3"}), manager="other")
    assert managers(shared) == {("kubectl", "Apply"): {".data.a"}, ("other", "Apply"): {".data.a", ".data.c"}}
    # the first gives a up; the second still applies it, so it stays
    after = await apply(core, config_map({}))
    assert after.data == {"a": "1", "c": "3"}


async def test_apply_without_a_field_manager_is_refused(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client)
    with pytest.raises(ApiException) as refused:
        await core.patch_namespaced_config_map("settings", "default", config_map({}), _content_type=APPLY)
    assert refused.value.status == 422
    assert "fieldManager: Required value" in json.loads(refused.value.body)["message"]


async def test_keyed_lists_merge_by_key_on_a_custom_resource(kube_client: client.ApiClient) -> None:
    """A TrainJob's trainer.env is a map list keyed by name (its CRD says so): two managers each
    own their own variables, and one removing its variable leaves the other's."""
    custom = client.CustomObjectsApi(kube_client)
    await client.CoreV1Api(kube_client).create_namespace({"metadata": {"name": "team-a"}})

    def with_env(*env: str) -> dict[str, Any]:
        """The TrainJob as one manager applies it: only the variables it owns."""
        return trainjob("demo", "team-a", nodes=None, trainer={"env": [{"name": name, "value": "1"} for name in env]})

    async def apply_as(manager: str, body: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = await custom.patch_namespaced_custom_object(
            "trainer.kubeflow.org", "v1alpha1", "team-a", "trainjobs", "demo", body,
            field_manager=manager, _content_type=APPLY,
        )  # fmt: skip
        return found

    await apply_as("user", with_env("A", "B"))
    both = await apply_as("tuner", with_env("C"))
    assert [e["name"] for e in both["spec"]["trainer"]["env"]] == ["A", "B", "C"]
    owned = {entry["manager"]: entry["fieldsV1"] for entry in both["metadata"]["managedFields"]}
    assert set(owned["tuner"]["f:spec"]["f:trainer"]["f:env"]) == {'k:{"name":"C"}'}
    after = await apply_as("user", with_env("A"))
    assert [e["name"] for e in after["spec"]["trainer"]["env"]] == ["A", "C"]


def test_field_sets_follow_structured_merge_diff() -> None:
    """Scalars, map entries, keyed list items (with their ``.``) and set items are paths; a struct
    with fields is not; a list the schema does not describe is one atomic path."""
    pod = Registry().by_kind("v1", "Pod")
    assert pod is not None
    spec = {
        "metadata": {"labels": {"app": "x"}, "finalizers": ["f"]},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], "tolerations": [{"key": "k"}]},
    }
    paths = fields_of(spec, kind_schema(pod))
    assert {path_text(p) for p in paths} == {
        ".metadata.labels.app",
        '.metadata.finalizers[="f"]',
        '.spec.containers[name="main"]',
        '.spec.containers[name="main"].name',
        '.spec.containers[name="main"].image',
        ".spec.tolerations",
    }
    tree = to_fields_v1(paths)
    assert tree["f:spec"]["f:containers"]['k:{"name":"main"}'] == {".": {}, "f:image": {}, "f:name": {}}
    assert from_fields_v1(tree) == paths

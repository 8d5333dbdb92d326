"""The parts of the API a kubectl user meets beyond objects, over real HTTP as kubectl sends them.

Protobuf bodies (kubectl's typed clients: ``create namespace|configmap|secret|serviceaccount``,
``auth can-i``), the health checks, the self reviews, ``pods/log``, ``-o wide`` columns,
discovery and the OpenAPI schemas ``kubectl explain`` walks.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp
import pytest
from fakeapi.fixtures import FakeApi
from sandbox_support import node, pod

PROTOBUF = "application/vnd.kubernetes.protobuf"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)


def field(number: int, value: int | str | bytes) -> bytes:
    """One protobuf field as gogo-proto writes it (a varint, or length-delimited bytes)."""
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version) + field(2, kind)
    return b"k8s\x00" + field(1, type_meta) + field(2, raw) + field(3, "") + field(4, "")


def object_meta(name: str, **labels: str) -> bytes:
    # every non-pointer field written, empty or not, as kubectl's typed client sends it
    meta = field(1, name) + b"".join(field(n, "") for n in (2, 3, 4, 5, 6)) + field(7, 0) + field(8, b"")
    return meta + b"".join(field(11, field(1, k) + field(2, v)) for k, v in labels.items())


async def call(
    fake_api: FakeApi, method: str, path: str, *, body: bytes | None = None, content_type: str = "", **headers: str
) -> tuple[int, str, Any]:
    """(status, content type, body as JSON or text) of one request with the kubeconfig's token."""
    sent = {"Authorization": f"Bearer {fake_api.server.token}", **headers}
    if content_type:
        sent["Content-Type"] = content_type
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"{fake_api.url}{path}", data=body, headers=sent) as answer,
    ):
        text = await answer.text()
        if answer.content_type == "application/json":
            return answer.status, answer.content_type, await answer.json()
        return answer.status, answer.content_type, text


async def test_protobuf_bodies_of_built_in_kinds_are_read(fake_api: FakeApi) -> None:
    namespace = envelope("v1", "Namespace", field(1, object_meta("newcomer", team="a")) + field(2, b"") + field(3, b""))
    status, _, created = await call(fake_api, "POST", "/api/v1/namespaces", body=namespace, content_type=PROTOBUF)
    assert status == 201, created
    assert created["metadata"]["name"] == "newcomer"
    assert created["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": "newcomer"}
    assert created["status"] == {"phase": "Active"}
    secret = field(1, object_meta("token")) + field(2, field(1, "key") + field(2, b"\x00\xffraw")) + field(3, "Opaque")
    status, _, stored = await call(
        fake_api, "POST", "/api/v1/namespaces/newcomer/secrets", body=envelope("v1", "Secret", secret),
        content_type=PROTOBUF,
    )  # fmt: skip
    assert status == 201, stored
    assert base64.b64decode(stored["data"]["key"]) == b"\x00\xffraw"
    assert stored["type"] == "Opaque"


async def test_protobuf_of_a_kind_not_read_here_is_415_saying_to_send_json(fake_api: FakeApi) -> None:
    body = envelope("v1", "Pod", field(1, object_meta("p")))
    status, _, answer = await call(
        fake_api, "POST", "/api/v1/namespaces/default/pods", body=body, content_type=PROTOBUF
    )
    assert status == 415
    assert answer["kind"] == "Status"
    assert answer["reason"] == "UnsupportedMediaType"
    assert "application/json" in answer["message"]
    status, _, answer = await call(fake_api, "POST", "/api/v1/namespaces", body=b"garbage", content_type=PROTOBUF)
    assert status == 400
    assert "envelope" in answer["message"]


async def test_health_checks_as_kube_apiserver_serves_them(fake_api: FakeApi) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{fake_api.url}/readyz") as anonymous:
            assert (anonymous.status, await anonymous.text()) == (200, "ok")
        async with session.get(f"{fake_api.url}/readyz", headers={"Authorization": "Bearer wrong"}) as wrong:
            assert wrong.status == 401
    status, _, verbose = await call(fake_api, "GET", "/livez?verbose")
    assert status == 200
    assert verbose.splitlines() == ["[+]ping ok", "[+]log ok", "[+]etcd ok", "livez check passed"]
    assert (await call(fake_api, "GET", "/healthz/etcd"))[::2] == (200, "ok")
    assert (await call(fake_api, "GET", "/readyz/nothing"))[0] == 404
    excluded = (await call(fake_api, "GET", "/readyz?verbose&exclude=etcd"))[2]
    assert "[+]etcd excluded: ok" in excluded
    fake_api.server.stopping = True  # as from the moment stop() begins
    status, _, failing = await call(fake_api, "GET", "/readyz")
    assert status == 500
    assert "[-]shutdown failed: reason withheld" in failing
    assert failing.rstrip().endswith("readyz check failed")
    assert (await call(fake_api, "GET", "/livez"))[::2] == (200, "ok")


@pytest.mark.parametrize(
    ("path", "body", "wanted"),
    [
        (
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            {
                "spec": {
                    "resourceAttributes": {"verb": "create", "group": "trainer.kubeflow.org", "resource": "trainjobs"}
                }
            },
            {"allowed": True},
        ),
        (
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            {"spec": {"namespace": "default"}},
            {"incomplete": False},
        ),
    ],
    ids=["can-i", "can-i --list"],
)
async def test_self_reviews_answer_for_the_sandbox_administrator(
    fake_api: FakeApi, path: str, body: dict[str, Any], wanted: dict[str, Any]
) -> None:
    group = path.split("/")[2]
    kind = "SelfSubjectAccessReview" if "access" in path else "SelfSubjectRulesReview"
    sent = {"apiVersion": f"{group}/v1", "kind": kind, **body}
    status, _, answer = await call(
        fake_api, "POST", path, body=json.dumps(sent).encode(), content_type="application/json"
    )
    assert status == 201
    assert answer["kind"] == kind
    assert wanted.items() <= answer["status"].items()


async def test_can_i_in_protobuf_and_a_review_with_nothing_to_review(fake_api: FakeApi) -> None:
    attributes = field(2, "create") + field(3, "trainer.kubeflow.org") + field(5, "trainjobs")
    review = field(1, object_meta("")) + field(2, field(1, attributes))
    body = envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", review)
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    status, _, answer = await call(fake_api, "POST", path, body=body, content_type=PROTOBUF)
    assert status == 201
    assert answer["spec"]["resourceAttributes"] == {
        "verb": "create",
        "group": "trainer.kubeflow.org",
        "resource": "trainjobs",
    }
    assert answer["status"] == {"allowed": True}
    empty = envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", field(1, object_meta("")))
    status, _, refused = await call(fake_api, "POST", path, body=empty, content_type=PROTOBUF)
    assert status == 422
    assert "exactly one of nonResourceAttributes or resourceAttributes" in refused["message"]
    whoami = await call(
        fake_api, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        body=b'{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}', content_type="application/json",
    )  # fmt: skip
    assert whoami[2]["status"]["userInfo"]["username"] == "system:admin"


async def test_pod_logs_choose_the_container_and_say_a_kwok_node_keeps_none(fake_api: FakeApi) -> None:
    two = pod("two", containers=[{"name": "a", "image": "x"}, {"name": "b", "image": "x"}])
    fake_api.server.seed(two)
    fake_api.server.seed(pod("waiting"))
    fake_api.server.seed(pod("placed", nodeName="kwok-node-0"))
    base = "/api/v1/namespaces/default/pods"
    assert (await call(fake_api, "GET", f"{base}/waiting/log"))[::2] == (200, "")
    status, _, answer = await call(fake_api, "GET", f"{base}/two/log")
    assert (status, answer["message"]) == (400, "a container name must be specified for pod two, choose one of: [a b]")
    status, _, answer = await call(fake_api, "GET", f"{base}/two/log?container=c")
    assert (status, answer["message"]) == (400, "container c is not valid for pod two")
    status, _, answer = await call(fake_api, "GET", f"{base}/placed/log")
    assert (status, answer["message"]) == (400, 'no logs found for container "main" in pod "default/placed"')
    assert (await call(fake_api, "GET", f"{base}/missing/log"))[0] == 404
    assert (await call(fake_api, "DELETE", f"{base}/placed/log"))[0] == 405


async def test_wide_columns_discovery_and_explainable_schemas(fake_api: FakeApi) -> None:
    fake_api.server.seed(node("n0"))
    _, _, nodes = await call(fake_api, "GET", "/api/v1/nodes", Accept=TABLE)
    wide = [c["name"] for c in nodes["columnDefinitions"] if c["priority"] == 1]
    assert wide == ["Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"]
    assert nodes["rows"][0]["cells"][5:] == ["<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]
    fake_api.server.seed(pod("p", nodeName="n0"))
    _, _, pods = await call(fake_api, "GET", "/api/v1/namespaces/default/pods", Accept=TABLE)
    assert [c["name"] for c in pods["columnDefinitions"]][-2:] == ["Nominated Node", "Readiness Gates"]
    _, _, core = await call(fake_api, "GET", "/api/v1")
    resources = {r["name"]: r for r in core["resources"]}
    assert resources["pods/log"]["verbs"] == ["get"]
    assert resources["serviceaccounts"]["shortNames"] == ["sa"]
    _, _, groups = await call(fake_api, "GET", "/apis")
    assert {"authorization.k8s.io", "authentication.k8s.io"} <= {g["name"] for g in groups["groups"]}
    _, _, document = await call(fake_api, "GET", "/openapi/v3/apis/trainer.kubeflow.org/v1alpha1")
    schemas = document["components"]["schemas"]
    trainjob = schemas["org.kubeflow.trainer.v1alpha1.TrainJob"]
    assert "runtimeRef" in trainjob["properties"]["spec"]["properties"]
    reference = trainjob["properties"]["metadata"]["allOf"][0]["$ref"]
    assert schemas[reference.rsplit("/", 1)[1]]["properties"]["labels"]["additionalProperties"] == {"type": "string"}
    _, _, core_document = await call(fake_api, "GET", "/openapi/v3/api/v1")
    pod_spec = core_document["components"]["schemas"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"]
    assert pod_spec["properties"]["containers"]["x-kubernetes-list-map-keys"] == ["name"]

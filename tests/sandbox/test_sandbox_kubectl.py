"""What kubectl sees: apply (OpenAPI v3 field validation), get with server-side Tables, short names.

The Table test asks the API server directly; the kubectl test runs the real kubectl against the
sandbox when it is installed (it is skipped, saying so, where it is not).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from sandbox_support import condition_of

from sandbox.apiserver.tables import jsonpath
from sandbox.embedded import Sandbox
from tests.eventually import eventually

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
TRAINJOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "demo", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "default"}},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {
            "numNodes": 2,
            "resourcesPerNode": {"requests": {"cpu": "8", "nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}},
        },
    },
}


def test_jsonpath_subset_of_printer_columns() -> None:
    workload = {"status": {"conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted"}]}}
    assert jsonpath(workload, '.status.conditions[?(@.type=="QuotaReserved")].status') == ["True"]
    assert jsonpath(workload, ".status.conditions[-1:].type") == ["Admitted"]
    assert jsonpath(workload, ".status.conditions[0].type") == ["QuotaReserved"]
    assert jsonpath(workload, ".status.missing") == []


async def _get(sb: Sandbox, path: str, accept: str = TABLE) -> dict[str, Any]:
    assert sb.server.certificates is not None
    headers = {"Authorization": f"Bearer {sb.server.token}", "Accept": accept}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sb.url}{path}", headers=headers, ssl=sb.server.certificates.client_context()) as answer,
    ):
        assert answer.status == 200, await answer.text()
        body: dict[str, Any] = await answer.json()
        return body


async def test_tables_give_kubectl_get_its_columns() -> None:
    async with Sandbox(speedup=20.0) as sb:
        await sb.client().create(json.loads(json.dumps(TRAINJOB)))

        async def finished() -> bool:
            found = condition_of(await sb.client().get("TrainJob", "demo", "team-a"), "Complete")
            return found is not None and found["status"] == "True"

        await eventually(finished, timeout=30.0, what="the TrainJob to complete")
        pods = await _get(sb, "/api/v1/namespaces/team-a/pods")
        assert pods["kind"] == "Table"
        names = [c["name"] for c in pods["columnDefinitions"]]
        assert names == [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates",
        ]
        assert {row["cells"][2] for row in pods["rows"]} == {"Completed"}
        assert pods["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
        workloads = await _get(sb, "/apis/kueue.x-k8s.io/v1beta2/workloads")
        columns = [c["name"] for c in workloads["columnDefinitions"]]
        assert columns[:5] == ["Name", "Queue", "Reserved in", "Admitted", "Finished"]
        (row,) = workloads["rows"]
        assert row["cells"][1:4] == ["default", "team-a", "True"]
        node = await _get(sb, "/api/v1/nodes/gpu-node-z0-s0-b0-n0")
        assert node["rows"][0]["cells"][:3] == ["gpu-node-z0-s0-b0-n0", "Ready", "<none>"]
        events = await _get(sb, "/api/v1/namespaces/team-a/events")
        assert [c["name"] for c in events["columnDefinitions"]][:5] == [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Message",
        ]
        assert "QuotaReserved" in {row["cells"][2] for row in events["rows"]}
        plain = await _get(sb, "/api/v1/namespaces/team-a/pods", accept="application/json")
        assert plain["kind"] == "PodList"
        # kubectl get -w: a watch asked for Tables streams one-row Tables
        assert sb.server.certificates is not None
        headers = {"Authorization": f"Bearer {sb.server.token}", "Accept": TABLE}
        query = "?watch=true&resourceVersion=0&timeoutSeconds=1"
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                f"{sb.url}/apis/kueue.x-k8s.io/v1beta2/workloads{query}",
                headers=headers,
                ssl=sb.server.certificates.client_context(),
            ) as answer,
        ):
            events = [json.loads(line) for line in (await answer.read()).splitlines() if line.strip()]
        assert events
        assert {e["object"]["kind"] for e in events} == {"Table"}
        assert all(len(e["object"]["rows"]) == 1 for e in events)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed on this machine")
async def test_kubectl_applies_gets_and_describes(tmp_path: Path) -> None:
    manifest = tmp_path / "trainjob.yaml"
    manifest.write_text(yaml.safe_dump(TRAINJOB))
    async with Sandbox(speedup=20.0, kubeconfig_out=tmp_path / "kubeconfig") as sb:

        async def kubectl(*args: str) -> str:
            process = await asyncio.create_subprocess_exec(
                "kubectl",
                "--kubeconfig",
                str(sb.kubeconfig_path),
                *args,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await process.communicate()
            assert process.returncode == 0, err.decode()
            return out.decode()

        assert "trainjob.trainer.kubeflow.org/demo created" in await kubectl("apply", "-f", str(manifest))
        queues = await kubectl("get", "cq")
        assert queues.split("\n")[0].split()[:2] == ["NAME", "COHORT"]
        assert "team-a" in queues

        async def completed() -> bool:
            return "Completed" in await kubectl("get", "pods", "-n", "team-a")

        await eventually(completed, timeout=30.0, what="kubectl to show Completed pods")
        described = await kubectl("describe", "trainjob", "demo", "-n", "team-a")
        assert "QuotaReserved" in described
        nodes = await kubectl("get", "no", "-o", "name")
        assert len(nodes.split()) == 8

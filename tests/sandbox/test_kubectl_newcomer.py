"""A platform admin's first session with kubectl against ``trainyard sandbox up`` (issue 32).

The real ``/usr/bin/kubectl`` (skipped, saying so, where it is not installed) against the embedded
sandbox, doing what failed before with errors a real cluster never gives: server-side apply,
``explain``, ``create`` of built-in kinds (sent as protobuf), the health checks, ``auth can-i``,
service accounts, ``logs``, ``-o wide``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.embedded import Sandbox
from tests.eventually import eventually

KUBECTL = shutil.which("kubectl", path="/usr/bin") or shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")

TRAINJOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "first", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "default"}},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {"numNodes": 1, "resourcesPerNode": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}},
    },
}


class Kubectl:
    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig

    async def run(self, *args: str, ok: bool = True) -> tuple[int, str, str]:
        assert KUBECTL is not None
        process = await asyncio.create_subprocess_exec(
            KUBECTL, "--kubeconfig", str(self.kubeconfig), *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await process.communicate()
        code = process.returncode or 0
        if ok:
            assert code == 0, f"kubectl {' '.join(args)}: {err.decode()}"
        return code, out.decode(), err.decode()

    async def __call__(self, *args: str) -> str:
        return (await self.run(*args))[1]


def write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(document))
    return path


async def test_kubectl_works_on_the_sandbox_as_on_a_cluster(tmp_path: Path) -> None:
    async with Sandbox(speedup=20.0, kubeconfig_out=tmp_path / "kubeconfig") as sb:
        kubectl = Kubectl(sb.kubeconfig_path)
        assert await kubectl("get", "--raw", "/readyz") == "ok"
        assert "namespace/newcomer created" in await kubectl("create", "ns", "newcomer")
        await kubectl("create", "configmap", "settings", "--from-literal=a=b", "-n", "newcomer")
        await kubectl("create", "secret", "generic", "token", "--from-literal=k=v", "-n", "newcomer")
        assert await kubectl("get", "secret", "token", "-n", "newcomer", "-o", "jsonpath={.data.k}") == "dg=="
        assert (await kubectl("auth", "can-i", "create", "trainjobs")).strip() == "yes"
        assert "runtimeRef" in await kubectl("explain", "trainjob.spec")
        assert "resourceGroups" in await kubectl("explain", "clusterqueue.spec")
        assert "resources" in await kubectl("explain", "pod.spec.containers")

        # server-side apply: create, then an update the webhook allows (a label), then one it refuses
        manifest = write(tmp_path / "trainjob.yaml", TRAINJOB)
        assert "trainjob.trainer.kubeflow.org/first serverside-applied" in await kubectl(
            "apply", "--server-side", "-f", str(manifest)
        )
        labelled = json.loads(json.dumps(TRAINJOB))
        labelled["metadata"]["labels"]["owner"] = "newcomer"
        await kubectl("apply", "--server-side", "-f", str(write(tmp_path / "labelled.yaml", labelled)))
        shown = json.loads(
            await kubectl("get", "trainjob", "first", "-n", "team-a", "-o", "json", "--show-managed-fields")
        )
        assert shown["metadata"]["labels"]["owner"] == "newcomer"
        assert ("kubectl", "Apply") in {(m["manager"], m["operation"]) for m in shown["metadata"]["managedFields"]}
        resized = json.loads(json.dumps(labelled))
        resized["spec"]["trainer"]["numNodes"] = 2
        code, _, err = await kubectl.run(
            "apply", "--server-side", "-f", str(write(tmp_path / "resized.yaml", resized)), ok=False
        )
        assert code != 0
        assert "field is immutable" in err  # trainyard's webhook, called for the apply as for any update

        async def default_account() -> bool:
            return "default" in await kubectl("get", "sa", "-n", "newcomer", "-o", "name")

        await eventually(default_account, timeout=10.0, what="the default ServiceAccount of newcomer")
        assert (await kubectl("get", "nodes", "-o", "wide")).split("\n")[0].split()[5:7] == [
            "INTERNAL-IP",
            "EXTERNAL-IP",
        ]

        async def placed_pod() -> str:
            names = (await kubectl("get", "pods", "-n", "team-a", "-o", "name")).split()
            return names[0] if names else ""

        name = await eventually(placed_pod, timeout=30.0, what="the TrainJob's pod")
        assert "NOMINATED NODE" in await kubectl("get", "pods", "-n", "team-a", "-o", "wide")
        code, _, err = await kubectl.run("logs", "-n", "team-a", name, ok=False)
        assert code != 0
        assert 'no logs found for container "node"' in err  # what a KWOK node answers
        header = (await kubectl("get", "clusterqueues")).split("\n")[0].split()
        assert header[:4] == ["NAME", "COHORT", "PENDING", "WORKLOADS"]


# The ClusterQueue status writer is another part of issue 32 ("Queue status as Kueue writes it");
# until its module is in the tree this test is expected to fail, strictly: it runs as a plain test
# as soon as the writer lands.
STATUS_WRITER = importlib.util.find_spec("scheduler.controllers.queueing.queue_status") is not None


@pytest.mark.xfail(
    not STATUS_WRITER,
    strict=True,
    reason="waits for the ClusterQueue status writer (scheduler/controllers/queueing/queue_status.py, issue 32)",
)
async def test_kubectl_get_clusterqueues_fills_pending_and_admitted(tmp_path: Path) -> None:
    async with Sandbox(speedup=20.0, kubeconfig_out=tmp_path / "kubeconfig") as sb:
        kubectl = Kubectl(sb.kubeconfig_path)
        await kubectl("apply", "--server-side", "-f", str(write(tmp_path / "trainjob.yaml", TRAINJOB)))

        async def counted() -> list[str]:
            rows = (await kubectl("get", "clusterqueues", "-o", "wide", "--no-headers")).splitlines()
            team_a = next((row.split() for row in rows if row.startswith("team-a")), [])
            return team_a if len(team_a) >= 5 and all(cell.isdigit() for cell in team_a[3:5]) else []

        await eventually(counted, timeout=15.0, what="PENDING and ADMITTED WORKLOADS of team-a")

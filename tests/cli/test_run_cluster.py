"""`trainyard run TRAINJOB.yaml --kubeconfig PATH`: a TrainJob submitted to a cluster (the sandbox:
trainyard's webhook and controllers on the fake API server over HTTPS, KWOK nodes) and followed
to its end, every line read from the server; refusals in the webhook's words, at the file's line."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import yaml
from fakeapi.fixtures import FakeApi, fake_api

from sandbox.embedded import Sandbox
from scheduler.kube import KubeClient
from tests.builders import kwok_trainjob
from trainyard.cli.errors import UserError
from trainyard.cli.main import main
from trainyard.cli.run.submission import JobWatch

__all__ = ["fake_api"]

GPU = "nvidia.com/gpu"


def write_trainjob(folder: Path, name: str, *, nodes: int = 2, run: str = "1s") -> Path:
    document = kwok_trainjob(name, nodes=nodes, run=run, queue=None)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


async def trainyard(*argv: str) -> int:
    """The command line, in a thread: it runs its own event loop while ours serves the sandbox."""
    return await asyncio.to_thread(main, list(argv))


async def test_a_submitted_trainjob_is_followed_from_its_queue_to_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with Sandbox(speedup=20.0, kubeconfig_out=tmp_path / "kubeconfig") as sb:
        path = write_trainjob(tmp_path, "pretrain")
        code = await trainyard("run", str(path), "--kubeconfig", str(sb.kubeconfig_path), "--timeout", "60")
        out, err = capsys.readouterr()
        assert code == 0, f"stdout:\n{out}\nstderr:\n{err}"
        # the namespace's default LocalQueue, from trainyard's mutating webhook on the server
        assert "TrainJob team-a/pretrain created in queue default (suspended until admitted)" in out
        admitted = re.search(r"Workload: (trainjob-pretrain-[0-9a-f]{5}) admitted by ClusterQueue (\S+): (.*)", out)
        assert admitted is not None, out
        nodes = re.findall(r"gpu-node-[a-z0-9-]+", admitted.group(3))
        assert len(nodes) == 2, admitted.group(0)  # one node per rank, from the topologyAssignment
        assert re.search(r"TrainJob: Complete: ", out), out
        server = await sb.client().get("TrainJob", "pretrain", "team-a")
        assert any(c["type"] == "Complete" and c["status"] == "True" for c in server["status"]["conditions"])
        workload = await sb.client().get("Workload", admitted.group(1), "team-a")
        assert workload["status"]["admission"]["clusterQueue"] == admitted.group(2)


async def test_refusals_name_the_file_and_say_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with Sandbox(speedup=20.0, kubeconfig_out=tmp_path / "kubeconfig") as sb:
        kubeconfig = str(sb.kubeconfig_path)
        never = write_trainjob(tmp_path, "never-fits", nodes=100)
        code = await trainyard("run", str(never), "--kubeconfig", kubeconfig)
        _, err = capsys.readouterr()
        assert code == 2
        assert f"{never}:1: the cluster refused TrainJob team-a/never-fits" in err
        assert "can never be admitted" in err
        assert "Traceback" not in err

        once = write_trainjob(tmp_path, "once", run="600s")
        assert await trainyard("run", str(once), "--kubeconfig", kubeconfig, "--no-wait") == 0
        assert "TrainJob team-a/once created" in capsys.readouterr().out
        assert await trainyard("run", str(once), "--kubeconfig", kubeconfig, "--no-wait") == 2
        assert "already exists on the cluster; delete it first" in capsys.readouterr().err

        # following stops at the timeout; the job goes on on the server
        later = write_trainjob(tmp_path, "later", run="600s")
        code = await trainyard("run", str(later), "--kubeconfig", kubeconfig, "--timeout", "1")
        out = capsys.readouterr().out
        assert code == 124, out
        assert re.search(r"still \w+ after 1 s; it goes on on the cluster", out), out
        assert (await sb.client().get("TrainJob", "later", "team-a"))["metadata"]["name"] == "later"


def test_run_needs_to_be_told_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_trainjob(tmp_path, "nowhere")
    assert main(["run", str(path)]) == 2
    assert "--local (on this machine" in capsys.readouterr().err
    assert main(["run", str(path), "--local", "--kubeconfig", str(tmp_path / "k")]) == 2


def test_an_unreadable_kubeconfig_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_trainjob(tmp_path, "lost")
    missing = tmp_path / "no-such-kubeconfig"
    assert main(["run", str(path), "--kubeconfig", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: cannot use this kubeconfig" in err
    assert "Traceback" not in err


async def test_a_namespace_it_may_not_watch_is_said_plainly(fake_api: FakeApi) -> None:
    fake_api.faults.fail("list", "/workloads", code=403, message="forbidden", times=10_000)
    api = await fake_api.api_client()
    try:
        with pytest.raises(UserError) as refused:
            async with JobWatch(KubeClient(api), "team-a", "job", print, sync_timeout=0.5):
                pass
    finally:
        await api.close()
    assert "cannot list and watch TrainJobs and Workloads in namespace 'team-a' within 0.5 s" in str(refused.value)
    assert "kubectl auth can-i watch workloads.kueue.x-k8s.io -n team-a" in str(refused.value)


def test_a_node_shared_by_two_pods_is_named_once_with_its_pod_count() -> None:
    """Three ranks on two nodes: each node once, in rank order, the shared one with its count."""
    from scheduler.api.topology_assignment import encode_topology_assignment
    from trainyard.cli.run.submission import workload_line

    assignment = encode_topology_assignment(["kubernetes.io/hostname"], [(["gpu-node-a"], 2), (["gpu-node-b"], 1)])
    workload = {
        "metadata": {"name": "trainjob-llm-1a2b3"},
        "status": {
            "admission": {
                "clusterQueue": "team-a",
                "podSetAssignments": [
                    {"name": "node", "count": 3, "flavors": {GPU: "h100"}, "topologyAssignment": assignment}
                ],
            },
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""},
                {"type": "Admitted", "status": "True", "reason": "Admitted", "message": ""},
            ],
        },
    }
    assert workload_line(workload) == (
        "trainjob-llm-1a2b3 admitted by ClusterQueue team-a: flavor h100, nodes gpu-node-a (2 pods), gpu-node-b"
    )

"""The SDK's Kubernetes backend against the fake API server, over the real kubernetes-asyncio client.

The backend is synchronous (like kubeflow's SDK) and runs its own loop in a thread, so the tests
call it through ``asyncio.to_thread``: the test's loop keeps serving the fake API server.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from aiohttp import ClientSession, web
from fakeapi.fixtures import FakeApi, fake_api

from runtimes.sdk import DataType
from runtimes.sdk import TrainerClient as RuntimesTrainerClient
from runtimes.sdk.trainjobs import build_trainjob
from scheduler.kube import KubeClient
from tests.builders import NodeBuilder
from trainyard.sdk import (
    BuiltinTrainer,
    CustomTrainer,
    HuggingFaceDatasetInitializer,
    Initializer,
    KubernetesBackend,
    KubernetesBackendConfig,
    TorchTuneConfig,
    TrainerClient,
)

__all__ = ["fake_api"]

ROOT = Path(__file__).resolve().parents[2]
RUNTIMES = ROOT / "manifests" / "runtimes"
T = TypeVar("T")


def say_hello(greeting: str, times: int) -> None:
    for _ in range(times):
        print(f"{greeting} from the trainer")


async def call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await asyncio.to_thread(function, *args, **kwargs)


@pytest.fixture
async def kube(fake_api: FakeApi) -> AsyncIterator[KubeClient]:
    api = await fake_api.api_client()
    try:
        client = KubeClient(api)
        for name in ("torch_distributed.yaml", "plain_python.yaml"):
            for document in yaml.safe_load_all((RUNTIMES / name).read_text()):
                await client.create(document)
        yield client
    finally:
        await api.close()


@pytest.fixture
async def client(fake_api: FakeApi, kube: KubeClient) -> AsyncIterator[TrainerClient]:
    trainer_client = TrainerClient(
        KubernetesBackendConfig(kubeconfig=fake_api.kubeconfig, namespace="default", queue_name="team-a")
    )
    try:
        yield trainer_client
    finally:
        await call(trainer_client.close)


def node_pod(job: str, index: int, phase: str, *, replicated_job: str = "node") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-{replicated_job}-0-{index}-abcde",
            "namespace": "default",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": job,
                "jobset.sigs.k8s.io/replicatedjob-name": replicated_job,
                "jobset.sigs.k8s.io/job-index": "0",
                "batch.kubernetes.io/job-completion-index": str(index),
            },
            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
        },
        "spec": {
            "containers": [{"name": "node", "image": "python:3.11", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]
        },
        "status": {"phase": phase},
    }


async def add_pod(kube: KubeClient, pod: dict[str, Any]) -> None:
    created = await kube.create(pod)
    created["status"] = pod["status"]
    await kube.replace(created, status=True)


async def set_condition(kube: KubeClient, name: str, kind: str, message: str) -> None:
    condition = {
        "type": kind,
        "status": "True",
        "reason": kind,
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    await kube.patch("TrainJob", name, {"status": {"conditions": [condition]}}, "default", status=True)


async def test_runtimes_come_from_the_cluster(client: TrainerClient) -> None:
    names = {r.name: r for r in await call(client.list_runtimes)}
    assert set(names) == {"torch-distributed", "plain-python"}
    torch = await call(client.get_runtime, "torch-distributed")
    assert torch.trainer.framework == "torch"
    assert torch.trainer.image
    with pytest.raises(ValueError, match=r"'nope' not found; available: plain-python, torch-distributed"):
        await call(client.get_runtime, "nope")


async def test_train_submits_build_trainjobs_manifest_with_the_queue(client: TrainerClient, kube: KubeClient) -> None:
    trainer = CustomTrainer(
        func=say_hello, func_args={"greeting": "hi", "times": 2}, num_nodes=2, resources_per_node={"gpu": 1}
    )
    name = await call(client.train, runtime="torch-distributed", trainer=trainer)
    stored = await kube.get("TrainJob", name, "default")
    assert stored["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "team-a"}
    expected = build_trainjob(name, "torch-distributed", "torch", trainer, script_path=Path("/x"))
    # apiGroup and kind are the defaults Trainer's CRD fills in, as the API server stores it
    assert stored["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert stored["spec"]["trainer"]["numNodes"] == 2
    assert stored["spec"]["trainer"]["resourcesPerNode"] == expected["spec"]["trainer"]["resourcesPerNode"]
    command = stored["spec"]["trainer"]["command"]
    assert command[:2] == ["bash", "-c"]
    assert f"exec torchrun /tmp/trainyard/train_{name}.py" in command[2]


async def test_builtin_trainer_submits_torchtune_overrides(client: TrainerClient, kube: KubeClient) -> None:
    for document in yaml.safe_load_all((Path(__file__).parent / "fixtures_torchtune.yaml").read_text()):
        await kube.create(document)
    config = TorchTuneConfig(dtype=DataType.BF16, epochs=2, num_nodes=1)
    initializer = Initializer(dataset=HuggingFaceDatasetInitializer(storage_uri="hf://tatsu-lab/alpaca/data"))
    name = await call(
        client.train, runtime="torchtune-llama3.2-1b", initializer=initializer, trainer=BuiltinTrainer(config)
    )
    stored = await kube.get("TrainJob", name, "default")
    expected = build_trainjob(name, "torchtune-llama3.2-1b", "torchtune", BuiltinTrainer(config), initializer)
    # what Trainer's CRD defaults, as the API server stores it
    defaults = {"managedBy": "trainer.kubeflow.org/trainjob-controller", "suspend": False}
    runtime_ref = {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
        **expected["spec"]["runtimeRef"],
    }
    assert stored["spec"] == {**defaults, **expected["spec"], "runtimeRef": runtime_ref}
    assert stored["spec"]["trainer"]["args"][:2] == ["dtype=bf16", "epochs=2"]
    with pytest.raises(ValueError, match="needs a torchtune runtime"):
        await call(client.train, runtime="torch-distributed", trainer=BuiltinTrainer(config))


async def test_the_shipped_function_runs_from_the_trainer_command(
    client: TrainerClient, kube: KubeClient, tmp_path: Path
) -> None:
    trainer = CustomTrainer(func=say_hello, func_args={"greeting": "hello 'quoted' $HOME", "times": 2})
    name = await call(client.train, runtime="plain-python", trainer=trainer)
    command = (await kube.get("TrainJob", name, "default"))["spec"]["trainer"]["command"]
    # What the container runs: bash writes the function to a file and execs `python <file>`.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    ran = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, env=env, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["hello 'quoted' $HOME from the trainer"] * 2
    Path(f"/tmp/trainyard/train_{name}.py").unlink()


async def test_status_and_steps_follow_conditions_and_pods(client: TrainerClient, kube: KubeClient) -> None:
    name = await call(client.train, runtime="torch-distributed", trainer=CustomTrainer(func=say_hello, num_nodes=2))
    job = await call(client.get_job, name)
    assert (job.status, job.steps, job.num_nodes) == ("Created", [], 2)
    await set_condition(kube, name, "Suspended", "TrainJob is suspended")
    assert (await call(client.get_job, name)).message == "TrainJob is suspended"

    await add_pod(kube, node_pod(name, 1, "Running"))
    await add_pod(kube, node_pod(name, 0, "Pending"))
    await add_pod(kube, node_pod("someone-else", 0, "Running"))
    job = await call(client.get_job, name)
    assert [(s.name, s.status, s.pod_name) for s in job.steps] == [
        ("node-0", "Pending", f"{name}-node-0-0-abcde"),
        ("node-1", "Running", f"{name}-node-0-1-abcde"),
    ]
    assert (job.steps[0].device, job.steps[0].device_count) == ("gpu", "2")
    assert job.status == "Created", "one node still pending"

    pending = await kube.get("Pod", f"{name}-node-0-0-abcde", "default")
    pending["status"] = {"phase": "Running"}
    await kube.replace(pending, status=True)
    assert (await call(client.get_job, name)).status == "Running"

    await set_condition(kube, name, "Complete", "jobset completed successfully")
    done = await call(client.wait_for_job_status, name, {"Complete"}, 5, 0.05)
    assert (done.status, done.message) == ("Complete", "jobset completed successfully")


async def test_mpi_launcher_is_node_zero_and_initializers_come_first(client: TrainerClient, kube: KubeClient) -> None:
    name = await call(client.train, runtime="torch-distributed", trainer=CustomTrainer(func=say_hello))
    await add_pod(kube, node_pod(name, 0, "Running"))
    await add_pod(kube, node_pod(name, 0, "Running", replicated_job="launcher"))
    await add_pod(kube, node_pod(name, 0, "Succeeded", replicated_job="dataset-initializer"))
    steps = (await call(client.get_job, name)).steps
    assert [s.name for s in steps] == ["dataset-initializer", "node-0", "node-1"]
    assert steps[1].pod_name == f"{name}-launcher-0-0-abcde"


async def test_wait_fails_on_failure_and_times_out(client: TrainerClient, kube: KubeClient) -> None:
    name = await call(client.train, runtime="plain-python", trainer=CustomTrainer(func=say_hello))
    with pytest.raises(TimeoutError, match=r"did not reach \['Complete'\] in 0.2s \(now Created\)"):
        await call(client.wait_for_job_status, name, {"Complete"}, 0.2, 0.05)
    with pytest.raises(ValueError, match="must be a subset"):
        await call(client.wait_for_job_status, name, {"Done"}, 1, 0.05)
    await set_condition(kube, name, "Failed", "jobset failed due to one or more job failures")
    with pytest.raises(RuntimeError, match="is Failed: jobset failed due to one or more job failures"):
        await call(client.wait_for_job_status, name, {"Complete"}, 5, 0.05)
    assert (await call(client.wait_for_job_status, name, {"Failed"}, 5, 0.05)).status == "Failed"


async def test_list_filters_by_runtime_and_delete_removes(client: TrainerClient) -> None:
    torch_job = await call(client.train, runtime="torch-distributed", trainer=CustomTrainer(func=say_hello))
    plain_job = await call(client.train, runtime="plain-python", trainer=CustomTrainer(func=say_hello))
    assert {j.name for j in await call(client.list_jobs)} == {torch_job, plain_job}
    plain = await call(client.get_runtime, "plain-python")
    assert [j.name for j in await call(client.list_jobs, plain)] == [plain_job]
    await call(client.delete_job, plain_job)
    assert [j.name for j in await call(client.list_jobs)] == [torch_job]
    with pytest.raises(ValueError, match=f"reading TrainJob '{plain_job}': not found in namespace 'default'"):
        await call(client.get_job, plain_job)
    with pytest.raises(ValueError, match="not found"):
        await call(client.delete_job, plain_job)


async def test_runtimes_trainer_client_takes_the_config(fake_api: FakeApi, kube: KubeClient) -> None:
    plain = RuntimesTrainerClient(KubernetesBackendConfig(kubeconfig=fake_api.kubeconfig))
    assert isinstance(plain.backend, KubernetesBackend)
    try:
        assert "plain-python" in {r.name for r in await call(plain.list_runtimes)}
    finally:
        await call(plain.backend.close)
    with pytest.raises(TypeError, match="build_backend"):
        RuntimesTrainerClient(object())  # type: ignore[arg-type]


async def test_a_missing_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    with (
        TrainerClient(KubernetesBackendConfig(kubeconfig=tmp_path / "absent")) as broken,
        pytest.raises(ValueError, match=r"kubeconfig .*absent does not exist"),
    ):
        await call(broken.list_runtimes)


# ------------------------------------------------------------------------ logs
# The fake API server serves no pods/{name}/log; a small proxy in front of it answers the log
# requests (as the kubelet would through the API server) and forwards everything else.

LOGS = {"container=node": ["epoch 1 loss 0.9", "epoch 2 loss 0.5", "done"]}


@pytest.fixture
async def log_proxy(fake_api: FakeApi, tmp_path: Path) -> AsyncIterator[tuple[Path, list[str]]]:
    requests: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path.endswith("/log"):
            requests.append(f"{request.path}?{request.query_string}")
            if request.query.get("container") != "node":
                return web.json_response({"kind": "Status", "code": 400, "reason": "BadRequest"}, status=400)
            response = web.StreamResponse(headers={"Content-Type": "text/plain"})
            await response.prepare(request)
            for line in LOGS["container=node"]:
                await response.write(line.encode() + b"\n")
                if request.query.get("follow") == "true":
                    await asyncio.sleep(0.01)  # a followed log arrives over time
            await response.write_eof()
            return response
        async with (
            ClientSession() as session,
            session.request(
                request.method,
                fake_api.url + request.path_qs,
                headers={k: v for k, v in request.headers.items() if k.lower() not in {"host", "content-length"}},
                data=await request.read(),
            ) as upstream,
        ):
            return web.Response(status=upstream.status, body=await upstream.read(), content_type=upstream.content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    config = yaml.safe_load(fake_api.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{port}"
    kubeconfig = tmp_path / "proxy-kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    try:
        yield kubeconfig, requests
    finally:
        await runner.cleanup()


async def test_logs_of_a_step_plain_and_followed(kube: KubeClient, log_proxy: tuple[Path, list[str]]) -> None:
    kubeconfig, requests = log_proxy
    with TrainerClient(KubernetesBackendConfig(kubeconfig=kubeconfig)) as through_proxy:
        name = await call(through_proxy.train, runtime="plain-python", trainer=CustomTrainer(func=say_hello))
        await add_pod(kube, node_pod(name, 0, "Running"))
        lines = await call(lambda: list(through_proxy.get_job_logs(name)))
        assert lines == LOGS["container=node"]
        followed = await call(lambda: list(through_proxy.get_job_logs(name, follow=True)))
        assert followed == LOGS["container=node"]
        pod = f"{name}-node-0-0-abcde"
        assert requests == [
            f"/api/v1/namespaces/default/pods/{pod}/log?container=node",
            f"/api/v1/namespaces/default/pods/{pod}/log?container=node&follow=true",
        ]
        with pytest.raises(ValueError, match=r"has no step 'node-3'; its steps: node-0"):
            await call(lambda: list(through_proxy.get_job_logs(name, step="node-3")))


async def test_a_pod_not_yet_on_a_node_has_an_empty_log(client: TrainerClient, kube: KubeClient) -> None:
    """As kube-apiserver answers for a pod no node runs yet: an empty log, not an error."""
    name = await call(client.train, runtime="plain-python", trainer=CustomTrainer(func=say_hello))
    await add_pod(kube, node_pod(name, 0, "Pending"))
    assert await call(lambda: list(client.get_job_logs(name))) == []


@pytest.mark.parametrize("annotated", [True, False], ids=["kwok-annotation", "kwoks-answer"])
async def test_logs_of_a_pod_on_a_simulated_node_say_so_in_one_line(
    client: TrainerClient, kube: KubeClient, annotated: bool
) -> None:
    """KWOK's fake kubelet runs no container: no log on a real KWOK cluster either, and no error.
    Known by the node's annotation, or else by KWOK's answer ("no logs found for container")."""
    annotations = {"kwok.x-k8s.io/node": "fake"} if annotated else {}
    await kube.create(NodeBuilder("gpu-node-7").annotations(**annotations).doc())
    name = await call(client.train, runtime="plain-python", trainer=CustomTrainer(func=say_hello))
    pod = node_pod(name, 0, "Running")
    pod["spec"]["nodeName"] = "gpu-node-7"
    await add_pod(kube, pod)
    lines = await call(lambda: list(client.get_job_logs(name)))
    pod_name = f"{name}-node-0-0-abcde"
    if annotated:
        expected = f"(no log: pod {pod_name} runs on simulated node gpu-node-7 (kwok.x-k8s.io/node=fake), where no container runs)"
    else:
        expected = f'(no log: pod {pod_name} runs on a simulated node: no logs found for container "node" in pod "default/{pod_name}")'
    assert lines == [expected]


async def test_a_client_left_open_is_closed_at_exit_without_warnings(fake_api: FakeApi, kube: KubeClient) -> None:
    """A script that never calls close() (nor uses ``with``) exits quietly: no unclosed session."""
    script = (
        "import gc, warnings\n"
        "warnings.simplefilter('always')\n"
        "from trainyard.sdk import KubernetesBackendConfig, TrainerClient\n"
        f"client = TrainerClient(KubernetesBackendConfig(kubeconfig={str(fake_api.kubeconfig)!r}))\n"
        "print(sorted(r.name for r in client.list_runtimes()))\n"
    )
    ran = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-X", "dev", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "['plain-python', 'torch-distributed']"
    assert "Unclosed" not in ran.stderr, ran.stderr
    assert "ResourceWarning" not in ran.stderr, ran.stderr

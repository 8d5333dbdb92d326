"""The rendered node container becomes torchrun-style rank processes with the right environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runtimes.api.trainer import ClusterTrainingRuntime, TrainJob
from runtimes.local.errors import LocalRunError
from runtimes.local.plan import LocalPlan, plan_from_jobset
from runtimes.local.run import find_runtime, load_trainjob_file, plan_trainjob
from runtimes.local.torchrun import node_processes, parse_torchrun

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "manifests" / "samples" / "trainjobs" / "local-ddp.yaml"


def sample_plan() -> LocalPlan:
    trainjob, inline = load_trainjob_file(SAMPLE)
    return plan_trainjob(trainjob, find_runtime(trainjob, inline))


def test_sample_renders_to_two_nodes_of_two_ranks_with_torchrun_env() -> None:
    plan = sample_plan()
    specs = node_processes(plan, 31234, {"PATH": "/bin"})
    assert [s.label for s in specs] == ["node-0/rank-0", "node-0/rank-1", "node-1/rank-2", "node-1/rank-3"]
    rank3 = specs[3]
    assert rank3.command == (
        sys.executable,
        "-m",
        "runtimes.examples.ddp_trainer",
        "--steps=30",
        "--checkpoint-every=5",
    )
    env = rank3.env
    assert (env["PET_NNODES"], env["PET_NPROC_PER_NODE"], env["PET_NODE_RANK"]) == ("2", "2", "1")
    assert (env["PET_MASTER_ADDR"], env["PET_MASTER_PORT"]) == ("127.0.0.1", "31234")
    assert (env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"]) == ("3", "1", "4", "2")
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["GROUP_RANK"]) == ("127.0.0.1", "31234", "1")
    assert env["PATH"] == "/bin"


def test_explicit_torchrun_options_win_over_pet_env() -> None:
    parsed = parse_torchrun(("torchrun", "--nproc_per_node=3", "--nnodes", "1", "train.py", "--lr", "1"))
    assert parsed is not None
    assert parsed.options == {"--nproc-per-node": "3", "--nnodes": "1"}
    assert parsed.program == ("train.py", "--lr", "1")
    assert parse_torchrun(("python", "train.py")) is None
    assert parse_torchrun(("python", "-m", "torch.distributed.run", "-m", "pkg.mod")) is not None


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (("torchrun", "--bogus", "x.py"), "not supported"),
        (("torchrun", "--nnodes"), "needs a value"),
        (("torchrun", "--standalone"), "names no training script"),
    ],
)
def test_bad_torchrun_commands_are_explained(command: tuple[str, ...], message: str) -> None:
    with pytest.raises(LocalRunError, match=message):
        parse_torchrun(command)


def test_mpi_runtime_is_refused_with_a_reason() -> None:
    runtime_file = ROOT / "manifests" / "runtimes" / "deepspeed_distributed.yaml"
    import yaml

    runtime = ClusterTrainingRuntime.model_validate(yaml.safe_load(runtime_file.read_text()))
    trainjob = TrainJob.model_validate(
        {
            "metadata": {"name": "mpi", "namespace": "default"},
            "spec": {"runtimeRef": {"name": runtime.metadata.name}, "trainer": {"numNodes": 2}},
        }
    )
    with pytest.raises(LocalRunError, match="MPI runtimes"):
        plan_trainjob(trainjob, runtime)


def test_unknown_replicated_job_is_refused() -> None:
    jobset = {
        "metadata": {"name": "j"},
        "spec": {"replicatedJobs": [{"name": "sidecar", "template": {"spec": {"template": {"spec": {}}}}}]},
    }
    with pytest.raises(LocalRunError, match="'sidecar' of the runtime has no local equivalent"):
        plan_from_jobset(jobset)

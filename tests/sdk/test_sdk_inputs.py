"""Bad SDK inputs are refused at ``train()`` with a message naming the field; good ones still ship.

Both backends go through ``runtimes.sdk.inputs``: the local backend here, and the Kubernetes
backend's ``trainjob_manifest`` (which needs no cluster) below.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runtimes.api.trainer import TrainJob
from runtimes.local.run import builtin_runtimes
from runtimes.render import render_trainjob
from runtimes.sdk import (
    BuiltinTrainer,
    CustomTrainer,
    LocalBackendConfig,
    Runtime,
    RuntimeTrainer,
    TorchTuneConfig,
    TrainerClient,
)
from runtimes.sdk.trainjobs import build_trainjob, entrypoint_source
from trainyard.sdk import KubernetesBackend, KubernetesBackendConfig


def module_level(greeting: str, times: int) -> None:
    for index in range(times):
        print(f"{greeting} {index}")


def make_closure() -> Callable[[], None]:
    secret = 42

    def uses_secret() -> None:
        print(secret)

    return uses_secret


class Model:
    def fit(self) -> None:
        print("fit")


async def async_train() -> None:
    print("async")


BAD_INPUTS: list[Any] = [
    pytest.param(
        lambda: CustomTrainer(func=module_level, resources_per_node={"gpus": 1}),
        r"CustomTrainer\.resources_per_node: unknown resource 'gpus'; did you mean 'gpu'\?.*cpu, memory, gpu",
        id="gpus-alias",
    ),
    pytest.param(
        lambda: TorchTuneConfig(resources_per_node={"cpus": 4}),
        r"TorchTuneConfig\.resources_per_node: unknown resource 'cpus'; did you mean 'cpu'\?",
        id="torchtune-cpus-alias",
    ),
    pytest.param(
        lambda: CustomTrainer(func=module_level, resources_per_node={"memory": "lots"}),
        r"CustomTrainer\.resources_per_node\['memory'\]: 'lots' is not a Kubernetes quantity",
        id="bad-quantity",
    ),
    pytest.param(
        lambda: CustomTrainer(func=module_level, resources_per_node={"gpu": -1}),
        r"CustomTrainer\.resources_per_node\['gpu'\]: -1 is negative",
        id="negative-quantity",
    ),
    pytest.param(
        lambda: CustomTrainer(func=lambda: print("hi")),
        r"CustomTrainer\.func: a lambda cannot be shipped.*define it with `def` at module level",
        id="lambda",
    ),
    pytest.param(
        lambda: CustomTrainer(func=make_closure()),
        r"CustomTrainer\.func: 'make_closure\.<locals>\.uses_secret' is a closure over local variable\(s\) "
        r"secret.*module level",
        id="closure",
    ),
    pytest.param(
        lambda: CustomTrainer(func=print),
        r"CustomTrainer\.func: 'print' is a builtin with no Python source.*module level",
        id="builtin",
    ),
    pytest.param(
        lambda: CustomTrainer(func=Model().fit),
        r"CustomTrainer\.func: 'Model\.fit' is a bound method.*module level",
        id="bound-method",
    ),
    pytest.param(
        lambda: CustomTrainer(func=functools.partial(module_level, "hi")),
        r"CustomTrainer\.func must be a Python function, got partial.*func_args",
        id="partial",
    ),
    pytest.param(
        lambda: CustomTrainer(func=async_train),
        r"CustomTrainer\.func: 'async_train' is async",
        id="async",
    ),
]


@pytest.mark.parametrize(("build", "message"), BAD_INPUTS)
def test_bad_inputs_are_refused_naming_the_field(build: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


@pytest.fixture
def client(tmp_path: Path) -> TrainerClient:
    return TrainerClient(LocalBackendConfig(root=tmp_path))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("func", lambda: None, r"CustomTrainer\.func: a lambda"),
        ("func", make_closure(), r"closure over local variable\(s\) secret"),
        ("func", len, r"'len' is a builtin"),
        ("resources_per_node", {"gpus": 1}, r"unknown resource 'gpus'"),
    ],
    ids=["lambda", "closure", "builtin", "gpus-alias"],
)
def test_local_train_refuses_a_trainer_changed_after_construction(
    client: TrainerClient, tmp_path: Path, field: str, value: object, message: str
) -> None:
    trainer = CustomTrainer(func=module_level, func_args={"greeting": "hi", "times": 1})
    setattr(trainer, field, value)
    with pytest.raises(ValueError, match=message):
        client.train(trainer=trainer)
    assert client.list_jobs() == []
    assert not (tmp_path / "jobs").exists() or list((tmp_path / "jobs").iterdir()) == []


def test_kubernetes_backend_refuses_the_same_function() -> None:
    backend = KubernetesBackend(KubernetesBackendConfig())
    try:
        runtime = Runtime("torch-distributed", RuntimeTrainer("CustomTrainer", "torch"))
        trainer = CustomTrainer(func=module_level)
        trainer.func = make_closure()
        with pytest.raises(ValueError, match=r"CustomTrainer\.func: .* closure over local variable\(s\) secret"):
            backend.trainjob_manifest("job", runtime, None, trainer)
        trainer.func = module_level
        trainer.resources_per_node = {"GPU": 1}
        manifest = backend.trainjob_manifest("job", runtime, None, trainer)
    finally:
        backend.close()
    assert manifest["spec"]["trainer"]["resourcesPerNode"]["limits"] == {"nvidia.com/gpu": "1"}
    assert "def module_level(greeting: str, times: int) -> None:" in manifest["spec"]["trainer"]["command"][2]


def test_aliases_map_to_kubernetes_names_in_the_rendered_trainjob(tmp_path: Path) -> None:
    trainer = CustomTrainer(
        func=module_level,
        num_nodes=2,
        resources_per_node={"gpu": 1, "CPU": "500m", "memory": "4Gi", "ephemeral-storage": "1Gi"},
    )
    manifest = build_trainjob("aliases", "torch-distributed", "torch", trainer, script_path=tmp_path / "t.py")
    expected = {"nvidia.com/gpu": "1", "cpu": "500m", "memory": "4Gi", "ephemeral-storage": "1Gi"}
    assert manifest["spec"]["trainer"]["resourcesPerNode"] == {"requests": expected, "limits": expected}
    runtime = next(r for r in builtin_runtimes() if r.metadata.name == "torch-distributed")
    jobset = render_trainjob(TrainJob.model_validate(manifest), runtime).jobset.to_dict()
    node = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert node["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert node["resources"]["requests"]["memory"] == "4Gi"
    assert "gpu" not in node["resources"]["limits"]


def test_full_resource_names_pass_through() -> None:
    config = TorchTuneConfig(resources_per_node={"amd.com/gpu": 2, "hugepages-2Mi": "1Gi"})
    manifest = build_trainjob("tune", "torchtune-llama3.2-1b", "torchtune", BuiltinTrainer(config))
    assert manifest["spec"]["trainer"]["resourcesPerNode"]["limits"] == {"amd.com/gpu": "2", "hugepages-2Mi": "1Gi"}


def test_a_module_level_function_is_shipped_and_runs(tmp_path: Path) -> None:
    source = entrypoint_source(CustomTrainer(func=module_level, func_args={"greeting": "hello", "times": 2}))
    script = tmp_path / "entry.py"
    script.write_text(source)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["hello 0", "hello 1"]

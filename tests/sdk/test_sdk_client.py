"""TrainerClient with the local backend: a real 2-node DDP run from a Python function."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runtimes.api.trainer import ClusterTrainingRuntime, TrainJob
from runtimes.render import render_trainjob
from runtimes.sdk import (
    BuiltinTrainer,
    CustomTrainer,
    DataType,
    HuggingFaceDatasetInitializer,
    Initializer,
    LocalBackendConfig,
    LoraConfig,
    TorchTuneConfig,
    TrainerClient,
)
from runtimes.sdk.trainjobs import build_trainjob, entrypoint_source

HERE = Path(__file__).resolve().parent
TORCHTUNE_RUNTIME = HERE / "fixtures_torchtune.yaml"


def ddp_train(steps: int) -> None:
    from runtimes.examples.ddp_trainer import train

    result = train(steps=steps, checkpoint_every=2)
    print(f"sdk rank {result.rank}: first loss {result.first_loss:.4f} last loss {result.last_loss:.4f}")


@pytest.fixture
def client(tmp_path: Path) -> TrainerClient:
    return TrainerClient(LocalBackendConfig(root=tmp_path, runtime_files=[TORCHTUNE_RUNTIME]))


def test_custom_trainer_trains_two_nodes_locally(client: TrainerClient) -> None:
    trainer = CustomTrainer(func=ddp_train, func_args={"steps": 6}, num_nodes=2, resources_per_node={"cpu": 2})
    name = client.train(trainer=trainer)
    try:
        job = client.wait_for_job_status(name, timeout=90, polling_interval=0.2)
    finally:
        logs = "\n".join(client.get_job_logs(name, step=None))
    assert job.status == "Complete", logs
    assert job.num_nodes == 2
    assert [s.name for s in job.steps] == ["node-0", "node-1"]
    assert job.trainer_status is not None
    assert job.trainer_status["progressPercentage"] == 100
    for rank in range(4):
        assert f"/rank-{rank}] sdk rank {rank}: first loss" in logs
    found = re.search(r"sdk rank 0: first loss (\S+) last loss (\S+)", logs)
    assert found is not None
    first, last = float(found[1]), float(found[2])
    assert last < first
    node1 = list(client.get_job_logs(name, step="node-1", follow=True))
    assert any(line.startswith("[node-1/rank-3]") for line in node1)
    assert [j.name for j in client.list_jobs()] == [name]
    client.delete_job(name)
    assert client.list_jobs() == []


def test_failed_job_raises_from_wait(client: TrainerClient) -> None:
    def crash() -> None:
        import sys

        sys.exit(3)

    name = client.train(trainer=CustomTrainer(func=crash, num_nodes=1, resources_per_node={"cpu": 1}))
    with pytest.raises(RuntimeError, match="exited with code 3"):
        client.wait_for_job_status(name, timeout=60, polling_interval=0.2)
    assert client.get_job(name).status == "Failed"


def test_bad_input_is_refused_before_anything_runs(client: TrainerClient) -> None:
    with pytest.raises(ValueError, match=r"spec\.trainer\.numNodes"):
        client.train(trainer=CustomTrainer(func=ddp_train, num_nodes=0))
    with pytest.raises(ValueError, match="runtime 'nope' not found"):
        client.train(runtime="nope", trainer=CustomTrainer(func=ddp_train))
    with pytest.raises(ValueError, match="JSON-serialisable"):
        client.train(trainer=CustomTrainer(func=ddp_train, func_args={"steps": object()}))
    with pytest.raises(ValueError, match="subset"):
        client.wait_for_job_status("x", status={"Done"})
    assert client.list_jobs() == []


def test_runtimes_are_listed_with_their_framework(client: TrainerClient) -> None:
    runtimes = {r.name: r for r in client.list_runtimes()}
    assert runtimes["torch-distributed"].trainer.framework == "torch"
    assert runtimes["torchtune-llama3.2-1b"].trainer.trainer_type == "BuiltinTrainer"
    assert client.get_runtime("torch-distributed").trainer.trainer_type == "CustomTrainer"


def test_entrypoint_calls_the_function_with_its_arguments() -> None:
    source = entrypoint_source(CustomTrainer(func=ddp_train, func_args={"steps": 3}))
    assert source.startswith("def ddp_train(steps: int) -> None:")
    assert "ddp_train(**json.loads('{\"steps\": 3}'))" in source


def test_torchtune_config_renders_the_torchtune_command() -> None:
    config = TorchTuneConfig(
        dtype=DataType.BF16,
        batch_size=4,
        epochs=2,
        num_nodes=2,
        peft_config=LoraConfig(lora_rank=8, lora_attn_modules=["q_proj", "v_proj"]),
        resources_per_node={"gpu": 2},
    )
    initializer = Initializer(dataset=HuggingFaceDatasetInitializer("hf://tatsu-lab/alpaca/data/train.json"))
    manifest = build_trainjob("tune", "torchtune-llama3.2-1b", "torchtune", BuiltinTrainer(config), initializer)
    trainer = manifest["spec"]["trainer"]
    assert trainer["command"] == ["tune", "run"]
    assert trainer["args"] == [
        "dtype=bf16",
        "batch_size=4",
        "epochs=2",
        "dataset.data_files=/workspace/dataset/data/train.json",
        "model.lora_rank=8",
        "model.lora_attn_modules=[q_proj,v_proj]",
    ]
    assert trainer["resourcesPerNode"]["limits"] == {"nvidia.com/gpu": "2"}


RUNTIME_PATHS = [
    "output_dir=/workspace/model/llama3_2/1B",
    "tokenizer.path=/workspace/model/Llama-3.2-1B-Instruct/original/tokenizer.model",
    "checkpointer.checkpoint_dir=/workspace/model/Llama-3.2-1B-Instruct",
]
RENDEZVOUS = "--rdzv_endpoint=tune-node-0-0.tune:29500"
LORA = LoraConfig(lora_rank=8, lora_attn_modules=["q_proj", "v_proj"])


def _render_torchtune(config: TorchTuneConfig) -> dict[str, object]:
    import yaml

    runtime = ClusterTrainingRuntime.model_validate(yaml.safe_load(TORCHTUNE_RUNTIME.read_text()))
    manifest = build_trainjob("tune", "torchtune-llama3.2-1b", "torchtune", BuiltinTrainer(config))
    rendered = render_trainjob(TrainJob.model_validate(manifest), runtime).jobset.to_dict()
    node: dict[str, object] = rendered["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    return node


@pytest.mark.parametrize(
    ("config", "expected_tail"),
    [
        pytest.param(
            TorchTuneConfig(batch_size=4),
            [RENDEZVOUS, "full_finetune_distributed", "--config", "llama3_2/1B_full"],
            id="runtime-default-2-gpus-full-distributed",
        ),
        pytest.param(
            TorchTuneConfig(resources_per_node={"gpu": 1}),
            # As in Trainer: one GPU picks the single-device recipe, and the runtime's
            # numProcPerNode 2 still asks for a rendezvous endpoint.
            [RENDEZVOUS, "full_finetune_single_device", "--config", "llama3_2/1B_full_single_device"],
            id="one-gpu-single-device",
        ),
        pytest.param(
            TorchTuneConfig(peft_config=LORA),
            [RENDEZVOUS, "lora_finetune_distributed", "--config", "llama3_2/1B_lora"],
            id="lora-distributed",
        ),
        pytest.param(
            TorchTuneConfig(peft_config=LORA, resources_per_node={"gpu": 1}),
            [RENDEZVOUS, "lora_finetune_single_device", "--config", "llama3_2/1B_lora_single_device"],
            id="lora-single-device",
        ),
        pytest.param(
            TorchTuneConfig(
                peft_config=LoraConfig(lora_attn_modules=["q_proj"], quantize_base=True), resources_per_node={"gpu": 1}
            ),
            [RENDEZVOUS, "lora_finetune_single_device", "--config", "llama3_2/1B_qlora_single_device"],
            id="qlora-single-device",
        ),
    ],
)
def test_torchtune_render_picks_recipe_config_and_rendezvous(config: TorchTuneConfig, expected_tail: list[str]) -> None:
    # Trainer's torch plugin: ``tune run`` + rendezvous (several processes) + recipe + config,
    # then the runtime's fixed paths; the user's settings stay config overrides in args.
    node = _render_torchtune(config)
    assert node["command"] == ["tune", "run", *expected_tail, *RUNTIME_PATHS]
    assert node["args"] == build_trainjob("tune", "torchtune-llama3.2-1b", "torchtune", BuiltinTrainer(config))["spec"][
        "trainer"
    ].get("args")


@pytest.mark.parametrize(
    ("config", "field", "words"),
    [
        pytest.param(
            TorchTuneConfig(num_nodes=2),
            "spec.trainer.numNodes",
            "must be 1 for the llama3_2/1B model",
            id="multi-node-small-model",
        ),
        pytest.param(
            TorchTuneConfig(peft_config=LoraConfig(lora_attn_modules=["q_proj"], quantize_base=True)),
            "spec.trainer.resourcesPerNode",
            "exactly 1 GPU per node",
            id="qlora-distributed-small-model",
        ),
    ],
)
def test_torchtune_render_rejects_unsupported_shapes(config: TorchTuneConfig, field: str, words: str) -> None:
    from runtimes.errors import RenderError

    with pytest.raises(RenderError) as raised:
        _render_torchtune(config)
    assert f"{field}: " in str(raised.value)
    assert words in str(raised.value)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: TorchTuneConfig(dtype="fp16"), "dtype 'fp16' is not supported"),  # type: ignore[arg-type]
        (lambda: TorchTuneConfig(epochs=0), "epochs must be a positive integer"),
        (lambda: HuggingFaceDatasetInitializer("s3://bucket/x"), "must start with hf://"),
        (
            lambda: build_trainjob("t", "torch-distributed", "torch", BuiltinTrainer(TorchTuneConfig())),
            "needs a torchtune runtime",
        ),
    ],
    ids=["dtype", "epochs", "hf-uri", "builtin-on-torch-runtime"],
)
def test_torchtune_and_initializer_validation(build: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()  # type: ignore[operator]


def test_builtin_trainer_is_not_run_locally(client: TrainerClient) -> None:
    with pytest.raises(ValueError, match="cannot run locally"):
        client.train(runtime="torchtune-llama3.2-1b", trainer=BuiltinTrainer(TorchTuneConfig()))

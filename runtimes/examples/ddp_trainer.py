"""The bundled example trainer: a small MLP on synthetic data with DistributedDataParallel.

Run it under the local launcher (``trainyard run manifests/samples/trainjobs/local-ddp.yaml
--local``), under torchrun (``torchrun --nproc-per-node 2 -m runtimes.examples.ddp_trainer``),
or call :func:`train` from a ``CustomTrainer`` function. It reads the torchrun environment
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT).

Device: ``--device auto`` (the default) trains on CUDA when ``torch.cuda.is_available()``, each
rank on ``cuda:{LOCAL_RANK % device_count}``, over nccl when every local rank has a GPU of its own
(LOCAL_WORLD_SIZE <= device_count) and over gloo otherwise (nccl refuses two ranks on one GPU;
gloo takes CUDA tensors); else on the CPU over gloo. Each rank prints ``rank R/W on DEVICE
(BACKEND)``. Checkpoints and the final model are written with CPU tensors, so they load anywhere.

What it shows:
- the loss decreases (the target is a fixed random linear map the MLP can learn);
- a checkpoint lands in ``<output>/checkpoints/`` every ``checkpoint_every`` steps, and a
  restarted job resumes from the latest one, so the step count continues;
- metrics lines (:mod:`runtimes.examples.metrics`) carry loss, samples/s and progress;
- the final model is written to ``<output>/model.pt``.

Fault injection, for tests of the launcher's failure policy (all optional):
``TRAINYARD_FAIL_AT_STEP`` (the step at whose start a rank exits), ``TRAINYARD_FAIL_RANK``
(global rank, default 0), ``TRAINYARD_FAIL_ATTEMPT`` (restart attempt to fail in, default 0;
``all`` fails every attempt), ``TRAINYARD_FAIL_EXIT_CODE`` (default 1). The attempt number is
read from ``TRAINYARD_RESTART_ATTEMPT`` (set by the local launcher) or
``TORCHELASTIC_RESTART_COUNT`` (set by torchrun).

torch is imported inside the functions so that importing this module stays cheap.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtimes.examples.metrics import format_metrics_line

if TYPE_CHECKING:
    import torch

FEATURES = 16
HIDDEN = 32
CHECKPOINT_DIR = "checkpoints"
FINAL_MODEL = "model.pt"
DEVICES = ("auto", "cpu", "cuda")


class DeviceUnavailable(RuntimeError):
    """``--device cuda`` where this process sees no usable GPU."""


@dataclass(frozen=True)
class Placement:
    """Where one rank trains: its torch device and the process-group backend that suits it."""

    device: torch.device
    backend: str  # nccl | gloo


@dataclass(frozen=True)
class TrainResult:
    """What one rank saw: the step it started from, the last step, and the losses."""

    rank: int
    world_size: int
    start_step: int
    final_step: int
    first_loss: float
    last_loss: float
    output_dir: str


@dataclass(frozen=True)
class FaultInjection:
    step: int
    rank: int
    attempt: str
    exit_code: int

    @classmethod
    def from_env(cls) -> FaultInjection | None:
        step = os.environ.get("TRAINYARD_FAIL_AT_STEP")
        if not step:
            return None
        return cls(
            step=int(step),
            rank=int(os.environ.get("TRAINYARD_FAIL_RANK", "0")),
            attempt=os.environ.get("TRAINYARD_FAIL_ATTEMPT", "0"),
            exit_code=int(os.environ.get("TRAINYARD_FAIL_EXIT_CODE", "1")),
        )

    def fires(self, step: int, rank: int, attempt: int) -> bool:
        attempt_matches = self.attempt == "all" or int(self.attempt) == attempt
        return step == self.step and rank == self.rank and attempt_matches


def _restart_attempt() -> int:
    value = os.environ.get("TRAINYARD_RESTART_ATTEMPT") or os.environ.get("TORCHELASTIC_RESTART_COUNT")
    return int(value) if value else 0


def _latest_checkpoint(output_dir: Path) -> Path | None:
    checkpoints = sorted((output_dir / CHECKPOINT_DIR).glob("step-*.pt"))
    return checkpoints[-1] if checkpoints else None


def _save_atomically(obj: Any, path: Path) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    torch.save(obj, partial)
    partial.replace(path)  # a crash mid-write never leaves a truncated checkpoint behind


def _batch(
    step: int, rank: int, world_size: int, batch_size: int, seed: int, device: torch.device
) -> tuple[torch.Tensor, ...]:
    """A deterministic batch per (step, rank), drawn on the CPU (the same numbers on every device),
    then moved to ``device``: a restarted job sees the same data."""
    import torch

    target = torch.Generator().manual_seed(seed)
    weights = torch.randn(FEATURES, 1, generator=target)
    generator = torch.Generator().manual_seed(seed * 1_000_003 + step * world_size + rank)
    inputs = torch.randn(batch_size, FEATURES, generator=generator)
    labels = inputs @ weights + 0.01 * torch.randn(batch_size, 1, generator=generator)
    return inputs.to(device), labels.to(device)


def choose_placement(requested: str = "auto") -> Placement:
    """The device and backend of this rank for ``requested`` (auto | cpu | cuda)."""
    import torch
    import torch.distributed as dist

    if requested not in DEVICES:
        raise DeviceUnavailable(f"--device {requested!r} is not accepted: use one of {', '.join(DEVICES)}")
    if requested == "cpu" or (requested == "auto" and not torch.cuda.is_available()):
        return Placement(torch.device("cpu"), "gloo")
    if not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise DeviceUnavailable(
            f"--device cuda, but torch.cuda.is_available() is False here (torch {torch.__version__}, "
            f"CUDA build {torch.version.cuda}, CUDA_VISIBLE_DEVICES={visible!r}): "
            "give the job GPUs (nvidia.com/gpu) or train with --device cpu"
        )
    count = torch.cuda.device_count()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    # nccl needs a GPU per rank; ranks that must share a GPU talk over gloo, which takes CUDA tensors.
    own_gpu = local_world_size <= count and dist.is_nccl_available()
    return Placement(torch.device(f"cuda:{local_rank % count}"), "nccl" if own_gpu else "gloo")


def _on_cpu(value: Any) -> Any:
    """``value`` (a state dict, nested) with every tensor copied to the CPU: loadable without a GPU."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: _on_cpu(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_on_cpu(item) for item in value)
    return value


def _join_process_group(rank: int, world_size: int, placement: Placement) -> bool:
    """Start the process group when launched as a rank (MASTER_ADDR set); whether this call started it."""
    import torch.distributed as dist

    if dist.is_initialized() or "MASTER_ADDR" not in os.environ:
        return False
    if placement.backend == "nccl":
        # Bound to this rank's GPU, so collectives (barrier included) never guess a device by rank.
        dist.init_process_group("nccl", rank=rank, world_size=world_size, device_id=placement.device)
    else:
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
    return True


def _checkpoint(
    step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer, out: Path, rank: int, distributed: bool
) -> None:
    """Rank 0 writes the checkpoint; every rank waits for it, so none runs ahead of a restart point."""
    import torch.distributed as dist

    if rank == 0:
        _save_atomically(
            {"step": step, "model": _on_cpu(model.state_dict()), "optimizer": _on_cpu(optimizer.state_dict())},
            out / CHECKPOINT_DIR / f"step-{step:06d}.pt",
        )
    if distributed:
        dist.barrier()


def _resume(model: torch.nn.Module, optimizer: torch.optim.Optimizer, out: Path, rank: int) -> int:
    """Load the latest checkpoint under ``out`` into the model and optimizer; the step to start at.

    The checkpoint is read onto the CPU; ``load_state_dict`` copies it to wherever the model and
    the optimizer's parameters live."""
    import torch

    latest = _latest_checkpoint(out)
    if latest is None:
        return 1
    state = torch.load(latest, map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if rank == 0:
        print(f"resumed from checkpoint {latest.name} at step {state['step']}", flush=True)
    return int(state["step"]) + 1


def _step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: torch.nn.Module,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    world_size: int | None,
    device: torch.device,
) -> float:
    """One optimizer step; the loss, averaged over the ranks when ``world_size`` is given (distributed)."""
    import torch
    import torch.distributed as dist

    optimizer.zero_grad()
    loss = loss_fn(model(inputs), labels)
    loss.backward()
    optimizer.step()
    loss_value = float(loss.detach())
    if world_size is None:
        return loss_value
    averaged = torch.tensor([loss_value], device=device)  # nccl reduces CUDA tensors only
    dist.all_reduce(averaged)
    return float(averaged) / world_size


def _metrics_line(step: int, steps: int, loss: float, samples_per_step: int, seconds_per_step: float) -> str:
    """The progress line Trainer's progress tracking reads."""
    return format_metrics_line(
        {
            "step": step,
            "total_steps": steps,
            "loss": round(loss, 6),
            "samples_per_second": round(samples_per_step / seconds_per_step, 1),
            "progress_percentage": int(100 * step / steps),
            "estimated_remaining_seconds": int((steps - step) * seconds_per_step),
        }
    )


def _prepare(
    seed: int, learning_rate: float, placement: Placement, out: Path, rank: int, distributed: bool
) -> tuple[torch.nn.Module, torch.nn.Module, torch.optim.Optimizer, int]:
    """The model on its device, its DDP wrapper, the optimizer, and the step to start at (resumed)."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(seed)  # the same initial weights on every rank and every device
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 1))
    model = model.to(placement.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    start_step = _resume(model, optimizer, out, rank)
    if not distributed:
        return model, model, optimizer, start_step
    device_ids = [placement.device.index] if placement.device.type == "cuda" else None
    return model, DistributedDataParallel(model, device_ids=device_ids), optimizer, start_step


def train(
    steps: int = 30,
    batch_size: int = 32,
    learning_rate: float = 0.05,
    checkpoint_every: int = 5,
    output_dir: str | None = None,
    seed: int = 0,
    step_delay: float = 0.0,
    device: str = "auto",
) -> TrainResult:
    """Train the example MLP with DDP on ``device`` (auto | cpu | cuda); resume from the latest checkpoint if any."""
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    placement = choose_placement(device)
    if placement.device.type == "cuda":
        torch.cuda.set_device(placement.device)  # nothing of this rank lands on another rank's GPU
    started_group = _join_process_group(rank, world_size, placement)
    distributed = dist.is_initialized()
    backend = dist.get_backend() if distributed else "no process group"
    print(f"rank {rank}/{world_size} on {placement.device} ({backend})", flush=True)
    out = Path(output_dir or os.environ.get("TRAINYARD_OUTPUT_DIR") or "output")
    fault = FaultInjection.from_env()
    attempt = _restart_attempt()
    model, ddp_model, optimizer, start_step = _prepare(seed, learning_rate, placement, out, rank, distributed)
    print(f"rank {rank}/{world_size} starting at step {start_step} (attempt {attempt})", flush=True)
    loss_fn = torch.nn.MSELoss()

    first_loss = last_loss = float("nan")
    window_start = time.perf_counter()
    for window_steps, step in enumerate(range(start_step, steps + 1), start=1):
        if fault is not None and fault.fires(step, rank, attempt):
            print(f"fault injection: rank {rank} exits with {fault.exit_code} at step {step}", flush=True)
            sys.stderr.flush()
            os._exit(fault.exit_code)  # a crash, not a clean exit: no teardown of the process group
        inputs, labels = _batch(step, rank, world_size, batch_size, seed, placement.device)
        reduce_over = world_size if distributed else None
        loss_value = _step(ddp_model, optimizer, loss_fn, inputs, labels, reduce_over, placement.device)
        first_loss = loss_value if step == start_step else first_loss
        last_loss = loss_value
        if step_delay:
            time.sleep(step_delay)
        if rank == 0:
            seconds_per_step = max(time.perf_counter() - window_start, 1e-9) / window_steps
            print(_metrics_line(step, steps, loss_value, batch_size * world_size, seconds_per_step), flush=True)
        if step % checkpoint_every == 0 or step == steps:
            _checkpoint(step, model, optimizer, out, rank, distributed)
    if rank == 0:
        _save_atomically(_on_cpu(model.state_dict()), out / FINAL_MODEL)
        print(f"final model written to {out / FINAL_MODEL}", flush=True)
    print(f"rank {rank}/{world_size} finished step {steps}, loss {last_loss:.6f}", flush=True)
    if started_group:
        # Every rank waits for rank 0's final write before tearing the group down: a rank that
        # leaves early closes its pairs under the others and gloo aborts them (exit 134).
        dist.barrier()
        dist.destroy_process_group()
    return TrainResult(rank, world_size, start_step, steps, first_loss, last_loss, str(out))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="The trainyard example DDP trainer.")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--checkpoint-every", type=int, default=5)
    parser.add_argument("--output-dir", default=None, help="default: $TRAINYARD_OUTPUT_DIR or ./output")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds to sleep after each step")
    parser.add_argument(
        "--device", choices=DEVICES, default="auto", help="auto (default): cuda when torch sees a GPU, else cpu"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        train(
            steps=args.steps,
            batch_size=args.batch_size,
            learning_rate=args.learning_rate,
            checkpoint_every=args.checkpoint_every,
            output_dir=args.output_dir,
            seed=args.seed,
            step_delay=args.step_delay,
            device=args.device,
        )
    except DeviceUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
- the final model is written to ``<output>/model.pt``;
- a non-finite loss (nan, inf) ends the run with exit code 3, as a careful trainer would: a job
  whose loss diverged is not a success;
- a restart that finds the final checkpoint already written trains nothing and reports that
  checkpoint's loss (the checkpoint records it).

Shutting down: every rank waits for the others (and rank 0's final write) at a barrier, drops the
DDP wrapper, then destroys the process group, so gloo's worker threads are joined on the main
thread while the interpreter is whole. A group left to the interpreter's teardown is destroyed
during finalization, and a gloo thread that then releases a tensor owned by Python is stopped by
the interpreter mid-destructor: ``terminate called without an active exception``, exit 134.

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
import contextlib
import gc
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runtimes.examples.checkpoints import Resumed, on_cpu, resume, save_atomically, write_checkpoint
from runtimes.examples.faults import FaultInjection, restart_attempt
from runtimes.examples.metrics import format_metrics_line

if TYPE_CHECKING:
    import torch

FEATURES = 16
HIDDEN = 32
FINAL_MODEL = "model.pt"
DEVICES = ("auto", "cpu", "cuda")
_LEFT_KEY = "trainyard/ranks-left"  # in the rendezvous store: how many ranks have torn down
_LEAVE_WAIT_SECONDS = 30.0


class DeviceUnavailable(RuntimeError):
    """``--device cuda`` where this process sees no usable GPU."""


class NonFiniteLoss(RuntimeError):
    """The loss became nan or infinite: training diverged (or its inputs are broken)."""


NON_FINITE_EXIT_CODE = 3


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


def _require_finite(loss: float, step: int, rank: int) -> None:
    if not math.isfinite(loss):
        raise NonFiniteLoss(
            f"rank {rank}: the loss is {loss} at step {step}: training diverged; lower --learning-rate "
            "or check the data, then restart (the job resumes from its last finite checkpoint)"
        )


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
) -> tuple[torch.nn.Module, torch.nn.Module, torch.optim.Optimizer, Resumed]:
    """The model on its device, its DDP wrapper, the optimizer, and where to start (resumed)."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(seed)  # the same initial weights on every rank and every device
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 1))
    model = model.to(placement.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    resumed = resume(model, optimizer, out, rank)
    if not distributed:
        return model, model, optimizer, resumed
    device_ids = [placement.device.index] if placement.device.type == "cuda" else None
    return model, DistributedDataParallel(model, device_ids=device_ids), optimizer, resumed


def _leave_process_group(rank: int, world_size: int) -> None:
    """Tear the process group down while the interpreter is whole (the DDP wrapper already dropped),
    rank 0 last.

    The barrier first: every rank is past its last collective and rank 0's final write, so no rank
    closes its gloo pairs under another. The collector then runs, so nothing of the DDP wrapper
    still holds the group, and ``destroy_process_group`` drops the last reference: the gloo
    backend joins its worker threads here, not during interpreter finalization (where a worker
    that releases a Python-owned tensor is stopped mid-destructor: exit 134). Rank 0 hosts the
    rendezvous store: it waits (a bounded while) until every other rank has torn down, so no rank
    is still tearing down against a store that is gone."""
    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()
    dist.barrier()
    gc.collect()
    if rank != 0:
        dist.destroy_process_group()
        store.add(_LEFT_KEY, 1)
        return
    with contextlib.suppress(RuntimeError):  # a rank that died meanwhile: leave after the bound
        deadline = time.monotonic() + _LEAVE_WAIT_SECONDS
        while store.add(_LEFT_KEY, 0) < world_size - 1 and time.monotonic() < deadline:
            time.sleep(0.01)
    dist.destroy_process_group()


@dataclass(frozen=True)
class _Run:
    """What every step of one rank's run needs to know."""

    rank: int
    world_size: int
    distributed: bool
    placement: Placement
    out: Path
    steps: int
    batch_size: int
    seed: int
    checkpoint_every: int
    step_delay: float
    fault: FaultInjection | None
    attempt: int


def _train_steps(
    run: _Run, model: torch.nn.Module, ddp_model: torch.nn.Module, optimizer: torch.optim.Optimizer, start_step: int
) -> tuple[float, float]:
    """Steps ``start_step``..``run.steps``: the first and the last loss (nan when none ran)."""
    import torch

    loss_fn = torch.nn.MSELoss()
    first_loss = last_loss = float("nan")
    window_start = time.perf_counter()
    for window_steps, step in enumerate(range(start_step, run.steps + 1), start=1):
        fault = run.fault
        if fault is not None and fault.fires(step, run.rank, run.attempt):
            print(f"fault injection: rank {run.rank} exits with {fault.exit_code} at step {step}", flush=True)
            sys.stderr.flush()
            os._exit(fault.exit_code)  # a crash, not a clean exit: no teardown of the process group
        inputs, labels = _batch(step, run.rank, run.world_size, run.batch_size, run.seed, run.placement.device)
        reduce_over = run.world_size if run.distributed else None
        loss_value = _step(ddp_model, optimizer, loss_fn, inputs, labels, reduce_over, run.placement.device)
        _require_finite(loss_value, step, run.rank)
        first_loss = loss_value if step == start_step else first_loss
        last_loss = loss_value
        if run.step_delay:
            time.sleep(run.step_delay)
        if run.rank == 0:
            seconds_per_step = max(time.perf_counter() - window_start, 1e-9) / window_steps
            samples = run.batch_size * run.world_size
            print(_metrics_line(step, run.steps, loss_value, samples, seconds_per_step), flush=True)
        if step % run.checkpoint_every == 0 or step == run.steps:
            write_checkpoint(step, loss_value, model, optimizer, run.out, run.rank, run.distributed)
    return first_loss, last_loss


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
    """Train the example MLP with DDP on ``device`` (auto | cpu | cuda); resume from the latest checkpoint if any.

    Raises ``NonFiniteLoss`` when the loss turns nan or infinite."""
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
    attempt = restart_attempt()
    run = _Run(
        rank,
        world_size,
        distributed,
        placement,
        out,
        steps,
        batch_size,
        seed,
        checkpoint_every,
        step_delay,
        FaultInjection.from_env(),
        attempt,
    )
    model, ddp_model, optimizer, resumed = _prepare(seed, learning_rate, placement, out, rank, distributed)
    print(f"rank {rank}/{world_size} starting at step {resumed.start_step} (attempt {attempt})", flush=True)
    if resumed.start_step > steps:
        # a restart after the last checkpoint (a crash at shutdown): nothing is left to train
        first_loss = last_loss = float("nan") if resumed.loss is None else resumed.loss
        print(f"rank {rank}/{world_size}: the checkpoint already holds step {steps}; nothing left to train", flush=True)
    else:
        first_loss, last_loss = _train_steps(run, model, ddp_model, optimizer, resumed.start_step)
    if rank == 0:
        save_atomically(on_cpu(model.state_dict()), out / FINAL_MODEL)
        print(f"final model written to {out / FINAL_MODEL}", flush=True)
    shown = "unknown (an older checkpoint)" if math.isnan(last_loss) else f"{last_loss:.6f}"
    print(f"rank {rank}/{world_size} finished step {steps}, loss {shown}", flush=True)
    del model, ddp_model, optimizer  # the DDP wrapper's reducer holds the process group
    if started_group:
        _leave_process_group(rank, world_size)
    return TrainResult(rank, world_size, resumed.start_step, steps, first_loss, last_loss, str(out))


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
    except NonFiniteLoss as error:
        print(f"error: {error}", file=sys.stderr)
        return NON_FINITE_EXIT_CODE
    return 0


if __name__ == "__main__":
    sys.exit(main())

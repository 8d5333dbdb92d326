"""The example trainer's checkpoints: written atomically by rank 0 with CPU tensors, read back on restart.

A checkpoint records the step, its loss, the model and the optimizer; a restart resumes at the
step after the latest one (``resume``), so the step count continues and a restart after the final
step trains nothing and still knows the loss it ended with.

torch is imported inside the functions so that importing this module stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

CHECKPOINT_DIR = "checkpoints"


def latest_checkpoint(output_dir: Path) -> Path | None:
    checkpoints = sorted((output_dir / CHECKPOINT_DIR).glob("step-*.pt"))
    return checkpoints[-1] if checkpoints else None


def save_atomically(obj: Any, path: Path) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    torch.save(obj, partial)
    partial.replace(path)  # a crash mid-write never leaves a truncated checkpoint behind


def on_cpu(value: Any) -> Any:
    """``value`` (a state dict, nested) with every tensor copied to the CPU: loadable without a GPU."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: on_cpu(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(on_cpu(item) for item in value)
    return value


def write_checkpoint(
    step: int,
    loss: float,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    out: Path,
    rank: int,
    distributed: bool,
) -> None:
    """Rank 0 writes the checkpoint (with the step's loss); every rank waits for it, so none runs
    ahead of a restart point."""
    import torch.distributed as dist

    if rank == 0:
        save_atomically(
            {
                "step": step,
                "loss": loss,
                "model": on_cpu(model.state_dict()),
                "optimizer": on_cpu(optimizer.state_dict()),
            },
            out / CHECKPOINT_DIR / f"step-{step:06d}.pt",
        )
    if distributed:
        dist.barrier()


@dataclass(frozen=True)
class Resumed:
    """Where training starts: the step, and the loss the checkpoint it resumed from recorded."""

    start_step: int
    loss: float | None  # None: no checkpoint, or one written before checkpoints held the loss


def resume(model: torch.nn.Module, optimizer: torch.optim.Optimizer, out: Path, rank: int) -> Resumed:
    """Load the latest checkpoint under ``out`` into the model and optimizer; where to start.

    The checkpoint is read onto the CPU; ``load_state_dict`` copies it to wherever the model and
    the optimizer's parameters live."""
    import torch

    latest = latest_checkpoint(out)
    if latest is None:
        return Resumed(1, None)
    state = torch.load(latest, map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if rank == 0:
        print(f"resumed from checkpoint {latest.name} at step {state['step']}", flush=True)
    loss = state.get("loss")
    return Resumed(int(state["step"]) + 1, None if loss is None else float(loss))

"""Kubeflow Trainer's controller as the launcher tests play it: the JobSet it renders for a resumed
TrainJob, with the TrainJob's runtime patches applied (``runtimes.render``, as Trainer renders)."""

from __future__ import annotations

from typing import Any

from launcher_support import runtime_doc

from runtimes.api.trainer import ClusterTrainingRuntime, TrainJob
from runtimes.render import render_trainjob


def trainer_renders(trainjob: dict[str, Any]) -> dict[str, Any]:
    """What Trainer's controller creates for the resumed TrainJob: its JobSet, runtime patches applied."""
    model = TrainJob.model_validate(trainjob)
    return render_trainjob(
        model, ClusterTrainingRuntime.model_validate(runtime_doc()), key_material=False
    ).jobset.to_dict()

"""How many overrides and patches a TrainJob may carry: checked before anything is rendered.

Each ``runtimePatches``, ``podTemplateOverrides`` or ``podSpecOverrides`` entry is one more
strategic merge over the runtime's template, for every job it targets. Trainer bounds
``runtimePatches`` (``MaxItems=16``) and a patch's ``replicatedJobs`` (``MaxItems=100``), but
not v2.1's ``podTemplateOverrides`` nor v2.0's ``podSpecOverrides``, the lists it replaced:
trainyard caps those as ``runtimePatches`` is capped, in its TrainJob CRD
(manifests/crds/trainer/trainjobs.yaml) and here, so that a TrainJob read from a file or served
by another CRD is held to the same bound. A job past a bound is refused with these errors alone,
before its runtime's template is merged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtimes.api.trainer import TrainJobSpec
from runtimes.errors import FieldError

MAX_RUNTIME_PATCHES = 16  # Trainer's MaxItems on spec.runtimePatches
MAX_POD_TEMPLATE_OVERRIDES = 16  # trainyard's cap: Trainer v2.1 sets none (as runtimePatches)
MAX_POD_SPEC_OVERRIDES = 16  # trainyard's cap: Trainer v2.0 sets none
MAX_TARGET_JOBS = 100  # as Trainer's MaxItems on a runtime patch's replicatedJobs

_ADVICE = {
    "runtimePatches": "each manager writes one entry; merge the patches of one manager into its entry",
    "podTemplateOverrides": "merge overrides that target the same jobs into one entry",
    "podSpecOverrides": "merge overrides that target the same jobs into one entry",
}


def _too_many(path: str, entries: Sequence[Any] | None, limit: int, advice: str) -> list[FieldError]:
    if entries is None or len(entries) <= limit:
        return []
    return [FieldError(path, f"{len(entries)} entries, more than the {limit} accepted: {advice}")]


def validate_trainjob_bounds(spec: TrainJobSpec) -> list[FieldError]:
    """Every list of ``spec`` that is longer than it may be (empty when all are within bounds)."""
    errors = _too_many("spec.runtimePatches", spec.runtime_patches, MAX_RUNTIME_PATCHES, _ADVICE["runtimePatches"])
    for field, overrides, limit in (
        ("podTemplateOverrides", spec.pod_template_overrides, MAX_POD_TEMPLATE_OVERRIDES),
        ("podSpecOverrides", spec.pod_spec_overrides, MAX_POD_SPEC_OVERRIDES),
    ):
        targets = [override.target_jobs for override in overrides or []]
        errors += _too_many(f"spec.{field}", overrides, limit, _ADVICE[field])
        for position, target_jobs in enumerate(targets[:limit]):
            errors += _too_many(
                f"spec.{field}[{position}].targetJobs", target_jobs, MAX_TARGET_JOBS, "name each replicated job once"
            )
    for position, patch in enumerate((spec.runtime_patches or [])[:MAX_RUNTIME_PATCHES]):
        template = patch.training_runtime_spec.template if patch.training_runtime_spec is not None else None
        jobs = template.spec.replicated_jobs if template is not None and template.spec is not None else None
        errors += _too_many(
            f"spec.runtimePatches[{position}].trainingRuntimeSpec.template.spec.replicatedJobs",
            jobs,
            MAX_TARGET_JOBS,
            "patch each replicated job once",
        )
    return errors

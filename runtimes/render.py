"""TrainJob + (Cluster)TrainingRuntime → JobSet, PodGroup, MPI Secret and hostfile ConfigMap.

``render_trainjob`` is what the controller, the local launcher and ``trainyard render`` call. It
validates first (the same rules the webhook applies, so a TrainJob that renders is one the
webhook admits), runs the plugin pipeline on the RuntimeInfo the validation built, and writes the
engine's placement, if any, into the JobSet.

Key material (the MPI SSH key pair) is generated only for a render whose Secrets will be created.
A caller that renders only to read the JobSet — the admission webhook deriving a TrainJob's pod
sets through ``scheduler.trainjob.workload_for_trainjob`` — asks for none with ``key_material=False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtimes.api.jobset import JobSet
from runtimes.api.podgroup import PODGROUP_KIND, PodGroup
from runtimes.api.trainer import AnyTrainingRuntime, TrainJob
from runtimes.errors import FieldError, RenderError
from runtimes.plugins.intree import pipeline_of
from runtimes.plugins.registry import PluginRegistry
from runtimes.pod_placement import PodPlacement, apply_placement, placement_errors
from runtimes.validation import check_trainjob, validate_runtime


@dataclass
class RenderedTrainJob:
    jobset: JobSet
    pod_group: PodGroup | None = None
    secrets: list[dict[str, Any]] = field(default_factory=list)
    config_maps: list[dict[str, Any]] = field(default_factory=list)

    def objects(self) -> list[dict[str, Any]]:
        """Every object as a Kubernetes dict: JobSet, PodGroup, Secrets, ConfigMaps."""
        rendered = [self.jobset.to_dict()]
        if self.pod_group is not None:
            rendered.append(self.pod_group.to_dict())
        return [*rendered, *self.secrets, *self.config_maps]


def render_trainjob(
    trainjob: TrainJob,
    runtime: AnyTrainingRuntime,
    placement: PodPlacement | None = None,
    *,
    registry: PluginRegistry | None = None,
    key_material: bool = True,
) -> RenderedTrainJob:
    """Render ``trainjob`` with ``runtime``; raises :class:`RenderError` naming every bad field.

    ``key_material=False`` renders everything but
    the Secrets of generated keys: for callers that read only the JobSet and PodGroup.
    """
    runtime_problems = validate_runtime(runtime)
    if runtime_problems:
        raise RenderError(f"{runtime.kind} {runtime.metadata.name!r}", runtime_problems)
    problems, info = check_trainjob(trainjob, runtime, registry=registry)
    if problems or info is None:
        raise RenderError(f"TrainJob {trainjob.metadata.name!r}", problems)

    info.key_material = key_material
    objects = pipeline_of(registry).build(info, trainjob)

    jobset_dict: dict[str, Any] | None = None
    rendered = RenderedTrainJob(jobset=JobSet())
    for obj in objects:
        kind = obj.get("kind")
        if kind == "JobSet":
            jobset_dict = obj
        elif kind == PODGROUP_KIND:
            rendered.pod_group = PodGroup.model_validate(obj)
        elif kind == "Secret":
            rendered.secrets.append(obj)
        elif kind == "ConfigMap":
            rendered.config_maps.append(obj)
    if jobset_dict is None:
        raise RenderError(
            f"TrainJob {trainjob.metadata.name!r}",
            [FieldError("spec.runtimeRef", "no runtime plugin built a JobSet; register the jobset plugin")],
        )
    if placement is not None:
        problems = placement_errors(jobset_dict, placement)
        if problems:
            raise RenderError(f"placement of TrainJob {trainjob.metadata.name!r}", problems)
        apply_placement(jobset_dict, placement)
    rendered.jobset = JobSet.model_validate(jobset_dict)
    return rendered

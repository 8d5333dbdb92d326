"""Runs the registered plugins phase by phase (Trainer's framework runner).

As in Trainer, where the framework instantiates its plugins once at start-up, a pipeline is built
once per registry (``pipeline_for``) and reused for every TrainJob: plugins keep no per-render
state, everything about one render lives in its ``RuntimeInfo``. Sorting plugins into extension
points costs far more than a validation (protocol ``isinstance`` checks), so it is never done per
TrainJob.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from runtimes.api.trainer import TrainJob
from runtimes.errors import FieldError
from runtimes.plugins.framework import (
    ComponentBuilderPlugin,
    CustomValidationPlugin,
    MLPolicyPlugin,
    PodGroupPolicyPlugin,
    PreBuildPlugin,
    RuntimeInfo,
)
from runtimes.plugins.registry import PluginRegistry


class RuntimePipeline:
    """The plugins of one registry, sorted by extension point, each list in registration order."""

    def __init__(self, registry: PluginRegistry) -> None:
        plugins = registry.instantiate()
        self.validators = [p for p in plugins if isinstance(p, CustomValidationPlugin)]
        self.ml_policies = [p for p in plugins if isinstance(p, MLPolicyPlugin)]
        self.pod_group_policies = [p for p in plugins if isinstance(p, PodGroupPolicyPlugin)]
        self.pre_builders = [p for p in plugins if isinstance(p, PreBuildPlugin)]
        self.builders = [p for p in plugins if isinstance(p, ComponentBuilderPlugin)]

    def validate(self, info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
        errors: list[FieldError] = []
        for plugin in self.validators:
            errors.extend(plugin.validate(info, trainjob))
        return errors

    def build(self, info: RuntimeInfo, trainjob: TrainJob) -> list[dict[str, Any]]:
        """Enforce the policies, sync the template, and return the objects the builders emit."""
        for ml_policy in self.ml_policies:
            ml_policy.enforce_ml_policy(info, trainjob)
        for pod_group_policy in self.pod_group_policies:
            pod_group_policy.enforce_pod_group_policy(info, trainjob)
        for pre_builder in self.pre_builders:
            pre_builder.pre_build(info, trainjob)
        objects: list[dict[str, Any]] = []
        for builder in self.builders:
            objects.extend(builder.build(info, trainjob))
        return objects


_pipelines: weakref.WeakKeyDictionary[PluginRegistry, tuple[int, RuntimePipeline]] = weakref.WeakKeyDictionary()
_pipelines_lock = threading.Lock()


def pipeline_for(registry: PluginRegistry) -> RuntimePipeline:
    """The pipeline of ``registry``, built once and rebuilt only after the registry changes."""
    with _pipelines_lock:
        cached = _pipelines.get(registry)
        if cached is not None and cached[0] == registry.generation:
            return cached[1]
        pipeline = RuntimePipeline(registry)
        _pipelines[registry] = (registry.generation, pipeline)
        return pipeline

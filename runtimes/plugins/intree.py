"""The plugins trainyard ships, registered in Trainer's order."""

from __future__ import annotations

from runtimes.plugins.coscheduling import CoschedulingPlugin
from runtimes.plugins.jax import JaxPlugin
from runtimes.plugins.jobset import JobSetPlugin
from runtimes.plugins.mpi import MPIPlugin
from runtimes.plugins.pipeline import RuntimePipeline, pipeline_for
from runtimes.plugins.plainml import PlainMLPlugin
from runtimes.plugins.registry import PluginRegistry
from runtimes.plugins.torch import TorchPlugin
from runtimes.plugins.volcano import VolcanoPlugin
from runtimes.plugins.xgboost import XGBoostPlugin


def in_tree_registry() -> PluginRegistry:
    """A fresh registry of the in-tree plugins; add your own to it and pass it to render/validate."""
    registry = PluginRegistry()
    registry.register("coscheduling", CoschedulingPlugin)
    registry.register("volcano", VolcanoPlugin)
    registry.register("mpi", MPIPlugin)
    registry.register("plainml", PlainMLPlugin)
    registry.register("torch", TorchPlugin)
    registry.register("jax", JaxPlugin)
    registry.register("xgboost", XGBoostPlugin)
    # The JobSet builder goes last: it packages what the policies above put in the RuntimeInfo.
    registry.register("jobset", JobSetPlugin)
    return registry


# Never handed out, so nobody can register into it: the pipeline used when no registry is given.
_IN_TREE = in_tree_registry()


def pipeline_of(registry: PluginRegistry | None) -> RuntimePipeline:
    """The pipeline for ``registry``, or the in-tree plugins' when it is None (built once each)."""
    return pipeline_for(registry if registry is not None else _IN_TREE)

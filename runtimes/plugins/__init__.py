"""The runtime plugin pipeline: Trainer's phases as protocols, plugins from a name → factory registry.

The core (``framework``, ``registry``, ``pipeline``, ``info``) never imports a concrete plugin;
``intree.in_tree_registry()`` lists the shipped ones.
"""

from runtimes.plugins.framework import (
    ComponentBuilderPlugin,
    CustomValidationPlugin,
    MLPolicyPlugin,
    PodGroupPolicyPlugin,
    PodSetInfo,
    PreBuildPlugin,
    RuntimeInfo,
)
from runtimes.plugins.info import build_runtime_info
from runtimes.plugins.intree import in_tree_registry
from runtimes.plugins.pipeline import RuntimePipeline
from runtimes.plugins.registry import PluginRegistry

__all__ = [
    "ComponentBuilderPlugin",
    "CustomValidationPlugin",
    "MLPolicyPlugin",
    "PluginRegistry",
    "PodGroupPolicyPlugin",
    "PodSetInfo",
    "PreBuildPlugin",
    "RuntimeInfo",
    "RuntimePipeline",
    "build_runtime_info",
    "in_tree_registry",
]

"""Plugins are built from a name → factory registry, in registration order.

Like the Kubernetes scheduler framework's ``runtime.Registry``: the pipeline only knows the
extension-point protocols, never a concrete plugin. The in-tree plugins are registered by
:func:`runtimes.plugins.intree.in_tree_registry`; a platform team adds its own with
``registry.register("my-plugin", MyPlugin)`` (appended after the in-tree ones, or placed with
``before=``) without editing any trainyard module. Unlike Trainer's Go map, the order is fixed,
so plugins run in the same order every time.
"""

from __future__ import annotations

from collections.abc import Callable

from runtimes.plugins.framework import Plugin

PluginFactory = Callable[[], Plugin]


class PluginRegistry:
    def __init__(self) -> None:
        self._factories: dict[str, PluginFactory] = {}
        # Bumped on every change, so a pipeline built from this registry knows when it is stale.
        self.generation = 0

    def register(self, name: str, factory: PluginFactory, *, before: str | None = None) -> None:
        """Add a plugin; ``before`` names a registered plugin it must run ahead of."""
        if name in self._factories:
            raise ValueError(f"a runtime plugin named {name!r} is already registered")
        if before is None:
            self._factories[name] = factory
            self.generation += 1
            return
        if before not in self._factories:
            raise ValueError(
                f"cannot register {name!r} before {before!r}: no such plugin; registered: {', '.join(self._factories)}"
            )
        reordered: dict[str, PluginFactory] = {}
        for existing, existing_factory in self._factories.items():
            if existing == before:
                reordered[name] = factory
            reordered[existing] = existing_factory
        self._factories = reordered
        self.generation += 1

    def unregister(self, name: str) -> None:
        if self._factories.pop(name, None) is not None:
            self.generation += 1

    def names(self) -> list[str]:
        return list(self._factories)

    def copy(self) -> PluginRegistry:
        clone = PluginRegistry()
        clone._factories = dict(self._factories)
        return clone

    def instantiate(self) -> list[Plugin]:
        return [factory() for factory in self._factories.values()]

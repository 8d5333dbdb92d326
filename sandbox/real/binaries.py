"""Where each real component's binary, CRDs and webhook configurations are found.

In order: a folder the user names (``--binaries DIR``), ``$KUBEBUILDER_ASSETS`` (envtest's
layout: ``etcd``, ``kube-apiserver`` and friends side by side), then the cache that
``make cluster-tools`` builds. CRDs and webhook configurations always come from the modules'
own files in the cache. A missing piece is an error that says which and how to get it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .components import Component, ComponentSet

# binary → the component that builds it
BINARY_COMPONENT = {
    "etcd": "etcd",
    "kube-apiserver": "kubernetes",
    "kube-controller-manager": "kubernetes",
    "kube-scheduler": "kubernetes",
    "kwok": "kwok",
    "jobset": "jobset",
    "kueue": "kueue",
}


class MissingComponent(RuntimeError):
    """A binary or a module's files the real cluster needs and cannot find."""


@dataclass(frozen=True)
class ClusterTools:
    """The located binaries and module files of one real cluster."""

    binaries_dir: Path | None
    components: ComponentSet

    @classmethod
    def locate(cls, binaries_dir: Path | None = None) -> ClusterTools:
        if binaries_dir is not None and not binaries_dir.is_dir():
            raise MissingComponent(f"--binaries {binaries_dir}: not a directory")
        return cls(binaries_dir, ComponentSet.load())

    def _search_path(self, binary: str) -> list[Path]:
        places = []
        if self.binaries_dir is not None:
            places.append(self.binaries_dir / binary)
        assets = os.environ.get("KUBEBUILDER_ASSETS")
        if assets:
            places.append(Path(assets) / binary)
        places.append(self.components[BINARY_COMPONENT[binary]].bin_dir / binary)
        return places

    def binary(self, binary: str) -> Path:
        for place in self._search_path(binary):
            if place.is_file() and os.access(place, os.X_OK):
                return place
        component = self.components[BINARY_COMPONENT[binary]]
        raise MissingComponent(
            f"{binary} ({component.module} {component.version}) is not built: run `make cluster-tools` "
            f"(it needs Go), or pass --binaries DIR / set KUBEBUILDER_ASSETS to a folder holding it"
        )

    def has(self, binary: str) -> bool:
        return any(p.is_file() and os.access(p, os.X_OK) for p in self._search_path(binary))

    def component(self, name: str) -> Component:
        return self.components[name]

    def crds(self, name: str) -> list[Path]:
        component = self.components[name]
        files = component.crd_files()
        if not files:
            raise MissingComponent(
                f"the CRDs of {component.module} {component.version} are not in the cache "
                f"({component.crd_dir}): run `make cluster-tools`"
            )
        return files

    def webhooks(self, name: str) -> list[Path]:
        component = self.components[name]
        files = component.webhook_files()
        if not files:
            raise MissingComponent(
                f"the webhook configurations of {component.module} {component.version} are not in the cache "
                f"({component.webhook_dir}): run `make cluster-tools`"
            )
        return files

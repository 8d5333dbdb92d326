"""The pinned real components (``versions.toml``) and where their built binaries and CRDs live.

A component is one Go module at one version: the binaries built from its packages and the CRD
files it ships. ``ComponentSet.load()`` reads the pinned list; ``cache_root()`` is the cache the
build writes (``$TRAINYARD_CLUSTER_TOOLS``, default ``~/.cache/trainyard/cluster-tools``), one
folder per component named by its version and a key of everything that decides its build, so a
changed pin is a new folder and an old one is never half-reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

VERSIONS_FILE = Path(__file__).with_name("versions.toml")
# Bumped when the build recipe itself changes (flags, layout), so caches made by an older
# recipe are rebuilt rather than trusted.
RECIPE = 1
STAMP = "built.json"


def cache_root() -> Path:
    configured = os.environ.get("TRAINYARD_CLUSTER_TOOLS")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "trainyard" / "cluster-tools"


@dataclass(frozen=True)
class Component:
    """One pinned Go module: what to build from it and which CRDs to take from it."""

    name: str
    module: str
    version: str
    binaries: tuple[str, ...]  # package paths inside the module ("." is the module's root)
    binary_name: str | None  # the name of the binary built from "." (a package path names the others)
    crds: tuple[str, ...]  # glob patterns inside the module
    webhooks: tuple[str, ...]  # its webhook configurations (glob patterns inside the module)
    staging_version: str | None  # k8s.io/kubernetes only: the release of its staging modules

    @property
    def key(self) -> str:
        decided_by = json.dumps(
            [
                RECIPE,
                self.name,
                self.module,
                self.version,
                self.binaries,
                self.crds,
                self.webhooks,
                self.staging_version,
            ]
        )
        return hashlib.sha256(decided_by.encode()).hexdigest()[:12]

    @property
    def folder(self) -> Path:
        return cache_root() / f"{self.name}-{self.version}-{self.key}"

    @property
    def bin_dir(self) -> Path:
        return self.folder / "bin"

    @property
    def crd_dir(self) -> Path:
        return self.folder / "crds"

    def binary_names(self) -> list[str]:
        return [
            (self.binary_name or Path(self.module).name) if package == "." else Path(package).name
            for package in self.binaries
        ]

    def is_built(self) -> bool:
        stamp = self.folder / STAMP
        if not stamp.is_file():
            return False
        return all((self.bin_dir / name).is_file() for name in self.binary_names())

    @property
    def webhook_dir(self) -> Path:
        return self.folder / "webhooks"

    def crd_files(self) -> list[Path]:
        return sorted(self.crd_dir.glob("*.yaml"))

    def webhook_files(self) -> list[Path]:
        return sorted(self.webhook_dir.glob("*.yaml"))


@dataclass(frozen=True)
class ComponentSet:
    components: dict[str, Component]

    @classmethod
    def load(cls, path: Path = VERSIONS_FILE) -> ComponentSet:
        table = tomllib.loads(path.read_text())
        components = {}
        for name, entry in table.items():
            components[name] = Component(
                name=name,
                module=entry["module"],
                version=entry["version"],
                binaries=tuple(entry.get("binaries", ())),
                binary_name=entry.get("binary_name"),
                crds=tuple(entry.get("crds", ())),
                webhooks=tuple(entry.get("webhooks", ())),
                staging_version=entry.get("staging_version"),
            )
        return cls(components)

    def __getitem__(self, name: str) -> Component:
        return self.components[name]

    def __iter__(self) -> Iterator[Component]:
        return iter(self.components.values())

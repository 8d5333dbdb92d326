"""The CustomResourceDefinitions trainyard ships (manifests/crds), read once: what the server knows of
its custom kinds beyond their names: each served version's schema and printer columns.

Three readers: server-side printing (``tables``), the OpenAPI documents kubectl explains from
(``openapi``) and server-side apply (``field_sets``: which lists are keyed, sets or atomic).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

CRD_DIR = Path(__file__).resolve().parents[2] / "manifests" / "crds"


@dataclass(frozen=True)
class CrdVersion:
    group: str
    version: str
    kind: str
    schema: dict[str, Any]  # openAPIV3Schema (read only: YAML anchors share parts of it)
    printer_columns: tuple[dict[str, Any], ...]


@cache
def crd_versions() -> dict[tuple[str, str, str], CrdVersion]:
    """(group, version, kind) -> the served version's definition."""
    found: dict[tuple[str, str, str], CrdVersion] = {}
    for path in sorted(CRD_DIR.rglob("*.yaml")) if CRD_DIR.is_dir() else []:
        for document in yaml.safe_load_all(path.read_text()):
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                continue
            spec = document.get("spec") or {}
            group, kind = str(spec.get("group")), str((spec.get("names") or {}).get("kind"))
            for version in spec.get("versions") or []:
                schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
                name = str(version.get("name"))
                columns = tuple(version.get("additionalPrinterColumns") or ())
                found[(group, name, kind)] = CrdVersion(group, name, kind, schema, columns)
    return found


def crd_version(group: str, version: str, kind: str) -> CrdVersion | None:
    return crd_versions().get((group, version, kind))

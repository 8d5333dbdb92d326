"""Build a kustomization: with ``kubectl kustomize`` where kubectl exists, else with the small
subset trainyard's manifests use (``resources`` files and directories, JSON6902 ``patches``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

UNDERSTOOD_KEYS = {"apiVersion", "kind", "resources", "patches"}


def _matches(target: dict[str, Any], document: dict[str, Any]) -> bool:
    api_version = str(document.get("apiVersion", ""))
    group, _, version = api_version.rpartition("/")
    metadata = document.get("metadata") or {}
    wanted = {
        "group": group,
        "version": version,
        "kind": document.get("kind"),
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
    }
    return all(wanted[key] == value for key, value in target.items())


def build_without_kubectl(directory: Path) -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - UNDERSTOOD_KEYS
    assert not unknown, f"{directory}/kustomization.yaml uses {unknown}, which this test's builder does not know"
    documents: list[dict[str, Any]] = []
    for resource in kustomization.get("resources") or []:
        path = (directory / resource).resolve()
        if path.is_dir():
            documents.extend(build_without_kubectl(path))
        else:
            assert path.is_relative_to(directory.resolve()), f"{resource}: kustomize loads files only below the root"
            documents.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    for patch in kustomization.get("patches") or []:
        operations = yaml.safe_load((directory / patch["path"]).read_text())
        targets = [d for d in documents if _matches(patch["target"], d)]
        assert targets, f"patch {patch['path']} matches nothing"
        for document in targets:
            patched = jsonpatch.apply_patch(document, operations)
            document.clear()
            document.update(patched)
    return documents


def kubectl_available() -> bool:
    return shutil.which("kubectl") is not None


def build_with_kubectl(directory: Path) -> list[dict[str, Any]]:
    output = subprocess.run(
        ["kubectl", "kustomize", str(directory)], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    return [d for d in yaml.safe_load_all(output) if d]


def build(directory: Path) -> list[dict[str, Any]]:
    return build_with_kubectl(directory) if kubectl_available() else build_without_kubectl(directory)


def identity(document: dict[str, Any]) -> tuple[str, str, str, str]:
    metadata = document.get("metadata") or {}
    return (document["apiVersion"], document["kind"], metadata.get("namespace", ""), metadata["name"])

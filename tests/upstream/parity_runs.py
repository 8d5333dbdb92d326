"""How the upstream-parity test runs each anchor file through trainyard's CLI and reads the outcome.

The expectation tables and where they point, which runtime a file renders with (its own, a
sibling documentation block's, or Trainer's ``manifests/base/runtimes``), the ``render`` /
``admit`` / ``convert`` runs in-process through ``main``, and the figures read from what they print.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
from pathlib import Path
from typing import Any

import yaml
from anchors import UPSTREAM

from trainyard.cli.main import main

HERE = Path(__file__).parent
TRAINER_TABLE = HERE / "trainer_expectations.yaml"
KUEUE_TABLE = HERE / "kueue_expectations.yaml"
QUEUES = HERE / "parity-queues.yaml"
TRAINER_DIRS = ("trainer", "jobset", "training-operator@release-1.9")
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


def load_table(path: Path) -> list[dict[str, Any]]:
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    assert isinstance(entries, list), f"{path}: must be a YAML list of expectations"
    return entries


def upstream_files(*dirs: str) -> set[str]:
    found: set[str] = set()
    for directory in dirs:
        found |= {str(p.relative_to(UPSTREAM)) for p in (UPSTREAM / directory).rglob("*") if p.is_file()}
    return found


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, out.getvalue(), err.getvalue()


@functools.cache
def documents(path: Path) -> tuple[dict[str, Any], ...]:
    """The file's mappings, parsed once per run (read only: the CLI reads the file itself)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return tuple(
            doc for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader) if isinstance(doc, dict)
        )
    except yaml.YAMLError:
        return ()


def upstream_runtime_files(path: Path) -> list[str]:
    """Where a TrainJob's runtime may be: sibling documentation blocks, runtime files beside it
    (examples/flux/flux-runtime.yaml), then Trainer's installed runtimes."""
    siblings: list[Path] = []
    if ".md.block" in path.name:
        stem = path.name.split(".md.block")[0]
        siblings = sorted(p for p in path.parent.glob(f"{stem}.md.block*.yaml") if p != path)
    else:
        siblings = sorted(p for p in path.parent.glob("*.yaml") if p != path)
    with_runtimes = [
        p for p in siblings if any(doc.get("kind") in RUNTIME_KINDS for doc in documents(p)) and not _has_trainjob(p)
    ]
    installed = sorted((UPSTREAM / "trainer" / "manifests" / "base" / "runtimes").rglob("*.yaml"))
    return [str(p) for p in (*with_runtimes, *installed)]


def _has_trainjob(path: Path) -> bool:
    return any(doc.get("kind") == "TrainJob" for doc in documents(path))


def runtime_files_for(path: Path) -> list[str]:
    """Of :func:`upstream_runtime_files`, the first file defining each runtime the TrainJobs name
    (parsing the eight other installed runtimes for every TrainJob made each render 6x slower);
    all of them when a name is defined nowhere, so that render says which runtime is missing."""
    candidates = upstream_runtime_files(path)
    wanted = {
        ((doc.get("spec") or {}).get("runtimeRef") or {}).get("name")
        for doc in documents(path)
        if doc.get("kind") == "TrainJob"
    }
    chosen: set[str] = set()
    for name in wanted:
        defining = next(
            (
                file
                for file in candidates
                if any(
                    doc.get("kind") in RUNTIME_KINDS and (doc.get("metadata") or {}).get("name") == name
                    for doc in documents(Path(file))
                )
            ),
            None,
        )
        if defining is None:
            return candidates
        chosen.add(defining)
    return [file for file in candidates if file in chosen]


def run_render(path: Path, tmp_path: Path) -> tuple[int, str, str]:
    if _has_trainjob(path):
        argv = ["render", str(path)]
        for runtime_file in runtime_files_for(path):
            argv += ["--runtime", runtime_file]
        return run_cli(argv)
    runtime = next(doc for doc in documents(path) if doc.get("kind") in RUNTIME_KINDS)
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "parity", "namespace": (runtime.get("metadata") or {}).get("namespace") or "default"},
        "spec": {"runtimeRef": {"name": runtime["metadata"]["name"], "kind": runtime["kind"]}},
    }
    job_file = tmp_path / "trainjob.yaml"
    job_file.write_text(yaml.safe_dump(trainjob), encoding="utf-8")
    return run_cli(["render", str(job_file), "--runtime", str(path)])


def run_admit(path: Path) -> tuple[int, str, str]:
    """``admit`` of a file; one holding JobSets gets the Kueue objects beside it (tpu-multislice's
    kueue-config.yaml) and a roomy default LocalQueue (parity-queues.yaml), with JSON output."""
    argv = ["admit", str(path)]
    if any(doc.get("kind") == "JobSet" for doc in documents(path)):
        siblings = sorted(
            p
            for p in path.parent.glob("*.yaml")
            if p != path and any(str(doc.get("apiVersion", "")).startswith("kueue.x-k8s.io/") for doc in documents(p))
        )
        argv += [*map(str, siblings), str(QUEUES), "--output", "json"]
    return run_cli(argv)


def run_convert(path: Path, tmp_path: Path) -> tuple[int, str, str, str]:
    """``convert`` then ``render`` of its output; returns (code, rendered, all messages, converted)."""
    code, converted, notes = run_cli(["convert", str(path)])
    if code != 0:
        return code, "", notes, ""
    converted_file = tmp_path / "converted.yaml"
    converted_file.write_text(converted, encoding="utf-8")
    code, rendered, render_notes = run_cli(["render", str(converted_file)])
    return code, rendered, notes + render_notes, converted


def trainer_container(jobset: dict[str, Any]) -> dict[str, Any] | None:
    """The ``node`` container of the replicated job labelled as the trainer step, if any."""
    for job in jobset["spec"]["replicatedJobs"]:
        labels = (job.get("template", {}).get("metadata") or {}).get("labels") or {}
        if labels.get(ANCESTOR_LABEL) == "trainer":
            containers = job["template"]["spec"]["template"]["spec"]["containers"]
            found: dict[str, Any] | None = next((c for c in containers if c["name"] == "node"), None)
            return found
    return None


def admit_figures(output: str) -> dict[str, Any]:
    """``jobs`` ({job: Workload status}) and ``podSets`` ({job: {pod set: count}}) of admit's JSON."""
    workloads = json.loads(output)["workloads"]
    return {
        "jobs": {w["job"]: w["status"] for w in workloads},
        "podSets": {w["job"]: w["counts"] for w in workloads},
    }


def figures_of(rendered: str, converted: str = "") -> dict[str, Any]:
    """Values an expectation may name: ``parallelism`` ({replicated job: n}), ``env`` (the trainer
    container's literal values; ``null`` for one that must be absent), ``command`` (the trainer
    container's command, ``null`` when the image's entrypoint runs), ``trainerStep`` (the replicated
    job labelled as the trainer step, ``null`` without one), ``kinds`` (rendered objects),
    ``podGroup`` (the PodGroup's spec) and ``runtimeRef`` (the converted TrainJob's runtime)."""
    objects = [doc for doc in yaml.safe_load_all(rendered) if isinstance(doc, dict)]
    figures: dict[str, Any] = {"kinds": [obj["kind"] for obj in objects]}
    jobset = next((obj for obj in objects if obj["kind"] == "JobSet"), None)
    if jobset is not None:
        figures["parallelism"] = {
            job["name"]: job["template"]["spec"].get("parallelism") for job in jobset["spec"]["replicatedJobs"]
        }
        figures["trainerStep"] = next(
            (
                job["name"]
                for job in jobset["spec"]["replicatedJobs"]
                if ((job.get("template", {}).get("metadata") or {}).get("labels") or {}).get(ANCESTOR_LABEL)
                == "trainer"
            ),
            None,
        )
        container = trainer_container(jobset)
        if container is not None:
            figures["env"] = {item["name"]: item.get("value") for item in container.get("env") or []}
            figures["command"] = container.get("command")
    pod_group = next((obj for obj in objects if obj["kind"] == "PodGroup"), None)
    if pod_group is not None:
        figures["podGroup"] = {"apiVersion": pod_group["apiVersion"], **pod_group["spec"]}
    for doc in yaml.safe_load_all(converted or ""):
        if isinstance(doc, dict) and doc.get("kind") == "TrainJob":
            figures["runtimeRef"] = doc["spec"]["runtimeRef"]["name"]
    return figures


def check_figures(expected: dict[str, Any], actual: dict[str, Any], where: str) -> None:
    for key, want in expected.items():
        assert key in actual, f"{where}: no {key!r} in the output (have {sorted(actual)})"
        got = actual[key]
        if isinstance(want, dict) and isinstance(got, dict):
            for name, value in want.items():
                assert got.get(name) == value, f"{where}: {key}.{name} is {got.get(name)!r}, expected {value!r}"
        else:
            assert got == want, f"{where}: {key} is {got!r}, expected {want!r}"


def unexpected_unknown_fields(output: str, entry: dict[str, Any]) -> list[str]:
    """Unknown-field warnings the entry does not name in ``contains``: upstream's own files use
    upstream's fields, so each warning must be a real mistake of the file, listed as such."""
    named = [word for word in entry.get("contains") or [] if "unknown field" in word]
    return [line for line in output.splitlines() if "unknown field" in line and not any(w in line for w in named)]

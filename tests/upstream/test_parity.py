"""Every file of the anchors' own examples (the upstream folder, ``anchors.py``) through the command that fits it.

Each file has one entry in an expectation table kept next to this test:
``trainer_expectations.yaml`` (trainer/, jobset/, training-operator@release-1.9/) and the Kueue
helper's ``kueue_expectations.yaml`` (kueue*/). An entry is ``{file, command, expect, contains,
figures}``:

- ``command: render`` — a file with a TrainJob is rendered with the upstream runtime (the file's
  own, a sibling documentation block's, or Trainer's ``manifests/base/runtimes``); a file with only
  runtimes renders a minimal TrainJob (no ``spec.trainer``) on its first runtime.
- ``command: convert`` — ``trainyard convert``, then ``trainyard render`` of what it printed, on
  trainyard's built-in runtimes (what a user's ``convert | render`` does).
- ``command: admit`` — ``trainyard admit`` (JobSets are also checked against JobSet's own rules).

``expect`` is ``accepted`` (exit 0) or ``refused`` (non-zero exit, with a message, never a
traceback); ``contains`` lists words the output must hold; ``figures`` are values read from the
rendered objects (see :func:`figures_of`). The commands run in-process through the CLI's ``main``.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from anchors import UPSTREAM, needs_upstream

from runtimes.runtime_validation import validate_jobset_spec
from trainyard.cli.main import main

HERE = Path(__file__).parent
TRAINER_TABLE = HERE / "trainer_expectations.yaml"
KUEUE_TABLE = HERE / "kueue_expectations.yaml"
QUEUES = HERE / "parity-queues.yaml"
TRAINER_DIRS = ("trainer", "jobset", "training-operator@release-1.9")
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"

pytestmark = needs_upstream


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


# ------------------------------------------------------------------------------ coverage


def test_every_trainer_jobset_and_operator_file_has_one_expectation() -> None:
    entries = load_table(TRAINER_TABLE)
    named = [entry["file"] for entry in entries]
    duplicates = sorted({name for name in named if named.count(name) > 1})
    assert not duplicates, f"files listed twice in {TRAINER_TABLE.name}: {duplicates}"
    missing = sorted(upstream_files(*TRAINER_DIRS) - set(named))
    assert not missing, f"upstream files without an expectation in {TRAINER_TABLE.name}: {missing}"
    stale = sorted(set(named) - upstream_files(*TRAINER_DIRS))
    assert not stale, f"expectations for files that are not in {UPSTREAM}: {stale}"


def test_every_upstream_file_has_an_expectation_in_one_table() -> None:
    """The union of both tables covers every upstream file: a file added to ../shared/upstream
    without an expectation fails here."""
    named = {entry["file"] for entry in load_table(TRAINER_TABLE)} | {e["file"] for e in load_table(KUEUE_TABLE)}
    everything = {str(p.relative_to(UPSTREAM)) for p in UPSTREAM.rglob("*") if p.is_file()} - {"README.md"}
    missing = sorted(everything - named)
    assert not missing, f"upstream files without an expectation in either table: {missing}"
    both = sorted({entry["file"] for entry in load_table(TRAINER_TABLE)} & {e["file"] for e in load_table(KUEUE_TABLE)})
    assert not both, f"files with an expectation in both tables: {both}"


def test_every_refusal_says_why_with_the_words_of_its_message() -> None:
    for entry in load_table(TRAINER_TABLE):
        assert entry["command"] in ("admit", "render", "convert"), entry["file"]
        assert entry["expect"] in ("accepted", "refused"), entry["file"]
        if entry["expect"] == "refused":
            assert entry.get("why"), f"{entry['file']}: a refusal says why (what trainyard does not handle)"
            assert entry.get("contains"), f"{entry['file']}: a refusal names the words of its message"
            assert not entry.get("figures"), f"{entry['file']}: figures given for a refused file"


def test_trainers_kueue_example_trainjob_is_admitted_as_kueue_admits_it(tmp_path: Path) -> None:
    """examples/yaml/03-kueue-integration.yaml (a TrainJob with a queue-name label) through
    ``admit``: its Workload is derived from the rendered JobSet, one pod set per replicated job."""
    training_queue = (
        "kind: LocalQueue\nmetadata: {name: training-queue, namespace: default}\nspec: {clusterQueue: parity}\n"
    )
    queue_file = tmp_path / "training-queue.yaml"
    queue_file.write_text(f"apiVersion: kueue.x-k8s.io/v1beta2\n{training_queue}", encoding="utf-8")
    trainjob = UPSTREAM / "trainer" / "examples" / "yaml" / "03-kueue-integration.yaml"
    runtime = UPSTREAM / "trainer" / "manifests" / "base" / "runtimes" / "torch_distributed.yaml"
    code, out, err = run_cli(
        ["admit", str(trainjob), str(QUEUES), str(queue_file), "--runtime", str(runtime), "-o", "json"]
    )
    assert code == 0, err
    (workload,) = json.loads(out)["workloads"]
    assert workload["name"].startswith("trainjob-kueue-example-")
    assert (workload["status"], workload["counts"]) == ("Admitted", {"node": 3})


# --------------------------------------------------------------------------- per file


def _entries() -> list[dict[str, Any]]:
    return load_table(TRAINER_TABLE) if TRAINER_TABLE.exists() else []


@pytest.mark.parametrize("entry", _entries(), ids=lambda entry: str(entry.get("file")))
def test_upstream_file(entry: dict[str, Any], tmp_path: Path) -> None:
    path = UPSTREAM / entry["file"]
    command, expect = entry["command"], entry["expect"]
    assert expect in ("accepted", "refused"), f"{entry['file']}: expect must be accepted or refused"
    converted = ""
    if command == "render":
        code, out, err = run_render(path, tmp_path)
    elif command == "convert":
        code, out, err, converted = run_convert(path, tmp_path)
    elif command == "admit":
        code, out, err = run_admit(path)
        for doc in documents(path):
            if doc.get("kind") == "JobSet":
                problems = validate_jobset_spec(doc.get("spec") or {})
                name = doc["metadata"]["name"]
                if expect == "accepted":
                    assert not problems, f"{entry['file']}: JobSet {name!r} breaks JobSet's rules: {problems}"
                else:
                    assert problems, f"{entry['file']}: JobSet {name!r} meets JobSet's rules, yet is expected refused"
    else:
        raise AssertionError(f"{entry['file']}: unknown command {command!r}")
    output = out + err
    assert "Traceback" not in output, f"{entry['file']}: {command} crashed:\n{output}"
    if expect == "accepted":
        assert code == 0, f"{entry['file']}: {command} refused it (exit {code}):\n{err}"
    else:
        assert code != 0, f"{entry['file']}: {command} accepted what the table says it refuses:\n{out[:2000]}"
        assert err.strip(), f"{entry['file']}: refused without a message"
    for word in entry.get("contains") or []:
        assert word in output, f"{entry['file']}: {word!r} not in the output of {command}:\n{output[-3000:]}"
    assert not unexpected_unknown_fields(output, entry), f"{entry['file']}: fields of the upstream API called unknown"
    if entry.get("figures"):
        assert code == 0, f"{entry['file']}: figures given for a refused file"
        actual = admit_figures(out) if command == "admit" else figures_of(out, converted)
        check_figures(entry["figures"], actual, entry["file"])


def tas_nodes(cpu_per_node: str) -> str:
    """Two racks of two nodes labelled for Kueue's tas/sample-queues.yaml flavor and Topology,
    and the LocalQueue ``user-queue`` the jobs/ TAS samples name, on its ClusterQueue."""
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"node-r{rack}-n{index}",
                "labels": {
                    "cloud.provider.com/node-group": "tas-group",
                    "cloud.provider.com/topology-block": "b0",
                    "cloud.provider.com/topology-rack": f"r{rack}",
                    "kubernetes.io/hostname": f"node-r{rack}-n{index}",
                },
            },
            "status": {
                "allocatable": {"cpu": cpu_per_node, "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for rack in range(2)
        for index in range(2)
    ]
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "user-queue", "namespace": "default"},
        "spec": {"clusterQueue": "tas-cluster-queue"},
    }
    return yaml.safe_dump_all([*nodes, queue])


@pytest.mark.parametrize(("cpu_per_node", "admitted"), [("3", True), ("1", False)], ids=["rack-fits", "no-rack-fits"])
def test_kueues_tas_jobset_sample_is_placed_in_one_rack(tmp_path: Path, cpu_per_node: str, admitted: bool) -> None:
    """jobs/sample-jobset-tas-required.yaml (4 one-cpu pods, required rack) admitted as given, with
    Kueue's TAS queues: placed within one rack when a rack has room, held otherwise though quota is free."""
    examples = UPSTREAM / "kueue" / "site" / "static" / "examples"
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(tas_nodes(cpu_per_node), encoding="utf-8")
    jobset = examples / "jobs" / "sample-jobset-tas-required.yaml"
    argv = ["admit", str(jobset), str(examples / "tas" / "sample-queues.yaml"), str(nodes), "-o", "json"]
    code, out, err = run_cli(argv)
    assert code == 0, err
    (workload,) = json.loads(out)["workloads"]
    assert workload["job"] == "JobSet default/jobset-tas-required"
    if not admitted:
        assert workload["status"] != "Admitted", workload
        assert "topology" in workload["reason"], workload
        return
    assert workload["status"] == "Admitted", workload
    assert workload["counts"] == {"workers": 4}
    (pod_set,) = workload["placement"]["tas-flavor"]["podSets"]
    assert pod_set["level"] == "cloud.provider.com/topology-rack"
    assert len(pod_set["nodes"]) == 4
    assert len({node.split("-n")[0] for node in pod_set["nodes"]}) == 1, pod_set["nodes"]

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

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from anchors import UPSTREAM, needs_upstream
from parity_runs import (
    KUEUE_TABLE,
    QUEUES,
    TRAINER_DIRS,
    TRAINER_TABLE,
    admit_figures,
    check_figures,
    documents,
    figures_of,
    load_table,
    run_admit,
    run_cli,
    run_convert,
    run_render,
    unexpected_unknown_fields,
    upstream_files,
)

from runtimes.runtime_validation import validate_jobset_spec
from tests.builders import LocalQueueBuilder, node

pytestmark = needs_upstream

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
        node(
            f"node-r{rack}-n{index}",
            hostname=True,
            labels={
                "cloud.provider.com/node-group": "tas-group",
                "cloud.provider.com/topology-block": "b0",
                "cloud.provider.com/topology-rack": f"r{rack}",
            },
            cpu=cpu_per_node,
            memory="8Gi",
            pods="110",
        )
        for rack in range(2)
        for index in range(2)
    ]
    queue = LocalQueueBuilder("user-queue").cluster_queue("tas-cluster-queue").doc()
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

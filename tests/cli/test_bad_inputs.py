"""Bad input to every command: refused with file, line, object and field, exit code 2, no traceback.

One table per command; each case is the files a person might hand the command and what the
message must name. The issue's cases (issue 15) are all here: a negative nominalQuota, misspelt
fields, unknown apiVersions, huge and zero numNodes, the kwok backend's missing --speedup,
empty inputs and folders of foreign documents. `queues` (every sub-command on an invalid file,
and each sub-command's own mistakes) and the SDK (resource aliases, lambdas, runtime files) are in
test_bad_inputs_queues_sdk.py; the helpers both share in bad_input_support.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.bad_input_support import queues, refused, write
from trainyard.cli.main import main

TRAINJOB = """\
apiVersion: {api_version}
kind: TrainJob
metadata:
  name: job
  namespace: default
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: {num_nodes}
    {proc_field}: 1
    resourcesPerNode:
      requests: {{cpu: "1"}}
"""


def trainjob_yaml(
    api_version: str = "trainer.kubeflow.org/v1alpha1", num_nodes: str = "1", proc: str = "numProcPerNode"
) -> str:
    return TRAINJOB.format(api_version=api_version, num_nodes=num_nodes, proc_field=proc)


# (id, files {name: text}, extra args, what the message names)
ADMIT_CASES = [
    (
        "negative-nominal-quota",
        {"q.yaml": queues("-4"), "job.yaml": trainjob_yaml()},
        [],
        ["q.yaml:17:", 'ClusterQueue "team-a" is invalid', "nominalQuota", "greater than or equal to 0"],
    ),
    (
        "misspelt-borrowing-limit-strict",
        {"q.yaml": queues("4").replace('"4"', '"4"\n        borowingLimit: 2'), "job.yaml": trainjob_yaml()},
        ["--strict"],
        ["q.yaml:18:", 'ClusterQueue "team-a"', "borowingLimit", "did you mean borrowingLimit?"],
    ),
    (
        "trainer-v1-refused",
        {"q.yaml": queues("4"), "job.yaml": trainjob_yaml(api_version="trainer.kubeflow.org/v1")},
        [],
        ["job.yaml:1:", 'TrainJob "default/job"', "apiVersion", "trainer.kubeflow.org/v1alpha1"],
    ),
    (
        "kubeflow-v2-refused",
        {"q.yaml": queues("4"), "job.yaml": trainjob_yaml(api_version="kubeflow.org/v2")},
        [],
        ["job.yaml:1:", "apiVersion", "'kubeflow.org/v2'", "trainer.kubeflow.org/v1alpha1"],
    ),
    (
        "num-nodes-beyond-int32",
        {"q.yaml": queues("4"), "job.yaml": trainjob_yaml(num_nodes="99999999999999999999")},
        [],
        ["job.yaml:10:", 'TrainJob "default/job"', "spec.trainer.numNodes", "2147483647"],
    ),
    (
        "num-nodes-zero",
        {"q.yaml": queues("4"), "job.yaml": trainjob_yaml(num_nodes="0")},
        [],
        ["job.yaml:10:", 'TrainJob "default/job"', "spec.trainer.numNodes", "at least 1"],
    ),
    (
        "misspelt-num-proc-per-node-strict",
        {"q.yaml": queues("4"), "job.yaml": trainjob_yaml(proc="numProcsPerNode")},
        ["--strict"],
        ["job.yaml:11:", 'TrainJob "default/job"', "numProcsPerNode", "did you mean numProcPerNode?"],
    ),
    (
        "unknown-queue",
        {
            "q.yaml": queues("4"),
            "job.yaml": trainjob_yaml().replace(
                "  namespace: default\n", "  namespace: default\n  labels: {kueue.x-k8s.io/queue-name: nope}\n"
            ),
        },
        [],
        ["job.yaml:", 'TrainJob "default/job"', "queue-name", "'nope' does not exist"],
    ),
    ("empty-file", {"empty.yaml": ""}, [], ["nothing to admit", "test_admit_refuses_empty_file"]),
    (
        "folder-of-deployments",
        {"deploy/a.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n"},
        [],
        ["nothing to admit", "skipped Deployment 'a'"],
    ),
    ("not-yaml", {"bad.yaml": "kind: [unclosed\n"}, [], ["bad.yaml:", "invalid YAML"]),
    (
        "typo-in-kind",
        {"q.yaml": "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQeue\nmetadata: {name: x}\n"},
        [],
        ["q.yaml:2:", 'ClusterQeue "x"', "kind", "did you mean ClusterQueue?"],
    ),
]


@pytest.mark.parametrize(("files", "extra", "needles"), [c[1:] for c in ADMIT_CASES], ids=[c[0] for c in ADMIT_CASES])
def test_admit_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], extra: list[str], needles: list[str]
) -> None:
    for name, text in files.items():
        write(tmp_path, name, text)
    refused(capsys, ["admit", str(tmp_path), *extra], *needles)


TRAINJOB_CASES = [
    (
        "num-nodes-zero",
        trainjob_yaml(num_nodes="0"),
        [],
        ["job.yaml:10:", "spec.trainer.numNodes", 'TrainJob "default/job"'],
    ),
    ("num-nodes-huge", trainjob_yaml(num_nodes="99999999999999999999"), [], ["job.yaml:10:", "spec.trainer.numNodes"]),
    ("trainer-v1", trainjob_yaml(api_version="trainer.kubeflow.org/v1"), [], ["job.yaml:1:", "v1alpha1"]),
    (
        "misspelt-strict",
        trainjob_yaml(proc="numProcsPerNode"),
        ["--strict"],
        ["job.yaml:11:", "numProcsPerNode", "did you mean numProcPerNode?"],
    ),
    (
        "unknown-runtime",
        trainjob_yaml().replace("torch-distributed", "no-such-runtime"),
        [],
        ["job.yaml", "spec.runtimeRef", "'no-such-runtime'"],
    ),
    ("no-trainjob", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", [], ["job.yaml", "exactly one TrainJob"]),
]


@pytest.mark.parametrize("command", [["render"], ["run", "--local"]], ids=["render", "run"])
@pytest.mark.parametrize(
    ("text", "extra", "needles"), [c[1:] for c in TRAINJOB_CASES], ids=[c[0] for c in TRAINJOB_CASES]
)
def test_render_and_run_refuse(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    text: str,
    extra: list[str],
    needles: list[str],
) -> None:
    path = write(tmp_path, "job.yaml", text)
    refused(capsys, [command[0], str(path), *command[1:], *extra], *needles)


def test_unknown_field_is_a_warning_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "job.yaml", trainjob_yaml(proc="numProcsPerNode"))
    assert main(["render", str(path)]) == 0
    captured = capsys.readouterr()
    assert f"{path}:11: warning: " in captured.err
    assert 'unknown field "spec.trainer.numProcsPerNode" (did you mean numProcPerNode?)' in captured.err
    assert "kind: JobSet" in captured.out


PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: img}]}}
    Worker:
      replicas: 99999999999999999999
      template: {spec: {containers: [{name: pytorch, image: img}]}}
"""

CONVERT_CASES = [
    ("huge-replicas", PYTORCHJOB, ["job.yaml:1:", "PyTorchJob 'pt'", "spec.trainer.numNodes", "2147483647"]),
    ("nothing-to-convert", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", ["job.yaml", "no PyTorchJob"]),
    ("not-yaml", "a: [b\n", ["job.yaml:", "invalid YAML"]),
]


@pytest.mark.parametrize(("text", "needles"), [c[1:] for c in CONVERT_CASES], ids=[c[0] for c in CONVERT_CASES])
def test_convert_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needles: list[str]) -> None:
    path = write(tmp_path, "job.yaml", text)
    refused(capsys, ["convert", str(path)], *needles)


def test_simulate_kwok_backend_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = write(tmp_path, "kubeconfig", "apiVersion: v1\nkind: Config\nclusters: []\n")
    argv = ["simulate", "--backend", "kwok", "--kubeconfig", str(kubeconfig), "--scenario", "kueue-baseline"]
    refused(capsys, [*argv, "--speedup", "10"], "--kubeconfig", str(kubeconfig))


SIMULATE_CASES = [
    ("speedup-zero", ["--backend", "kwok", "--kubeconfig", "x", "--speedup", "0"], ["--speedup", "greater than 0"]),
    ("speedup-without-kwok", ["--speedup", "5"], ["--speedup", "--backend kwok"]),
    ("kwok-without-kubeconfig", ["--backend", "kwok"], ["--kubeconfig"]),
    (
        "missing-kubeconfig",
        ["--backend", "kwok", "--kubeconfig", "/nonexistent/kc"],
        ["/nonexistent/kc", "does not exist"],
    ),
    ("unknown-scenario", ["--scenario", "no-such-scenario"], ["no-such-scenario"]),
]


@pytest.mark.parametrize(("extra", "needles"), [c[1:] for c in SIMULATE_CASES], ids=[c[0] for c in SIMULATE_CASES])
def test_simulate_refuses(capsys: pytest.CaptureFixture[str], extra: list[str], needles: list[str]) -> None:
    refused(capsys, ["simulate", *extra], *needles)


def test_simulate_bad_scenario_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "s.yaml", "name: s\nworkload:\n  jobs: -3\n")
    refused(capsys, ["simulate", "--scenario", str(path)], f"{path}:3:", "workload.jobs", "at least 1")


def test_kwok_export_bad_scenario_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "s.yaml", "name: s\nworkload:\n  jbos: 3\n")
    argv = ["kwok", "export", "--scenario", str(path), "--out", str(tmp_path / "out")]
    refused(capsys, argv, f"{path}:3:", "workload.jbos", "unknown field", "jobs")


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--speedup", "-1"], ["--speedup", "greater than 0"]),
        (["--scenario", "no-such-scenario"], ["no-such-scenario"]),
    ],
    ids=["speedup-negative", "unknown-scenario"],
)
def test_kwok_export_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], needles: list[str]
) -> None:
    refused(capsys, ["kwok", "export", "--out", str(tmp_path / "out"), *extra], *needles)


def test_kwok_export_speedup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["kwok", "export", "--scenario", "kueue-baseline", "--out", str(out), "--speedup", "4"]) == 0
    assert "4x faster" in (out / "README.md").read_text()


SERVE_CASES = [
    ("negative-nominal-quota", {"q.yaml": queues("-4")}, ["q.yaml:17:", 'ClusterQueue "team-a"', "nominalQuota"]),
    (
        "wrong-trainer-version",
        {"rt.yaml": "apiVersion: trainer.kubeflow.org/v1\nkind: ClusterTrainingRuntime\nmetadata: {name: x}\n"},
        ["rt.yaml:1:", 'ClusterTrainingRuntime "x"', "v1alpha1"],
    ),
    ("not-yaml", {"bad.yaml": "a: [b\n"}, ["bad.yaml:", "invalid YAML"]),
]


@pytest.mark.parametrize(("files", "needles"), [c[1:] for c in SERVE_CASES], ids=[c[0] for c in SERVE_CASES])
def test_serve_objects_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], needles: list[str]
) -> None:
    for name, text in files.items():
        write(tmp_path / "objects", name, text)
    refused(capsys, ["serve", "webhook", "--self-signed", "--objects", str(tmp_path / "objects")], *needles)


def test_serve_objects_strict_refuses_a_misspelt_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "objects", "q.yaml", queues("4").replace('"4"', '"4"\n        borowingLimit: 2'))
    argv = ["serve", "webhook", "--self-signed", "--strict", "--objects", str(tmp_path / "objects")]
    refused(capsys, argv, "q.yaml:18:", 'ClusterQueue "team-a"', "borowingLimit", "did you mean borrowingLimit?")


def test_serve_objects_warns_of_a_misspelt_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trainyard.cli.main import build_parser
    from trainyard.cli.serve.admission_webhook import load_objects

    write(tmp_path / "objects", "q.yaml", queues("4").replace('"4"', '"4"\n        borowingLimit: 2'))
    args = build_parser().parse_args(["serve", "webhook", "--self-signed", "--objects", str(tmp_path / "objects")])
    cache = load_objects(args, from_cluster=False)
    err = capsys.readouterr().err
    assert "warning: " in err
    assert "did you mean borrowingLimit?" in err
    assert cache.get("ClusterQueue", "team-a") is not None  # loaded all the same, unknown field kept

"""Bad input to `trainyard queues ...` and to the SDK: refused naming file, line, object and field.

The rest of the table (admit, render, run, convert, simulate, kwok export, serve --objects) is in
test_bad_inputs.py; the helpers both use are in bad_input_support.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.bad_input_support import queues, refused, write
from trainyard.cli.main import main

# `trainyard queues ...` on files: (id, quota in the file, arguments after `queues`, what the message names)
QUEUES_CASES = [
    *(
        (
            f"{command}-negative-nominal-quota",
            "-4",
            [command, *extra],
            ["q.yaml:17:", 'ClusterQueue "team-a"', "nominalQuota"],
        )
        for command, extra in (
            ("list", []),
            ("pending", []),
            ("describe", ["default/job"]),
            ("set-quota", ["team-a", "--flavor", "default-flavor", "--resource", "cpu", "--nominal", "2"]),
            ("what-if", ["quota:team-a:default-flavor:cpu=8"]),
        )
    ),
    ("pending-unknown-cluster-queue", "4", ["pending", "nope"], ["ClusterQueue 'nope' does not exist"]),
    (
        "pending-unknown-local-queue",
        "4",
        ["pending", "--namespace", "default", "nope"],
        ["LocalQueue 'nope' does not exist in namespace 'default'", "default"],
    ),
    ("describe-unknown-workload", "4", ["describe", "default/nope"], ["no Workload default/nope"]),
    (
        "set-quota-negative",
        "4",
        ["set-quota", "team-a", "--flavor", "default-flavor", "--resource", "cpu", "--nominal", "-1"],
        ["q.yaml:17:", 'ClusterQueue "team-a" is invalid', "nominalQuota", "greater than or equal to 0"],
    ),
    (
        "set-quota-lending-above-nominal",
        "4",
        [
            "set-quota",
            "team-a",
            "--flavor",
            "default-flavor",
            "--resource",
            "cpu",
            "--nominal",
            "1",
            "--lending-limit",
            "3",
        ],
        ["q.yaml:16:", "lendingLimit", "less than or equal to nominalQuota"],
    ),
    (
        "set-quota-not-a-quantity",
        "4",
        [
            "set-quota",
            "team-a",
            "--flavor",
            "default-flavor",
            "--resource",
            "cpu",
            "--nominal",
            "1",
            "--borrowing-limit",
            "x",
        ],
        ["--borrowing-limit", "'x' is not a Kubernetes quantity"],
    ),
    (
        "set-quota-unknown-flavor",
        "4",
        ["set-quota", "team-a", "--flavor", "nope", "--resource", "cpu", "--nominal", "1"],
        ["no flavor 'nope'", "default-flavor"],
    ),
    ("what-if-unknown-change", "4", ["what-if", "frobnicate"], ["frobnicate", "unknown change"]),
    ("list-negative-limit", "4", ["list", "--limit", "-1"], ["--limit"]),
]


@pytest.mark.parametrize(("quota", "argv", "needles"), [c[1:] for c in QUEUES_CASES], ids=[c[0] for c in QUEUES_CASES])
def test_queues_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quota: str, argv: list[str], needles: list[str]
) -> None:
    write(tmp_path / "objects", "q.yaml", queues(quota))
    refused(capsys, ["queues", *argv, "--objects", str(tmp_path / "objects")], *needles)


QUEUES_SUBCOMMANDS = [
    ["list"],
    ["pending"],
    ["describe", "default/job"],
    ["set-quota", "team-a", "--flavor", "default-flavor", "--resource", "cpu", "--nominal", "2"],
    ["what-if", "quota:team-a:default-flavor:cpu=8"],
]


@pytest.mark.parametrize("argv", QUEUES_SUBCOMMANDS, ids=[a[0] for a in QUEUES_SUBCOMMANDS])
def test_queues_strict_refuses_a_misspelt_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    misspelt = queues("4").replace('nominalQuota: "4"', 'nominalQuota: "4"\n        borowingLimit: 2')
    write(tmp_path / "objects", "q.yaml", misspelt)
    needles = ["q.yaml:18:", 'ClusterQueue "team-a" is invalid', "borowingLimit", "did you mean borrowingLimit?"]
    err = refused(capsys, ["queues", *argv, "--objects", str(tmp_path / "objects"), "--strict"], *needles)
    assert "warning" not in err


def test_queues_misspelt_field_is_a_warning_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    misspelt = queues("4").replace('nominalQuota: "4"', 'nominalQuota: "4"\n        borowingLimit: 2')
    path = write(tmp_path / "objects", "q.yaml", misspelt)
    assert main(["queues", "list", "--objects", str(tmp_path / "objects"), "--output", "json"]) == 0
    captured = capsys.readouterr()
    assert f'{path}:18: warning: ClusterQueue "team-a": unknown field "spec.resourceGroups[0]' in captured.err
    assert "(did you mean borrowingLimit?)" in captured.err
    assert '"team-a"' in captured.out


def test_queues_without_objects_names_the_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refused(capsys, ["queues", "list", "--objects", str(tmp_path / "missing")], str(tmp_path / "missing"))


# The SDK (Kubeflow's TrainerClient shape): refused at train() or when built, naming the field.
def _module_level() -> None:
    print("hi")


SDK_CASES = [
    (
        "gpus-alias",
        {"func": _module_level, "resources_per_node": {"gpus": 1}},
        "unknown resource 'gpus'; did you mean 'gpu'",
    ),
    ("lambda", {"func": lambda: None}, "a lambda cannot be shipped"),
    ("negative-gpu", {"func": _module_level, "resources_per_node": {"gpu": -1}}, "resources_per_node"),
]


@pytest.mark.parametrize(("kwargs", "message"), [c[1:] for c in SDK_CASES], ids=[c[0] for c in SDK_CASES])
def test_sdk_refuses(kwargs: dict[str, object], message: str) -> None:
    from runtimes.sdk import CustomTrainer

    with pytest.raises(ValueError, match=re.escape(message)) as refused:
        CustomTrainer(**kwargs)  # type: ignore[arg-type]
    assert "CustomTrainer." in str(refused.value)


def test_sdk_refuses_a_bad_runtime_file_with_file_line_and_field(tmp_path: Path) -> None:
    from runtimes.local.errors import LocalRunError
    from runtimes.sdk import LocalBackendConfig, TrainerClient

    path = write(
        tmp_path,
        "rt.yaml",
        "apiVersion: trainer.kubeflow.org/v1\nkind: ClusterTrainingRuntime\nmetadata: {name: x}\n",
    )
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", runtime_files=[path]))
    with pytest.raises(LocalRunError) as refused:
        client.list_runtimes()
    assert str(refused.value).startswith(f'{path}:1: ClusterTrainingRuntime "x" is invalid: apiVersion:')
    assert "trainer.kubeflow.org/v1alpha1" in str(refused.value)

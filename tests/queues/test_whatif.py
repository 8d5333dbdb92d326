"""`trainyard queues what-if`: the same seed gives the same numbers, more quota gives less wait."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainyard.cli.main import main


def _stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@pytest.fixture
def small_queues(tmp_path: Path) -> Path:
    """Two teams of 4 CPUs each; team-x has a backlog of 2-CPU jobs that arrived over the last hour."""
    documents: list[dict[str, Any]] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
    ]
    for team in ("team-x", "team-y"):
        documents.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": team},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
                        }
                    ],
                },
            }
        )
        documents.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "jobs", "namespace": team},
                "spec": {"clusterQueue": team},
            }
        )
    now = time.time()
    for i in range(16):
        team = "team-x" if i % 4 else "team-y"
        documents.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {"name": f"job-{i}", "namespace": team, "creationTimestamp": _stamp(now - 3600 + 200 * i)},
                "spec": {
                    "queueName": "jobs",
                    "maximumExecutionTimeSeconds": 900,
                    "podSets": [
                        {
                            "name": "main",
                            "count": 1,
                            "template": {
                                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
                            },
                        }
                    ],
                },
            }
        )
    path = tmp_path / "queues.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return tmp_path


def _what_if(capsys: pytest.CaptureFixture[str], objects: Path, *changes: str) -> dict[str, Any]:
    argv = ["queues", "what-if", *changes, "--objects", str(objects), "--seed", "7", "--processes", "2"]
    assert main([*argv, "--output", "json"]) == 0
    report = dict(json.loads(capsys.readouterr().out))
    report.pop("wall_seconds")
    return report


def test_same_seed_same_numbers(small_queues: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = _what_if(capsys, small_queues, "quota:team-x:default:cpu=8")
    second = _what_if(capsys, small_queues, "quota:team-x:default:cpu=8")
    assert first == second
    assert first["base"]["team-x"]["jobs"] > 12  # the backlog and the replayed last hour


def test_more_quota_means_less_wait(small_queues: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _what_if(capsys, small_queues, "quota:team-x:default:cpu=8", "rate:team-y=2")
    more_quota = report["variants"]["quota:team-x:default:cpu=8"]["per_queue"]["team-x"]
    assert more_quota["wait_p50_s"]["variant"] < more_quota["wait_p50_s"]["base"]
    assert more_quota["wait_p95_s"]["variant"] < more_quota["wait_p95_s"]["base"]
    assert more_quota["utilization"]["base"] > 0
    busier = report["variants"]["rate:team-y=2"]["per_queue"]["team-y"]
    # twice the replayed arrivals: the backlog stays, each arrival of the last hour comes twice
    assert busier["jobs"]["variant"] > busier["jobs"]["base"]
    assert busier["wait_p95_s"]["variant"] >= busier["wait_p95_s"]["base"]


def test_table_output_and_plots(small_queues: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "plots"
    argv = ["queues", "what-if", "quota:team-x:default:cpu=8", "--objects", str(small_queues)]
    assert main([*argv, "--out", str(out_dir), "--processes", "1"]) == 0
    text = capsys.readouterr().out
    assert "what if quota:team-x:default:cpu=8" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert (out_dir / "base").is_dir()
    assert any((out_dir / "variant-1").glob("*.png"))


def test_an_unknown_change_is_a_clear_error(small_queues: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["queues", "what-if", "grow:team-x", "--objects", str(small_queues)]) == 2
    assert "unknown change" in capsys.readouterr().err

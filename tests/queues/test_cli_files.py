"""`trainyard queues ...` on YAML files: tables at 80 columns, JSON, set-quota edits in place."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.queues.support import FIXTURES
from trainyard.cli.main import main


@pytest.fixture
def objects(tmp_path: Path) -> Path:
    target = tmp_path / "queues"
    shutil.copytree(FIXTURES, target)
    return target


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["queues", *argv, "--output", "json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_list_table_fits_80_columns(objects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["queues", "list", "--objects", str(objects)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "team-a" in out
    assert "12/8" in out
    # every column whole at 80: the flavor/resource pairs on one line, the last column not cropped
    assert "h100/nvidia.com/gpu" in out
    assert "missing-flavor/cpu" in out
    assert "Adm/Pend" in out
    assert "stopPolicy is Hold" in out
    assert "research" in out


def test_list_json_pages_and_filters(objects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = _json(capsys, "list", "--objects", str(objects), "--limit", "1", "--offset", "1")
    assert page["total"] == 4
    assert [q["name"] for q in page["clusterQueues"]] == ["stopped"]  # type: ignore[attr-defined, index]
    inactive = _json(capsys, "list", "--objects", str(objects), "--inactive")
    assert [q["name"] for q in inactive["clusterQueues"]] == ["broken", "stopped"]  # type: ignore[attr-defined, index]


def test_pending_table_and_json(objects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["queues", "pending", "team-a", "--objects", str(objects)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "R1: insufficient unused quota" in out
    listed = _json(capsys, "pending", "main", "--namespace", "team-a", "--objects", str(objects))
    items = listed["items"]
    assert [(i["name"], i["positionInLocalQueue"]) for i in items] == [("a-first", 0), ("a-big", 1)]  # type: ignore[attr-defined]
    assert listed["source"] == "computed locally by the engine"


def test_describe_json(objects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    story = _json(capsys, "describe", "team-a/a-first", "--objects", str(objects))
    assert story["positionInClusterQueue"] == 0
    assert [f["flavor"] for f in story["explanation"]["flavorsTried"]] == ["h100", "a100"]  # type: ignore[index]
    # a-urgent holds 12 GPUs for an hour; then a-first starts
    assert story["estimatedStart"]["secondsFromNow"] == pytest.approx(3600, abs=120)  # type: ignore[index]


def test_set_quota_shows_the_effect_and_changes_nothing_without_yes(
    objects: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (objects / "queues.yaml").read_text()
    assert (
        main(
            [
                "queues",
                "set-quota",
                "team-a",
                "--flavor",
                "h100",
                "--resource",
                "nvidia.com/gpu",
                "--nominal",
                "16",
                "--objects",
                str(objects),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "+   nominalQuota: 16" in out
    assert "would be admitted (" in out
    assert "team-a/a-first" in out
    assert (objects / "queues.yaml").read_text() == before


def test_set_quota_yes_edits_only_the_quota_lines(objects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = objects / "queues.yaml"
    before = path.read_text().splitlines(keepends=True)
    argv = ["queues", "set-quota", "team-a", "--flavor", "h100", "--resource", "nvidia.com/gpu"]
    argv += ["--nominal", "10", "--borrowing-limit", "6", "--lending-limit", "2", "--yes", "--objects", str(objects)]
    assert main(argv) == 0
    assert "edited in place" in capsys.readouterr().out
    after = path.read_text().splitlines(keepends=True)
    changed = [(i, b, a) for i, (b, a) in enumerate(zip(before, after, strict=False)) if b != a]
    index = before.index("        nominalQuota: 8\n")
    assert [c[0] for c in changed][:2] == [index, index + 1]
    assert after[index : index + 3] == [
        "        nominalQuota: 10\n",
        "        borrowingLimit: 6\n",
        "        lendingLimit: 2\n",
    ]
    # every other line, comments included, is where it was
    assert after[:index] == before[:index]
    assert after[index + 3 :] == before[index + 2 :]


def test_set_quota_refuses_an_invalid_change_with_the_webhook_message(
    objects: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = objects / "queues.yaml"
    before = path.read_text()
    argv = ["queues", "set-quota", "team-b", "--flavor", "h100", "--resource", "nvidia.com/gpu", "--nominal", "8"]
    assert main([*argv, "--lending-limit", "9", "--yes", "--objects", str(objects)]) == 2
    error = capsys.readouterr().err
    from scheduler.api.validation import validate_kueue_object
    from scheduler.queues import QuotaChange, changed_cluster_queue
    from tests.queues.support import fixture_state
    from webhooks.handlers import describe_errors, subject_of

    old = fixture_state().engine.model.cluster_queue_objects["team-b"]
    new = changed_cluster_queue(old, QuotaChange("team-b", "h100", "nvidia.com/gpu", "8", lending_limit="9"))
    expected = describe_errors(subject_of("ClusterQueue", "team-b", None), validate_kueue_object(new, old))
    assert expected in error
    assert "lendingLimit" in error
    assert path.read_text() == before


def test_no_source_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["queues", "list"]) == 2
    assert "--objects DIR" in capsys.readouterr().err


YAML_COMMANDS = [
    (["list"], "clusterQueues"),
    (["pending", "team-a"], "items"),
    (["describe", "team-a/a-first", "--no-estimate"], "positionInClusterQueue"),
    (["set-quota", "team-a", "--flavor", "h100", "--resource", "nvidia.com/gpu", "--nominal", "16"], "effect"),
    (["what-if", "quota:team-a:h100:nvidia.com/gpu=16", "--processes", "1", "--window", "0"], "variants"),
]


@pytest.mark.parametrize(("argv", "key"), YAML_COMMANDS, ids=[c[0][0] for c in YAML_COMMANDS])
def test_every_subcommand_prints_yaml_and_json_alike(
    objects: Path, capsys: pytest.CaptureFixture[str], argv: list[str], key: str
) -> None:
    import yaml

    assert main(["queues", *argv, "--objects", str(objects), "--output", "yaml"]) == 0
    as_yaml = yaml.safe_load(capsys.readouterr().out)
    assert main(["queues", *argv, "--objects", str(objects), "--output", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert key in as_yaml
    for volatile in ("wall_seconds", "estimatedStart"):
        as_yaml.pop(volatile, None)
        as_json.pop(volatile, None)
    if argv[0] == "pending" or argv[0] == "describe":
        # ages count from the wall clock of each run
        for data in (as_yaml, as_json):
            for item in data.get("items", [data]):
                item.pop("ageSeconds", None)
                item.pop("age", None)
    assert as_yaml == as_json

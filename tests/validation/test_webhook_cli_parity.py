"""For every Kueue and Trainer rule the webhook enforces, the CLI refuses the same object in the same words.

Each case is an object breaking one rule. The webhook's verdict comes from its handler (the
function the HTTPS server calls for ``/validate/kueue``, ``/validate/runtimes`` and
``/validate/trainjobs``); the CLI's from ``trainyard admit`` / ``render`` on a file holding the
same object. The CLI's message must be ``FILE:LINE: `` followed by the webhook's message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.validation.parity_cases import (
    KUEUE_CASES,
    REPO,
    RUNTIME_CASES,
    TRAINJOB_CASES,
    assert_kueue_same_message,
    cli_message,
    cluster_queue,
    request,
    two_node_job,
)
from webhooks.handlers import kueue as kueue_handler
from webhooks.handlers import runtimes as runtimes_handler
from webhooks.handlers import trainjobs as trainjobs_handler
from webhooks.objects import ObjectCache, load_directory


@pytest.mark.parametrize("document", [c[1] for c in KUEUE_CASES], ids=[c[0] for c in KUEUE_CASES])
def test_kueue_rule_same_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]) -> None:
    assert_kueue_same_message(tmp_path, capsys, document)


@pytest.fixture(scope="module")
def runtime_cache() -> ObjectCache:
    cache = ObjectCache()
    load_directory(REPO / "manifests" / "runtimes", cache)
    return cache


@pytest.mark.parametrize("document", [c[1] for c in TRAINJOB_CASES], ids=[c[0] for c in TRAINJOB_CASES])
def test_trainer_trainjob_rule_same_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime_cache: ObjectCache, document: dict[str, Any]
) -> None:
    verdict = trainjobs_handler.validate(request(document, "TrainJob"), runtime_cache)
    assert not verdict.allowed
    assert verdict.message
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    for command in ("render", "admit"):
        message = cli_message(tmp_path, capsys, [command, str(path)])
        if document["spec"]["runtimeRef"]["name"] in ("no-such-runtime", "x"):
            # The CLI searches files, not a cluster: after the webhook's words it says where it looked.
            assert message.startswith(verdict.message + " (")
        else:
            assert message == verdict.message


@pytest.mark.parametrize("document", [c[1] for c in RUNTIME_CASES], ids=[c[0] for c in RUNTIME_CASES])
def test_trainer_runtime_rule_same_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]
) -> None:
    verdict = runtimes_handler.validate(request(document, document["kind"]), ObjectCache())
    assert not verdict.allowed
    assert verdict.message
    runtime_file = tmp_path / "runtime.yaml"
    runtime_file.write_text(yaml.safe_dump(document, sort_keys=False))
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(two_node_job(), sort_keys=False))
    message = cli_message(tmp_path, capsys, ["render", str(job_file), "--runtime", str(runtime_file)])
    assert message == verdict.message


def test_unknown_fields_are_the_webhooks_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = cluster_queue(borowingLimit="2")
    verdict = kueue_handler.validate(request(document, "ClusterQueue"), ObjectCache())
    assert verdict.allowed
    expected = (
        'unknown field "spec.resourceGroups[0].flavors[0].resources[0].borowingLimit" (did you mean borrowingLimit?)'
    )
    assert verdict.warnings == [expected]
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    from scheduler.api.loading import read_checked

    checked = read_checked([path])
    assert len(checked.warnings) == 1
    assert checked.warnings[0].endswith(f'ClusterQueue "team-a": {expected}')
    # The unknown field is kept on the round trip.
    assert "borowingLimit" in str(checked.objects[0].obj.to_dict())

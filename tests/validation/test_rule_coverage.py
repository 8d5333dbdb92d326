"""Every Kueue rule the webhook enforces: the CLI refuses the same object in the same words.

``KUEUE_RULE_CASES`` adds one object per rule to the parity table's basics; the coverage test
traces the webhook's handler over both tables and fails if any rule (a ``FieldError`` raised in
the rule modules) is never reached, so a rule added later without a case is caught. Rules that
only an UPDATE can break (immutable fields) are out of the CLI's reach: it reads new objects.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import yaml

import runtimes.plugins.jobset_validation
import runtimes.plugins.mpi
import runtimes.plugins.torch
import runtimes.plugins.torchtune
import runtimes.plugins.volcano
import runtimes.plugins.xgboost
import runtimes.runtime_validation
import runtimes.validation
import scheduler.api.admission_check_rules
import scheduler.api.checks
import scheduler.api.field_rules
import scheduler.api.job_validation
import scheduler.api.quota_validation
import scheduler.api.validation
from tests.validation.kueue_rule_cases import KUEUE_RULE_CASES
from tests.validation.parity_cases import (
    KUEUE_CASES,
    REPO,
    RUNTIME_CASES,
    TRAINJOB_CASES,
    assert_kueue_same_message,
    cli_message,
    request,
    two_node_job,
)
from tests.validation.runtime_rule_cases import RUNTIME_RULE_CASES
from tests.validation.trainer_rule_cases import CUSTOM_RUNTIME_CASES, TRAINER_RULE_CASES
from webhooks.handlers import kueue as kueue_handler
from webhooks.handlers import runtimes as runtimes_handler
from webhooks.handlers import trainjobs as trainjobs_handler
from webhooks.objects import ObjectCache, load_directory

RULE_MODULES = [
    scheduler.api.checks,
    scheduler.api.validation,
    scheduler.api.quota_validation,
    scheduler.api.field_rules,
    scheduler.api.admission_check_rules,
]


@pytest.mark.parametrize("document", [c[1] for c in KUEUE_RULE_CASES], ids=[c[0] for c in KUEUE_RULE_CASES])
def test_kueue_rule_same_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]) -> None:
    assert_kueue_same_message(tmp_path, capsys, document)


def rule_sites(module: Any) -> dict[tuple[int, int], str]:
    """(first line, last line) of each statement raising a FieldError -> its source, for one module."""
    path = Path(module.__file__)
    source = path.read_text()
    tree = ast.parse(source)
    sites: dict[tuple[int, int], str] = {}
    for statement in ast.walk(tree):
        if not isinstance(statement, ast.stmt) or isinstance(statement, ast.FunctionDef | ast.If | ast.For):
            continue
        calls = [
            node
            for node in ast.walk(statement)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "FieldError"
        ]
        if calls:
            assert statement.end_lineno is not None
            segment = ast.get_source_segment(source, statement) or ""
            sites[(statement.lineno, statement.end_lineno)] = segment
    return sites


# Rules only an UPDATE can break: the CLI reads new objects.
UPDATE_ONLY = (
    "immutable",
    "cannot be removed",
    "cannot be added to a running job",
    "can only be modified",
    "cannot be modified",
)


def _trace(modules: list[Any], run: Callable[[], object]) -> dict[str, set[int]]:
    """The lines of ``modules`` that ``run`` executed, per file."""
    files = {str(Path(m.__file__).resolve()) for m in modules}
    executed: dict[str, set[int]] = {name: set() for name in files}

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        filename = str(Path(frame.f_code.co_filename).resolve())
        if filename not in files:
            return None

        def lines(frame: FrameType, event: str, arg: object) -> Any:
            if event == "line":
                executed[filename].add(frame.f_lineno)
            return lines

        return lines

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(previous)
    return executed


def test_every_kueue_rule_has_a_case() -> None:
    documents = [d for _, d in [*KUEUE_CASES, *KUEUE_RULE_CASES]]
    executed = _trace(
        RULE_MODULES,
        lambda: [kueue_handler.validate(request(d, d["kind"]), ObjectCache()) for d in documents],
    )
    missing = []
    for module in RULE_MODULES:
        filename = str(Path(module.__file__).resolve())
        for (first, last), segment in rule_sites(module).items():
            if any(word in segment for word in UPDATE_ONLY):
                continue
            if "unknown.dotted" in segment:
                continue  # --strict, the CLI's choice; the webhook warns (test_unknown_fields_are_the_webhooks_warnings)
            if '"metadata.name", problem)]' in segment and first > 130:
                continue  # a Node's name: Nodes are never sent to trainyard's webhooks
            if "kind trainyard reads{hint}" in segment:
                # a misspelt kind: /validate/kueue answers with its routing rule ("not validated here")
                # before any check (the API server never sends a kind without a CRD); the CLI's
                # "did you mean" is in tests/cli/test_bad_inputs.py (typo-in-kind)
                continue
            if "is not validated here" in segment:
                continue  # a guard: check_object hands validate_kueue_object only the kinds it validates
            if not executed[filename] & set(range(first, last + 1)):
                missing.append(f"{Path(filename).name}:{first}: {segment.splitlines()[0].strip()}")
    assert missing == [], "rules without a parity case:\n" + "\n".join(missing)


# --------------------------------------------------------------------------- Trainer's rules

TRAINER_RULE_MODULES = [
    runtimes.validation,
    scheduler.api.job_validation,
    runtimes.plugins.torch,
    runtimes.plugins.mpi,
    runtimes.plugins.jobset_validation,
    runtimes.plugins.xgboost,
    runtimes.plugins.volcano,
    runtimes.plugins.torchtune,
]


@pytest.fixture(scope="module")
def runtime_cache() -> ObjectCache:
    cache = ObjectCache()
    load_directory(REPO / "manifests" / "runtimes", cache)
    return cache


@pytest.mark.parametrize(
    ("document", "commands"), [c[1:] for c in TRAINER_RULE_CASES], ids=[c[0] for c in TRAINER_RULE_CASES]
)
def test_trainer_rule_same_message(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    runtime_cache: ObjectCache,
    document: dict[str, Any],
    commands: tuple[str, ...],
) -> None:
    verdict = trainjobs_handler.validate(request(document, "TrainJob"), runtime_cache)
    assert not verdict.allowed
    assert verdict.message
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    for command in commands:
        message = cli_message(tmp_path, capsys, [command, str(path)])
        if "runtime" in verdict.message and message != verdict.message:
            # The CLI searches files, not a cluster: after the webhook's words it says where it looked.
            assert message.startswith(verdict.message + " ("), command
            assert "--runtime FILE" in message
        else:
            assert message == verdict.message, command


@pytest.mark.parametrize(
    ("document", "runtime"), [c[1:] for c in CUSTOM_RUNTIME_CASES], ids=[c[0] for c in CUSTOM_RUNTIME_CASES]
)
def test_trainer_rule_with_a_given_runtime_same_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any], runtime: dict[str, Any]
) -> None:
    cache = ObjectCache()
    cache.apply(runtime)
    verdict = trainjobs_handler.validate(request(document, "TrainJob"), cache)
    assert not verdict.allowed
    assert verdict.message
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(document, sort_keys=False))
    runtime_file = tmp_path / "runtime.yaml"
    runtime_file.write_text(yaml.safe_dump(runtime, sort_keys=False))
    for command in ("render", "admit"):
        message = cli_message(tmp_path, capsys, [command, str(job_file), "--runtime", str(runtime_file)])
        assert message == verdict.message, command


def test_every_trainjob_rule_has_a_case() -> None:
    documents = [d for _, d in TRAINJOB_CASES] + [c[1] for c in TRAINER_RULE_CASES]
    # a cache of its own: the webhook remembers verdicts per job shape, and a shape another test
    # reviewed first would be answered from memory, its rules never running under the trace
    runtime_cache = ObjectCache()
    load_directory(REPO / "manifests" / "runtimes", runtime_cache)

    def review_all() -> None:
        for document in documents:
            trainjobs_handler.validate(request(document, "TrainJob"), runtime_cache)
        for _, document, runtime in CUSTOM_RUNTIME_CASES:
            cache = ObjectCache()
            cache.apply(runtime)
            trainjobs_handler.validate(request(document, "TrainJob"), cache)

    executed = _trace(TRAINER_RULE_MODULES, review_all)
    missing = []
    for module in TRAINER_RULE_MODULES:
        filename = str(Path(module.__file__).resolve())
        for (first, last), segment in rule_sites(module).items():
            if any(word in segment for word in UPDATE_ONLY):
                continue
            if "a TrainingRuntime serves its own namespace only" in segment:
                # the webhook looks a TrainingRuntime up in the TrainJob's namespace, so it answers
                # "does not exist" (reached); only the CLI, reading files, can find it elsewhere
                continue
            if "raise RenderError" in segment or 'must have a "\n' in segment:
                continue
            if "check_podset_topology" in segment or "p.at_placement" in segment:
                continue  # TAS annotations: pod templates, the runtimes' (their table is in tests/upstream)
            if not executed[filename] & set(range(first, last + 1)):
                missing.append(f"{Path(filename).name}:{first}: {segment.splitlines()[0].strip()}")
    assert missing == [], "rules without a parity case:\n" + "\n".join(missing)


# --------------------------------------------------------------------------- runtimes' rules


def _render_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]) -> str:
    runtime_file = tmp_path / "runtime.yaml"
    runtime_file.write_text(yaml.safe_dump(document, sort_keys=False))
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(two_node_job(), sort_keys=False))
    return cli_message(tmp_path, capsys, ["render", str(job_file), "--runtime", str(runtime_file)])


@pytest.mark.parametrize("document", [c[1] for c in RUNTIME_RULE_CASES], ids=[c[0] for c in RUNTIME_RULE_CASES])
def test_runtime_rule_same_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]
) -> None:
    verdict = runtimes_handler.validate(request(document, document["kind"]), ObjectCache())
    assert not verdict.allowed
    assert verdict.message
    assert _render_message(tmp_path, capsys, document) == verdict.message


def test_every_runtime_rule_has_a_case() -> None:
    documents = [d for _, d in [*RUNTIME_CASES, *RUNTIME_RULE_CASES]]
    modules = [runtimes.runtime_validation]
    executed = _trace(
        modules, lambda: [runtimes_handler.validate(request(d, d["kind"]), ObjectCache()) for d in documents]
    )
    missing = []
    filename = str(Path(runtimes.runtime_validation.__file__).resolve())
    for (first, last), segment in rule_sites(runtimes.runtime_validation).items():
        if 'FieldError("spec." + error.path' in segment:
            continue  # validate_jobset_spec re-roots the same rules for a JobSet given as such
        if not executed[filename] & set(range(first, last + 1)):
            missing.append(f"{Path(filename).name}:{first}: {segment.splitlines()[0].strip()}")
    assert missing == [], "rules without a parity case:\n" + "\n".join(missing)

"""Every Kueue rule the webhook enforces: the CLI refuses the same object in the same words.

``KUEUE_RULE_CASES`` adds one object per rule to the parity table's basics; the coverage test
traces the webhook's handler over both tables and fails if any rule (a ``FieldError`` raised in
the rule modules) is never reached, so a rule added later without a case is caught. Rules that
only an UPDATE can break (immutable fields) are out of the CLI's reach: it reads new objects.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import yaml

import scheduler.api.admission_check_rules
import scheduler.api.checks
import scheduler.api.field_rules
import scheduler.api.quota_validation
import scheduler.api.validation
from tests.validation.kueue_rule_cases import KUEUE_RULE_CASES
from tests.validation.test_webhook_cli_parity import KUEUE_CASES, cli_message, request
from webhooks.handlers import kueue as kueue_handler
from webhooks.objects import ObjectCache

RULE_MODULES = [
    scheduler.api.checks,
    scheduler.api.validation,
    scheduler.api.quota_validation,
    scheduler.api.field_rules,
    scheduler.api.admission_check_rules,
]


@pytest.mark.parametrize("document", [c[1] for c in KUEUE_RULE_CASES], ids=[c[0] for c in KUEUE_RULE_CASES])
def test_kueue_rule_same_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], document: dict[str, Any]) -> None:
    verdict = kueue_handler.validate(request(document, document["kind"]), ObjectCache())
    assert not verdict.allowed
    assert verdict.message
    path = tmp_path / "object.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    assert cli_message(tmp_path, capsys, ["admit", str(path)]) == verdict.message


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


def test_every_kueue_rule_has_a_case() -> None:
    files = {str(Path(m.__file__).resolve()): m for m in RULE_MODULES}
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
        for _, document in [*KUEUE_CASES, *KUEUE_RULE_CASES]:
            kueue_handler.validate(request(document, document["kind"]), ObjectCache())
    finally:
        sys.settrace(previous)
    missing = []
    for filename, module in files.items():
        for (first, last), segment in rule_sites(module).items():
            if "immutable" in segment:
                continue  # only an UPDATE breaks it
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

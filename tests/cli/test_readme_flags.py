"""Every command line and flag the README documents exists, checked with the real argparse parser.

The README names commands three ways: a table row per command (``| `trainyard admit FILE...` |
... `--strict` ... |``: every flag in the row belongs to that command), command lines in shell
blocks (concrete: they must parse), and the ``trainyard queues`` sub-commands listed under "Queue
administration". Each is resolved to its (sub)parser in ``trainyard.cli.main.build_parser``;
each ``--flag`` must be one that parser accepts.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from trainyard.cli.main import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
SPAN = re.compile(r"`([^`]+)`")
QUEUES_SUBCOMMANDS = ("list", "pending", "describe", "set-quota", "what-if")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _resolve(words: list[str]) -> tuple[str, argparse.ArgumentParser]:
    """The deepest parser the leading words of a command line name (``queues list`` → its parser)."""
    parser = build_parser()
    name = []
    for written in words:
        word = re.split(r"\\?\|", written)[0]  # `list\|pending`: the first alternative
        children = _subparsers(parser)
        if word not in children:
            break
        parser = children[word]
        name.append(word)
    return " ".join(name), parser


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def _documented() -> list[tuple[str, list[str], list[str]]]:
    """(where, leading words after ``trainyard``, flags) for every command the README documents."""
    found: list[tuple[str, list[str], list[str]]] = []
    in_block = in_queues = False
    last_queues: list[str] | None = None  # the queues sub-command the current bullet describes
    for number, line in enumerate(README.read_text().splitlines(), 1):
        where = f"README.md:{number}"
        if line.startswith("```"):
            in_block = not in_block
            continue
        if line.startswith("## "):
            in_queues, last_queues = line.strip() == "## Queue administration", None
        if in_block:
            command = line.split("#")[0].strip()
            if command.startswith("trainyard ") and _resolve(shlex.split(command)[1:])[0]:
                found.append((where, shlex.split(command)[1:], FLAG.findall(command)))
                WRITTEN.append(command.removeprefix("trainyard "))
            continue
        spans = SPAN.findall(line)
        if line.startswith("| `trainyard ") and spans:
            # a table row: the first cell names the command, every flag in the row is its own, except
            # in spans that start with one of its sub-commands (`admission --scenario ...` under bench)
            words = spans[0].split()[1:]
            own = [*FLAG.findall(spans[0])]
            children = _subparsers(_resolve(words)[1])
            for span in spans[1:]:
                if span.split(" ", 1)[0] in children:
                    found.append((where, [_resolve(words)[0], *span.split()], FLAG.findall(span)))
                else:
                    own += FLAG.findall(span)
            found.append((where, words, own))
            continue
        for span in spans:
            if span.startswith("trainyard ") and FLAG.search(span):
                found.append((where, span.split()[1:], FLAG.findall(span)))
                WRITTEN.append(span.removeprefix("trainyard "))
            elif in_queues and span.split(" ", 1)[0] in QUEUES_SUBCOMMANDS:
                last_queues = ["queues", *span.split()]
                found.append((where, last_queues, FLAG.findall(span)))
            elif in_queues and span.startswith("--"):
                # a flag in prose: the bullet's sub-command's, or (before the bullets) every one's
                for words in [last_queues] if last_queues else [["queues", name] for name in QUEUES_SUBCOMMANDS]:
                    found.append((where, words, FLAG.findall(span)))
    return found


WRITTEN: list[str] = []  # command lines as the README writes them (shell blocks, inline examples)
DOCUMENTED = _documented()


def test_the_readme_documents_commands() -> None:
    commands = {_resolve(words)[0] for _, words, _ in DOCUMENTED}
    expected = {"admit", "render", "convert", "run", "serve", "simulate", "kwok export", "bench", "queues list"}
    assert expected <= commands, sorted(commands)
    assert sum(len(flags) for _, _, flags in DOCUMENTED) > 40


@pytest.mark.parametrize(
    ("words", "flags"),
    [(w, f) for _, w, f in DOCUMENTED],
    ids=[f"{where}:{' '.join(w[:2])}" for where, w, _ in DOCUMENTED],
)
def test_every_documented_flag_exists(words: list[str], flags: list[str]) -> None:
    name, parser = _resolve(words)
    assert name, f"'trainyard {' '.join(words)}' names no command"
    missing = sorted(set(flags) - _flags(parser))
    assert not missing, f"'trainyard {name}' has no {', '.join(missing)}"


@pytest.mark.parametrize(
    "line",
    [line for line in WRITTEN if not any(c in line for c in "[|<")],
)
def test_concrete_command_lines_parse(line: str) -> None:
    """Lines without placeholders brackets or alternatives (shell blocks, examples) parse as written."""
    words = shlex.split(line)
    if any(re.fullmatch(r"[A-Z][A-Z0-9._-]*", word) for word in words):
        pytest.skip(f"placeholder in {line!r}")
    try:
        build_parser().parse_args(words)
    except SystemExit as exit_:
        pytest.fail(f"'trainyard {line}' does not parse (exit {exit_.code})")

"""YAML documents that remember where each field came from, for errors that name the line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from simulations.errors import SimulationInputError

FieldPath = tuple[str | int, ...]


@dataclass
class SourceDocument:
    """One YAML document: its data and the line (1-based) of every field path in it."""

    file: str
    data: Any
    lines: dict[FieldPath, int] = field(default_factory=dict)

    def line_of(self, path: FieldPath) -> int | None:
        """Line of ``path``, or of its nearest ancestor that exists."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())

    def error(self, path: FieldPath, message: str) -> SimulationInputError:
        return SimulationInputError(self.file, self.line_of(path), format_path(path), message)


def format_path(path: FieldPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _index_lines(node: yaml.Node, path: FieldPath, lines: dict[FieldPath, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            lines[(*path, key)] = key_node.start_mark.line + 1
            _index_lines(value_node, (*path, key), lines)
            # the key's own line is more useful than the value's first line for scalars
            lines[(*path, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index_lines(item, (*path, index), lines)


def load_documents(path: str | Path, text: str | None = None) -> list[SourceDocument]:
    """Every non-empty document in a YAML file, with line numbers; a syntax error names its line."""
    name = str(path)
    if text is None:
        try:
            text = Path(path).read_text()
        except OSError as error:
            raise SimulationInputError(name, None, "", f"cannot read file: {error.strerror}") from None
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
        datas = list(yaml.safe_load_all(text))
    except yaml.MarkedYAMLError as error:
        line = error.problem_mark.line + 1 if error.problem_mark is not None else None
        raise SimulationInputError(name, line, "", f"invalid YAML: {error.problem}") from None
    documents: list[SourceDocument] = []
    for node, data in zip(nodes, datas, strict=True):
        if node is None or data is None:
            continue
        document = SourceDocument(name, data)
        _index_lines(node, (), document.lines)
        documents.append(document)
    return documents

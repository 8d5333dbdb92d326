"""Reading Kubernetes YAML (files, multi-document streams, directories) with errors a person can act on.

Every failure names the file, the line, the object (kind and name) and, for a schema error, the
field path in the object's own camelCase spelling.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

YAML_SUFFIXES = (".yaml", ".yml", ".json")

FieldPath = tuple[str | int, ...]


class DocumentError(ValueError):
    """Input that cannot be read; the message says where and what to fix."""


@dataclass(frozen=True, slots=True)
class Document:
    path: Path
    line: int  # 1-based line where the document starts
    data: dict[str, Any]
    # 1-based line of each field path (``("spec", "podSets", 0)``), where the YAML says.
    lines: Mapping[FieldPath, int] = field(default_factory=dict)

    def line_of(self, path: FieldPath) -> int:
        """The line of ``path``, else of its nearest parent with one, else the document's."""
        while path:
            found = self.lines.get(path)
            if found is not None:
                return found
            path = path[:-1]
        return self.line

    @property
    def kind(self) -> str:
        return str(self.data.get("kind", ""))

    @property
    def name(self) -> str:
        metadata = self.data.get("metadata")
        return str(metadata.get("name", "")) if isinstance(metadata, dict) else ""

    def where(self) -> str:
        subject = f"{self.kind or 'object'} {self.name!r}" if self.name else (self.kind or "object")
        return f"{self.path}:{self.line}: {subject}"


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; directories walked recursively for YAML/JSON files, in sorted order."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            raise DocumentError(f"{path}: no such file or directory")
    return found


def read_documents(paths: Iterable[str | Path]) -> Iterator[Document]:
    """Every non-empty document of every file; ``List`` objects are unpacked into their items."""
    for path in expand_paths(paths):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise DocumentError(f"{path}: cannot read: {error}") from None
        yield from parse_documents(text, path)


def parse_documents(text: str, path: Path) -> Iterator[Document]:
    loader = yaml.SafeLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            line = node.start_mark.line + 1
            lines: dict[FieldPath, int] = {}
            _index_lines(node, (), lines)
            data = loader.construct_document(node)
            if data is None:
                continue
            if not isinstance(data, dict):
                raise DocumentError(
                    f"{path}:{line}: expected a Kubernetes object (a mapping with apiVersion and kind), "
                    f"got {type(data).__name__}"
                )
            if data.get("kind") == "List" or str(data.get("kind", "")).endswith("List"):
                for index, item in enumerate(data.get("items") or []):
                    if isinstance(item, dict):
                        prefix: FieldPath = ("items", index)
                        item_lines = {p[2:]: n for p, n in lines.items() if p[:2] == prefix}
                        yield Document(path, item_lines.get((), line), item, item_lines)
                continue
            yield Document(path, line, data, lines)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(error, "problem", None) or str(error)
        raise DocumentError(f"{where}: invalid YAML: {problem}") from None
    finally:
        loader.dispose()


def _index_lines(node: yaml.Node, path: FieldPath, lines: dict[FieldPath, int]) -> None:
    """Record the line of every mapping key and sequence item under ``node``."""
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                child = (*path, str(key.value))
                lines[child] = key.start_mark.line + 1
                _index_lines(value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index_lines(item, (*path, index), lines)


def field_path(location: tuple[int | str, ...]) -> str:
    """pydantic's error location as a Kubernetes field path: ``spec.podSets[0].count``."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def explain_validation_error(error: ValidationError) -> list[str]:
    """One line per problem: ``field: message (got value)``."""
    lines = []
    for problem in error.errors():
        location = tuple(p for p in problem["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        value = problem.get("input")
        shown = repr(value) if not isinstance(value, dict | list) else type(value).__name__
        message = problem["msg"].removeprefix("Value error, ")
        lines.append(f"{field_path(location) or '(object)'}: {message} (got {shown})")
    return lines


def document_error(document: Document, error: ValidationError) -> DocumentError:
    details = "; ".join(explain_validation_error(error))
    return DocumentError(f"{document.where()}: {details}")

"""`set-quota` on files: change one quota in the YAML file that holds the ClusterQueue, in place.

ruamel.yaml finds where each value sits (line and column); the edit then splices only those
characters (or adds one line beside the quota's other fields), so every comment, key order,
quote style and blank line of the file stays as it was. Before the file is written, both texts
are parsed again and compared: the new one must equal the old with exactly the changed fields,
or nothing is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from runtimes.k8s.documents import expand_paths
from scheduler.queues import QuotaChange
from trainyard.cli.errors import UserError

_PLAIN = re.compile(r"[^\s,}\]#]+")


def _cluster_queues(document: Any) -> Iterator[Any]:
    if not isinstance(document, dict):
        return
    if document.get("kind") == "List":
        for item in document.get("items") or []:
            yield from _cluster_queues(item)
    elif document.get("kind") == "ClusterQueue":
        yield document


def _find(documents: Iterable[Any], name: str) -> Any | None:
    for document in documents:
        for cq in _cluster_queues(document):
            if (cq.get("metadata") or {}).get("name") == name:
                return cq
    return None


def find_cluster_queue_file(paths: Iterable[str | Path], name: str) -> Path:
    """The one file under ``paths`` that holds ClusterQueue ``name``."""
    holders = []
    for path in expand_paths(paths):
        text = path.read_text(encoding="utf-8")
        if name not in text:
            continue
        if _find(yaml.safe_load_all(text), name) is not None:
            holders.append(path)
    if not holders:
        raise UserError(f"no file under {', '.join(map(str, paths))} holds ClusterQueue {name!r}")
    if len(holders) > 1:
        raise UserError(f"ClusterQueue {name!r} appears in several files ({', '.join(map(str, holders))}); keep one")
    return holders[0]


def _quota_map(cq: Any, change: QuotaChange) -> Any:
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            if flavor.get("name") != change.flavor:
                continue
            for quota in flavor.get("resources") or []:
                if quota.get("name") == change.resource:
                    return quota
    raise UserError(f"ClusterQueue {change.cluster_queue!r} has no quota for {change.flavor}/{change.resource}")


def _token_end(line: str, col: int) -> int:
    if line[col : col + 1] in ("'", '"'):
        quote = line[col]
        end = line.find(quote, col + 1)
        while quote == "'" and end != -1 and line[end + 1 : end + 2] == "'":  # '' escapes a quote
            end = line.find(quote, end + 2)
        if end == -1:
            raise UserError(f"cannot edit a quoted value spanning lines: {line.strip()!r}")
        return end + 1
    match = _PLAIN.match(line, col)
    return match.end() if match else col


def _spelled(value: str, like: str) -> str:
    """``value`` quoted the way the file quoted ``like`` (plain when it was plain)."""
    if like[:1] in ("'", '"'):
        return f"{like[0]}{value}{like[0]}"
    return value


def edited_text(text: str, change: QuotaChange) -> str:
    """``text`` with the change made in place; raises UserError when it cannot be done safely."""
    from ruamel.yaml import YAML

    documents = list(YAML().load_all(text))
    cq = _find(documents, change.cluster_queue)
    if cq is None:
        raise UserError(f"ClusterQueue {change.cluster_queue!r} is not in this file")
    quota = _quota_map(cq, change)
    lines = text.splitlines(keepends=True)
    nominal_line, nominal_col = quota.lc.value("nominalQuota") if "nominalQuota" in quota else (None, None)
    like = ""
    if nominal_line is not None and nominal_col is not None:
        like = lines[nominal_line][nominal_col : _token_end(lines[nominal_line], nominal_col)]
    replacements: list[tuple[int, int, int, str]] = []  # (line, start, end, new text)
    additions: list[tuple[str, str]] = []
    for key, value in change.fields().items():
        if key in quota:
            line, col = quota.lc.value(key)
            end = _token_end(lines[line], col)
            replacements.append((line, col, end, _spelled(value, lines[line][col:end] or like)))
        else:
            additions.append((key, _spelled(value, like)))
    if additions:
        keys = list(quota)
        last_line, last_col = quota.lc.value(keys[-1])
        if quota.fa.flow_style():
            end = _token_end(lines[last_line], last_col)
            extra = "".join(f", {key}: {value}" for key, value in additions)
            replacements.append((last_line, end, end, extra))
        else:
            indent = quota.lc.key(keys[0])[1]
            newline = "\r\n" if lines[last_line].endswith("\r\n") else "\n"
            block = "".join(f"{' ' * indent}{key}: {value}{newline}" for key, value in additions)
            if not lines[last_line].endswith(("\n", "\r")):
                lines[last_line] += newline
            lines.insert(last_line + 1, block)
            replacements = [(ln + 1 if ln > last_line else ln, s, e, t) for ln, s, e, t in replacements]
    for line, start, end, new in sorted(replacements, reverse=True):
        lines[line] = lines[line][:start] + new + lines[line][end:]
    new_text = "".join(lines)
    _check_nothing_lost(text, new_text, change)
    return new_text


def _check_nothing_lost(old_text: str, new_text: str, change: QuotaChange) -> None:
    """The new text must parse to the old documents with exactly the changed fields."""
    expected = list(yaml.safe_load_all(old_text))
    target = _find(expected, change.cluster_queue)
    assert target is not None
    quota = _quota_map(target, change)
    for key, value in change.fields().items():
        quota[key] = yaml.safe_load(value) if value[:1] not in ("'", '"') else value
    got = list(yaml.safe_load_all(new_text))
    if _normal(got) != _normal(expected):
        raise UserError(
            "the in-place edit would change more than the quota (an unusual layout of this file); "
            "nothing was written: edit the file by hand"
        )


def _normal(value: Any) -> Any:
    """Quantities compare by their text: 4 and "4" are the same quota."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return str(value)
    return value


def edit_file(path: Path, change: QuotaChange) -> None:
    """Write the change into ``path`` atomically (a temporary file renamed over it)."""
    text = path.read_text(encoding="utf-8")
    new_text = edited_text(text, change)
    temporary = path.with_name(f".{path.name}.trainyard-edit")
    temporary.write_text(new_text, encoding="utf-8")
    os.replace(temporary, path)

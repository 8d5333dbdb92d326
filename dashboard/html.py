"""HTML built as Python strings, escaped by construction.

``Html`` marks text that is already markup; everything else that goes into ``tag`` is escaped,
so a workload named ``<script>`` shows as text. No templating package: the pages are small
functions of plain data, and reading one tells what the browser gets.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlencode


class Html(str):
    """Markup that is safe to send as it is."""

    __slots__ = ()


Child = str | int | float | None | Iterable["Child"]


def esc(value: object) -> Html:
    """``value`` as text in a page (markup passes through untouched)."""
    if isinstance(value, Html):
        return value
    return Html(html.escape(str(value), quote=True))


def join(children: Child) -> Html:
    """Children as markup: strings escaped, ``Html`` kept, ``None`` dropped, iterables flattened."""
    if children is None:
        return Html("")
    if isinstance(children, str):
        return esc(children)
    if isinstance(children, int | float):
        return Html(str(children))
    return Html("".join(join(child) for child in children))


def _attributes(attrs: Mapping[str, object]) -> str:
    parts = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        parts.append(f" {key}" if value is True else f' {key}="{esc(value)}"')
    return "".join(parts)


VOID = frozenset({"br", "hr", "img", "input", "link", "meta"})


def tag(element: str, /, *children: Child, **attrs: object) -> Html:
    """``<element attrs>children</element>``; ``class_="x"`` is ``class="x"``, ``data_cq`` is ``data-cq``."""
    opening = f"<{element}{_attributes(attrs)}>"
    if element in VOID:
        return Html(opening)
    return Html(f"{opening}{join(children)}</{element}>")


def link(href: str, /, *children: Child, **attrs: object) -> Html:
    return tag("a", *children, href=href, **attrs)


def url(base: str, /, **query: object) -> str:
    """``base?query`` with the parameters that have a value."""
    kept = {key: str(value) for key, value in query.items() if value not in (None, "", False)}
    return f"{base}?{urlencode(kept)}" if kept else base


def json_script(data: Any, **attrs: object) -> Html:
    """Data for a chart, in a ``<script type="application/json">`` the browser never runs."""
    text = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return Html(f'<script type="application/json"{_attributes(attrs)}>{text}</script>')


def table(headers: Iterable[str], rows: Iterable[Html], **attrs: object) -> Html:
    head = tag("thead", tag("tr", [tag("th", header) for header in headers]))
    return tag("table", head, tag("tbody", list(rows)), **attrs)


def row(*cells: Child, **attrs: object) -> Html:
    """A table row; a cell already written as ``<td ...>`` (with its own attributes) is kept."""
    return tag(
        "tr",
        [cell if isinstance(cell, Html) and cell.startswith("<td") else tag("td", cell) for cell in cells],
        **attrs,
    )


def age(seconds: float) -> str:
    """A duration as a person reads it in a table: ``45s``, ``12m``, ``3h 5m``, ``2d 4h``."""
    whole = max(0, int(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m" if minutes else f"{secs}s"

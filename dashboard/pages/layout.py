"""The page shell: navigation, the data source's name, and the scripts that keep a page live.

A page's ``content`` is replaced in place when the data changes (``dashboard.js`` asks for it
again with ``X-Fragment: content``); ``aside`` (a job's logs) stays as it is, so a log being
followed is not interrupted.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from dashboard.html import Html, join, link, tag

NAVIGATION = (("/queues", "Queues"), ("/jobs", "Jobs"), ("/topology", "Topology"), ("/simulations", "Simulations"))


@dataclass(frozen=True)
class Page:
    title: str
    content: Html
    section: str  # the navigation entry it belongs to
    aside: Html = field(default_factory=lambda: Html(""))
    live: bool = True  # refreshed when the data changes


def queue_colour(name: str) -> str:
    """A stable colour per ClusterQueue, the same on every page."""
    hue = int(hashlib.sha256(name.encode()).hexdigest()[:4], 16) % 360
    return f"hsl({hue}, 62%, 52%)"


def shell(page: Page, source: str, version: int) -> Html:
    nav = [
        link(href, label, class_="current" if href == page.section else None, data_nav=label.lower())
        for href, label in NAVIGATION
    ]
    head = tag(
        "head",
        tag("meta", charset="utf-8"),
        tag("title", f"{page.title} · trainyard"),
        tag("link", rel="icon", href="data:,"),
        tag("link", rel="stylesheet", href="/static/dashboard.css"),
        tag("script", src="/static/charts.js", defer=True),
        tag("script", src="/static/dashboard.js", defer=True),
    )
    header = tag(
        "header",
        tag("span", "trainyard", class_="brand"),
        tag("nav", nav),
        tag("span", source, class_="source", title="where this dashboard reads from"),
        tag("span", "live" if page.live else "", id="live", class_="live"),
    )
    body = tag(
        "body",
        header,
        tag("main", page.content, id="content"),
        page.aside,
        data_live="1" if page.live else None,
        data_version=version,
    )
    return Html("<!doctype html>" + join([tag("html", head, body, lang="en")]))


def notes(lines: list[str]) -> Html:
    if not lines:
        return Html("")
    return tag("ul", [tag("li", line) for line in lines], class_="notes")


def pager(base: str, offset: int, limit: int, total: int, what: str, **query: object) -> Html:
    """``what 1-50 of 1,234`` with previous and next links that keep the other parameters."""
    from dashboard.html import url

    if total == 0:
        return tag("p", f"no {what}", class_="pager")
    last = min(total, offset + limit)
    parts: list[Html] = [tag("span", f"{what} {offset + 1:,}–{last:,} of {total:,}")]
    if offset > 0:
        parts.append(link(url(base, offset=max(0, offset - limit), **query), "← previous", class_="prev"))
    if last < total:
        parts.append(link(url(base, offset=last, **query), "next →", class_="next"))
    return tag("p", parts, class_="pager")


def bar(segments: list[tuple[int, str, str]], scale: int, markers: list[tuple[int, str]] = ()) -> Html:  # type: ignore[assignment]
    """A horizontal bar: ``(amount, css colour, title)`` segments and ``(position, title)`` markers."""
    if scale <= 0:
        return tag("div", class_="bar empty")
    parts = [
        tag("span", class_="seg", style=f"width:{100 * amount / scale:.2f}%;background:{colour}", title=title)
        for amount, colour, title in segments
        if amount > 0
    ]
    parts += [
        tag("i", class_="mark", style=f"left:{min(100.0, 100 * position / scale):.2f}%", title=title)
        for position, title in markers
    ]
    return tag("div", parts, class_="bar")

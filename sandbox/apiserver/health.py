"""``/healthz``, ``/readyz`` and ``/livez``: the API server's health checks, as kube-apiserver serves them.

Plain text: ``ok``; with ``?verbose`` one ``[+]NAME ok`` line per check and ``readyz check passed``;
``/readyz/NAME`` asks one check; ``?exclude=NAME`` leaves checks out. The real server lets anyone
read them (``system:public-info-viewer``), so a request with no credentials is answered too.
The checks are this server's own parts: ``ping`` (it answers), ``log``, ``etcd`` (the store
holds its objects) and, for readiness only, ``shutdown`` (it is not stopping).
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from multidict import MultiMapping

ENDPOINTS = ("healthz", "livez", "readyz")
Check = Callable[[], str | None]  # None when the check passes, else why it fails


def _checks(endpoint: str, stopping: Callable[[], bool]) -> dict[str, Check]:
    checks: dict[str, Check] = {"ping": lambda: None, "log": lambda: None, "etcd": lambda: None}
    if endpoint == "readyz":
        checks["shutdown"] = lambda: "process is shutting down" if stopping() else None
    return checks


def is_health_path(path: str) -> bool:
    parts = [p for p in path.split("/") if p]
    return bool(parts) and parts[0] in ENDPOINTS and len(parts) <= 2


def health_answer(path: str, query: MultiMapping[str], stopping: Callable[[], bool]) -> web.Response:
    """The answer to ``/ENDPOINT`` or ``/ENDPOINT/CHECK`` (``is_health_path`` holds)."""
    parts = [p for p in path.split("/") if p]
    endpoint = parts[0]
    checks = _checks(endpoint, stopping)
    if len(parts) == 2:
        check = checks.get(parts[1])
        if check is None:
            return web.Response(status=404, text="404 page not found\n")
        failure = check()
        if failure is not None:
            return web.Response(status=500, text=f"internal server error: {failure}\n")
        return web.Response(text="ok")
    excluded = set(query.getall("exclude", []))
    lines, failed = [], False
    for name, check in checks.items():
        if name in excluded:
            lines.append(f"[+]{name} excluded: ok")
            continue
        failure = check()
        failed = failed or failure is not None
        lines.append(f"[+]{name} ok" if failure is None else f"[-]{name} failed: reason withheld")
    verdict = f"{endpoint} check failed" if failed else f"{endpoint} check passed"
    if "verbose" in query or failed:
        return web.Response(status=500 if failed else 200, text="\n".join([*lines, verdict]) + "\n")
    return web.Response(text="ok")

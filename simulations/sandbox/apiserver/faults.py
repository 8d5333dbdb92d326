"""Faults a test injects into the fake API server: failed requests, dropped and stalled watches.

``fail`` makes the next N requests of a verb (``get``, ``list``, ``watch``, ``create``,
``update``, ``patch``, ``delete``; None for any) whose path contains a given text answer with a
status (500, 429 with Retry-After, 409, 503...) and a proper ``Status`` body. The watch faults
act on the streams open right now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import ApiError
from .store import Store

VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})


@dataclass
class FailureRule:
    verb: str | None
    path_contains: str
    code: int
    remaining: int
    message: str
    retry_after: int | None = None

    def matches(self, verb: str, path: str) -> bool:
        return self.remaining > 0 and (self.verb is None or self.verb == verb) and self.path_contains in path


@dataclass
class Faults:
    store: Store
    rules: list[FailureRule] = field(default_factory=list)
    # how many requests each rule failed, for assertions: (verb, path) of every failed request
    failed: list[tuple[str, str]] = field(default_factory=list)

    def fail(
        self,
        verb: str | None = None,
        path_contains: str = "",
        *,
        code: int = 500,
        times: int = 1,
        message: str | None = None,
        retry_after: int | None = None,
    ) -> FailureRule:
        """Fail the next ``times`` matching requests with ``code``."""
        if verb is not None and verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}; use one of {sorted(VERBS)} or None")
        rule = FailureRule(
            verb, path_contains, code, times, message or f"injected failure ({code})", retry_after=retry_after
        )
        self.rules.append(rule)
        return rule

    def take(self, verb: str, path: str) -> tuple[ApiError, int | None] | None:
        """The injected error for this request, if a rule matches (and counts it)."""
        for rule in self.rules:
            if rule.matches(verb, path):
                rule.remaining -= 1
                self.failed.append((verb, path))
                return ApiError(rule.code, rule.message), rule.retry_after
        return None

    def clear(self) -> None:
        self.rules.clear()

    def close_watches(self, *, abrupt: bool = False, where: Callable[[str], bool] | None = None) -> int:
        """End the open watch streams (cleanly, or by cutting the connection); returns how many."""
        closed = 0
        for subscription in list(self.store.subscriptions):
            if where is None or where(subscription.rtype.plural):
                subscription.close(abrupt=abrupt)
                closed += 1
        return closed

    def stall_watches(self) -> int:
        """Open streams stop delivering events but stay open: a stuck watch (kubernetes-asyncio #360)."""
        for subscription in self.store.subscriptions:
            subscription.stalled = True
        return len(self.store.subscriptions)

    def expire_watches(self) -> int:
        """Compact the history and close the open streams: every resuming watch gets 410."""
        self.store.compact()
        return self.close_watches()

    @property
    def open_watches(self) -> int:
        return len(self.store.subscriptions)

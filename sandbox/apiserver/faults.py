"""Faults injected into the fake API server: failed requests, expired, dropped and stalled watches.

``fail`` makes the next N requests of a verb (``get``, ``list``, ``watch``, ``create``,
``update``, ``patch``, ``delete``; None for any) whose path contains a given text (and, with
``query_has``, whose query has a given parameter) answer with a status (500, 429 with
Retry-After, 409, 503...) and a proper ``Status`` body; ``lose_answers`` serves them (a write
commits) and cuts the connection before the answer. The watch faults act on the streams
open right now. ``random(rate, seed, kinds)`` turns on chaos: each request then meets one of the
chosen faults with probability ``rate`` (from a seeded generator, so a run can be repeated),
which lets a benchmark run for minutes against a misbehaving server. ``injected`` counts every
fault by kind.
"""

from __future__ import annotations

import math
import random as random_module
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .errors import ApiError
from .store import Store

VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})
WRITE_VERBS = frozenset({"update", "patch"})

# the kinds of fault ``random`` draws from
CONFLICT = "conflict"  # 409 on an update or patch, as if another writer came first
EXPIRE = "expire"  # history compacted and watches closed: every resuming watch and continue gets 410
THROTTLE = "throttle"  # 429 with Retry-After
SERVER_ERROR = "server-error"  # 500 or 503
DROP = "drop"  # the open watch connections are cut
FAULT_KINDS = (CONFLICT, EXPIRE, THROTTLE, SERVER_ERROR, DROP)
# drawn only when named: a write served, its answer lost (the client cannot tell it landed)
LOST = "answer-lost"
OPT_IN_KINDS = (LOST,)

Injected = tuple[ApiError, int | None]  # the error answer and its Retry-After seconds


@dataclass
class FailureRule:
    verb: str | None
    path_contains: str
    code: int
    remaining: int
    message: str
    retry_after: int | None = None
    query_has: str | None = None

    def matches(self, verb: str, path: str, query: Mapping[str, str]) -> bool:
        return (
            self.remaining > 0
            and (self.verb is None or self.verb == verb)
            and self.path_contains in path
            and (self.query_has is None or bool(query.get(self.query_has)))
        )


@dataclass
class Chaos:
    """Random faults: each request meets one with probability ``rate``."""

    rate: float
    kinds: tuple[str, ...]
    rng: random_module.Random
    retry_after: int = 1
    compaction_interval: float = 0.0  # seconds an expiry waits after the last one (0: none)
    last_compaction: float = -math.inf

    def draw(self, *, updates: bool, writes: bool) -> str | None:
        """The fault this request meets, if any: with probability ``rate`` one of the kinds that
        apply (a conflict only to an update, a lost answer only to a write), an expiry at most once
        per ``compaction_interval``. The embedded server and the real cluster's proxy both ask it."""
        if self.rng.random() >= self.rate:
            return None
        applicable = [k for k in self.kinds if (k != CONFLICT or updates) and (k != LOST or writes)]
        if not applicable:
            return None
        kind = self.rng.choice(applicable)
        if kind == EXPIRE:
            now = time.monotonic()
            if now - self.last_compaction < self.compaction_interval:
                return None
            self.last_compaction = now
        return kind


@dataclass
class Faults:
    store: Store
    rules: list[FailureRule] = field(default_factory=list)
    lost_answers: list[FailureRule] = field(default_factory=list)  # served, then the connection cut
    # (verb, path) of every request answered with an injected error, for assertions
    failed: list[tuple[str, str]] = field(default_factory=list)
    injected: Counter[str] = field(default_factory=Counter)
    chaos: Chaos | None = None

    def fail(
        self,
        verb: str | None = None,
        path_contains: str = "",
        *,
        code: int = 500,
        times: int = 1,
        message: str | None = None,
        retry_after: int | None = None,
        query_has: str | None = None,
    ) -> FailureRule:
        """Fail the next ``times`` matching requests with ``code``."""
        if verb is not None and verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}; use one of {sorted(VERBS)} or None")
        rule = FailureRule(
            verb,
            path_contains,
            code,
            times,
            message or f"injected failure ({code})",
            retry_after=retry_after,
            query_has=query_has,
        )
        self.rules.append(rule)
        return rule

    def random(
        self,
        rate: float,
        seed: int = 0,
        kinds: Iterable[str] = FAULT_KINDS,
        *,
        retry_after: int = 1,
        compaction_interval: float = 0.0,
    ) -> None:
        """From now on each request meets one of ``kinds`` with probability ``rate`` (0 turns chaos off).

        ``compaction_interval``: an expiry (history compacted, every informer lists again) drawn
        sooner than this many seconds after the last one is no fault. kube-apiserver compacts every
        5 minutes; an expiry several times a second makes every client relist the whole cluster
        each second, which no client of ten thousand objects survives and no cluster does.
        """
        chosen = tuple(kinds)
        unknown = sorted(set(chosen) - set(FAULT_KINDS) - set(OPT_IN_KINDS))
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; use some of {list(FAULT_KINDS + OPT_IN_KINDS)}")
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"the fault rate must be between 0 and 1, got {rate}")
        self.chaos = (
            Chaos(rate, chosen, random_module.Random(seed), retry_after, compaction_interval)
            if rate > 0 and chosen
            else None
        )

    def calm(self) -> None:
        """Stop random faults (rules already set stay)."""
        self.chaos = None

    def take(self, verb: str, path: str, query: Mapping[str, str] | None = None) -> Injected | None:
        """The injected error for this request, if a rule or chance says so (and counts it)."""
        for rule in self.rules:
            if rule.matches(verb, path, query or {}):
                rule.remaining -= 1
                self.failed.append((verb, path))
                self.injected[f"http-{rule.code}"] += 1
                return ApiError(rule.code, rule.message), rule.retry_after
        if self.chaos is None:
            return None
        kind = self.chaos.draw(updates=verb in WRITE_VERBS, writes=verb in WRITE_VERBS | {"create", "delete"})
        return None if kind is None else self._chaos(verb, path, self.chaos, kind)

    def _chaos(self, verb: str, path: str, chaos: Chaos, kind: str) -> Injected | None:
        if kind == LOST:  # served as usual; the server then finds this rule, cuts the answer and counts it
            self.lost_answers.append(FailureRule(verb, path, 0, 1, "answer lost"))
            return None
        self.injected[kind] += 1
        if kind == EXPIRE:
            self._expire()
            return None
        if kind == DROP:
            self._close(abrupt=True, where=None)
            return None
        self.failed.append((verb, path))
        if kind == CONFLICT:
            return (
                ApiError(
                    409,
                    "Operation cannot be fulfilled: the object has been modified; please apply your changes to "
                    "the latest version and try again (injected)",
                    reason="Conflict",
                ),
                None,
            )
        if kind == THROTTLE:
            return ApiError(429, "Too many requests, please try again later (injected)"), chaos.retry_after
        code = chaos.rng.choice((500, 503))
        return ApiError(code, f"injected server error ({code})"), None

    def lose_answers(self, verb: str | None = None, path_contains: str = "", *, times: int = 1) -> FailureRule:
        """Serve the next ``times`` matching requests (a write commits), then cut the connection
        before the answer: the client sees a dropped connection and cannot tell whether it landed,
        as when a network fails or a load balancer times out after kube-apiserver committed."""
        if verb is not None and verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}; use one of {sorted(VERBS)} or None")
        rule = FailureRule(verb, path_contains, 0, times, "answer lost")
        self.lost_answers.append(rule)
        return rule

    def answer_lost(self, verb: str, path: str, query: Mapping[str, str] | None = None) -> bool:
        """Whether this served request's answer is to be lost (and counts it)."""
        for rule in self.lost_answers:
            if rule.matches(verb, path, query or {}):
                rule.remaining -= 1
                self.injected[LOST] += 1
                if rule.remaining == 0:
                    self.lost_answers.remove(rule)
                return True
        return False

    def clear(self) -> None:
        self.rules.clear()
        self.lost_answers.clear()
        self.chaos = None

    def _close(self, *, abrupt: bool, where: Callable[[str], bool] | None) -> int:
        closed = 0
        for subscription in list(self.store.subscriptions):
            if where is None or where(subscription.rtype.plural):
                subscription.close(abrupt=abrupt)
                closed += 1
        return closed

    def _expire(self) -> int:
        self.store.compact()
        return self._close(abrupt=False, where=None)

    def close_watches(self, *, abrupt: bool = False, where: Callable[[str], bool] | None = None) -> int:
        """End the open watch streams (cleanly, or by cutting the connection); returns how many."""
        self.injected[DROP] += 1
        return self._close(abrupt=abrupt, where=where)

    def stall_watches(self) -> int:
        """Open streams stop delivering events but stay open: a stuck watch (kubernetes-asyncio #360)."""
        self.injected["stall"] += 1
        for subscription in self.store.subscriptions:
            subscription.stalled = True
        return len(self.store.subscriptions)

    def expire_watches(self) -> int:
        """Compact the history and close the open streams: every resuming watch gets 410."""
        self.injected[EXPIRE] += 1
        return self._expire()

    @property
    def open_watches(self) -> int:
        return len(self.store.subscriptions)

    @property
    def total_injected(self) -> int:
        return sum(self.injected.values())

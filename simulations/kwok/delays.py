"""KWOK delay and jitter rules (lifecycle.Stage.Delay) in virtual time."""

from __future__ import annotations

import datetime as dt
import random
from functools import lru_cache
from typing import Any

from simulations.kwok.constants import SIMULATION_EPOCH
from simulations.kwok.query import parse_go_duration, run_query


def draw_delay_ns(duration: int, jitter: int | None, rng: random.Random) -> int:
    """KWOK's jitter rule (lifecycle.Stage.Delay), in nanoseconds."""
    if jitter is None:
        return duration
    if jitter <= duration:
        return jitter
    return duration + uniform_below(jitter - duration, rng)


def uniform_below(span: int, rng: random.Random) -> int:
    """``rng.randrange(span)`` for ``span`` > 0, drawing exactly what it draws.

    CPython's ``Random.randrange(n)`` is ``_randbelow_with_getrandbits(n)``: draw
    ``n.bit_length()`` bits until the number is below ``n``. Written out here, the loop compiles
    with the rest of the stage walk instead of running interpreted once per pod (a 128-node gang
    draws 128 delays); ``tests/simulations/test_kwok_delays.py`` holds it to ``randrange``'s stream.
    """
    bits = span.bit_length()
    draw = rng.getrandbits(bits)
    while draw >= span:
        draw = rng.getrandbits(bits)
    return draw


def duration_from(milliseconds: int | None, source: str | None, view: dict[str, Any], now: float) -> int | None:
    default = None if milliseconds is None else milliseconds * 1_000_000
    if source is None:
        return default
    out = run_query(source, view)
    if out is None:
        return None
    if not out:
        return default
    value = out[0]
    if not isinstance(value, str) or not value:
        return None
    parsed = _delay_text(value)
    if not isinstance(parsed, dt.datetime):
        return parsed
    virtual_now = SIMULATION_EPOCH + dt.timedelta(seconds=now)
    return round((parsed - virtual_now).total_seconds() * 1e9)


@lru_cache(maxsize=65536)
def _delay_text(value: str) -> int | dt.datetime | None:
    """A delay value read: a moment (RFC 3339 with a zone), else Go duration nanoseconds (None: invalid).

    Cached because a gang's delay and jitter annotations usually carry the same text. A Go
    duration ends in a unit (ns, us, ms, s, m, h) and an ISO moment in a digit or ``Z``, so
    text ending in s/m/h skips the ``fromisoformat`` attempt that could only fail.
    """
    if value[-1] in "smh":
        return parse_go_duration(value)
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return parse_go_duration(value)
    if moment.tzinfo is None:
        return parse_go_duration(value)
    return moment

"""The stage walk's delay draws: ``uniform_below`` must draw exactly what ``randrange`` draws,
or every simulated pod's timing (and with it the decision hash) would move."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from simulations.kwok.delays import draw_delay_ns, uniform_below


@given(seed=st.integers(min_value=0, max_value=2**32), spans=st.lists(st.integers(1, 2**70), min_size=1, max_size=40))
def test_uniform_below_draws_the_stream_randrange_draws(seed: int, spans: list[int]) -> None:
    ours, theirs = random.Random(seed), random.Random(seed)
    assert [uniform_below(span, ours) for span in spans] == [theirs.randrange(span) for span in spans]
    # and both generators are left in the same state for whatever draws next
    assert ours.random() == theirs.random()


def test_powers_of_two_and_their_neighbours_keep_the_stream() -> None:
    # n = 2**k needs k + 1 bits and rejects half the draws: the rejection loop's worst case
    spans = [n + d for k in range(64) for n in [2**k] for d in (-1, 0, 1) if n + d > 0]
    ours, theirs = random.Random(7), random.Random(7)
    assert [uniform_below(span, ours) for span in spans] == [theirs.randrange(span) for span in spans]


def test_draw_delay_ns_keeps_kwoks_rule() -> None:
    rng = random.Random(3)
    assert draw_delay_ns(5, None, rng) == 5  # no jitter: the delay itself
    assert draw_delay_ns(5, 4, rng) == 4  # jitter at or below the delay: the jitter
    draws = {draw_delay_ns(5, 9, rng) for _ in range(200)}
    assert draws == {5, 6, 7, 8}  # otherwise uniform in [delay, jitter)

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtimes.k8s.quantity import Quantity, QuantityError, format_amount, parse_quantity, to_amount


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        (8, Fraction(8)),
        ("1.5", Fraction(3, 2)),
        ("4Gi", Fraction(4 * 2**30)),
        ("100M", Fraction(10**8)),
        ("1e3", Fraction(1000)),
        ("1E-3", Fraction(1, 1000)),
        ("250u", Fraction(1, 4000)),
        (".5", Fraction(1, 2)),
        ("+3k", Fraction(3000)),
    ],
    ids=str,
)
def test_parse_quantity_is_exact(text: str | int, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "5Xi", "1.2.3", "Gi", "--1"])
def test_parse_quantity_rejects_garbage_with_a_hint(text: str) -> None:
    with pytest.raises(QuantityError, match="quantity"):
        parse_quantity(text)


def test_amounts_follow_kueue_units() -> None:
    assert to_amount("cpu", parse_quantity("500m")) == 500
    assert to_amount("cpu", parse_quantity("2")) == 2000
    assert to_amount("memory", parse_quantity("1.5Ki")) == 1536
    assert to_amount("nvidia.com/gpu", parse_quantity("8")) == 8
    # Value() rounds up
    assert to_amount("memory", parse_quantity("1500m")) == 2


@given(st.integers(min_value=0, max_value=10**15))
def test_format_amount_round_trips(amount: int) -> None:
    for resource in ("cpu", "memory", "nvidia.com/gpu"):
        assert to_amount(resource, parse_quantity(format_amount(resource, amount))) == amount


def test_quantity_remembers_its_spelling() -> None:
    quantity = Quantity("36Gi")
    assert str(quantity) == "36Gi"
    assert quantity == Quantity(36 * 2**30)

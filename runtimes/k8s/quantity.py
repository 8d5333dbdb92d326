"""Kubernetes resource quantities ("500m", "4Gi", "1e3"), parsed exactly.

The engine works on integers: an *amount* is milli-units for ``cpu`` and whole units (rounded
up, as Kubernetes' ``Quantity.Value()`` does) for every other resource. That is the same
convention Kueue uses (``resources.ResourceValue``), so quotas compare exactly as they do there.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")

# Resources counted in milli-units internally (Kubernetes' MilliValue); all others use Value().
MILLI_RESOURCES = frozenset({"cpu"})


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a Kubernetes quantity into an exact rational number of base units."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity; use a number such as 2, 500m or 4Gi")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"{text!r} is not a quantity; use a finite number")
        return Fraction(str(text))
    return _parse_text(text)


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Fraction:
    # Clusters spell the same few quantities over and over ("8", "500m", "64Gi"): parse each once.
    match = _PATTERN.match(text.strip())
    if match is None:
        raise QuantityError(
            f"{text!r} is not a Kubernetes quantity; use a number with an optional suffix "
            "such as 2, 500m, 1.5, 4Gi or 100M"
        )
    number, suffix = match.group(1), match.group(2) or ""
    value = Fraction(number)
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if suffix in _DECIMAL:
        return value * _DECIMAL[suffix]
    return value * Fraction(10) ** int(suffix[1:])


def to_amount(resource: str, quantity: Fraction) -> int:
    """The engine's integer amount for ``quantity`` of ``resource`` (milli for cpu, rounded up)."""
    scaled = quantity * 1000 if resource in MILLI_RESOURCES else quantity
    return math.ceil(scaled)


def format_amount(resource: str, amount: int) -> str:
    """Render an engine amount as the shortest exact Kubernetes quantity."""
    if resource in MILLI_RESOURCES:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if amount != 0 and ("memory" in resource or "storage" in resource):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if amount % unit == 0:
                return f"{amount // unit}{suffix}"
    return str(amount)


class Quantity:
    """A quantity that remembers how it was written, so objects round-trip unchanged."""

    __slots__ = ("raw", "value")

    def __init__(self, raw: str | int | float) -> None:
        self.raw = raw
        self.value = parse_quantity(raw)

    def amount(self, resource: str) -> int:
        return to_amount(resource, self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.raw!r})"

    def __str__(self) -> str:
        return str(self.raw)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def validate(value: Any) -> Quantity:
            if isinstance(value, Quantity):
                return value
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise ValueError(f"expected a quantity such as 2, 500m or 4Gi, got {value!r}")
            try:
                return Quantity(value)
            except QuantityError as error:
                raise ValueError(str(error)) from None

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(lambda q: q.raw),
        )

"""runtimes.k8s.wire: orjson's speed without its inexact corners."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtimes.k8s import wire

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_what_it_writes_the_json_module_reads_back_the_same(value: object) -> None:
    assert json.loads(wire.dumps(value)) == value
    assert wire.loads(wire.dumps(value)) == value


def test_an_integer_beyond_64_bits_stays_an_integer_both_ways() -> None:
    document = {"spec": {"trainer": {"numNodes": 99999999999999999999}}}
    encoded = wire.dumps(document)
    assert encoded == b'{"spec":{"trainer":{"numNodes":99999999999999999999}}}'
    parsed = wire.loads(encoded)
    assert parsed == document
    assert isinstance(parsed["spec"]["trainer"]["numNodes"], int)


def test_non_string_keys_are_written_as_the_json_module_writes_them() -> None:
    assert wire.loads(wire.dumps({1: "a"})) == {"1": "a"}


@pytest.mark.parametrize("text", [b"", b"{", b"not json", "{'single': 'quotes'}"])
def test_what_is_not_json_raises_value_error(text: bytes | str) -> None:
    with pytest.raises(ValueError):
        wire.loads(text)


def test_an_api_servers_int64_values_are_read_exactly() -> None:
    largest = 2**63 - 1
    parsed = wire.loads_from_api_server(wire.dumps({"metadata": {"generation": largest}}))
    assert parsed["metadata"]["generation"] == largest
    assert isinstance(parsed["metadata"]["generation"], int)

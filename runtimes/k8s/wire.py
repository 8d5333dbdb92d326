"""JSON as the Kubernetes API carries it: orjson where it is exact, the json module where it is not.

A controller lists tens of thousands of objects at every start and the sandbox API server encodes
every one of them; orjson does both several times faster than the json module. It is not exact
everywhere, so the json module takes over where it is not: orjson reads an integer of more than
64 bits as a float (a user's ``numNodes: 99999999999999999999`` must reach validation as the
integer it is) and cannot write one, nor a dict with non-string keys.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# 19 digits in a row may be an integer beyond 64 bits: then the json module reads the whole body.
# Found by mapping every digit to "0" and anything else to a space, then a plain substring search:
# a tenth of what the regular expression \d{19} costs, which cost three times the parse itself.
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_DIGIT_RUN = b"0" * 19


def loads(data: bytes | str) -> Any:
    """Parse one JSON document from anyone (raises ValueError when it is not JSON)."""
    raw = data.encode() if isinstance(data, str) else data
    if _LONG_DIGIT_RUN in raw.translate(_DIGITS_AS_ZERO):
        return json.loads(raw)
    return orjson.loads(raw)


def loads_from_api_server(data: bytes) -> Any:
    """Parse a body a Kubernetes API server wrote. Its integers are int64 (the apiserver refuses
    larger ones), which orjson reads exactly, so the scan for long digit runs that ``loads`` makes
    (it costs about as much as the parse on a list of thousands of objects) is left out."""
    return orjson.loads(data)


def dumps(document: Any, *, sort_keys: bool = False) -> bytes:
    """Compact UTF-8 JSON of ``document`` (with ``sort_keys``, a canonical form to compare by)."""
    try:
        return orjson.dumps(document, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:  # a too-large integer, a non-string key: what orjson refuses, json writes
        return json.dumps(document, separators=(",", ":"), sort_keys=sort_keys).encode()

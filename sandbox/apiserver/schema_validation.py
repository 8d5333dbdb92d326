"""Validating a custom resource against its structural schema, in kube-apiserver's words.

The OpenAPI checks a CRD's schema makes (type, nullable, enum, required, minimum/maximum,
minLength/maxLength, pattern, the date-time format, minItems/maxItems, min/maxProperties,
int-or-string), then the list invariants of ``x-kubernetes-list-type`` (no two items of a
``map`` list with the same keys, no two equal items of a ``set``), each failure a
``FieldError`` whose type, path and message are the real server's: ``spec.x: Unsupported value:
"y": supported values: "a", "b"``, ``spec.x: Invalid value: "string": spec.x in body must be of
type integer: "string"``, ``spec.x: Too many: 17: must have at most 16 items``. A type mismatch
stops the checks below that field, as there.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from .field_errors import (
    NO_VALUE,
    FieldError,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)

Schema = dict[str, Any]
DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$")


def type_name(value: Any) -> str:
    """The JSON type of a value, as go-openapi names it in its messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _is_type(value: Any, wanted: str) -> bool:
    actual = type_name(value)
    return actual == wanted or (wanted == "number" and actual == "integer")


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _type_error(path: str, value: Any, wanted: str) -> FieldError:
    actual = type_name(value)
    return FieldError("TypeInvalid", path, actual, f'{path} in body must be of type {wanted}: "{actual}"')


@cache
def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def validate(value: Any, schema: Schema, path: str = "") -> list[FieldError]:
    """Every schema violation in ``value``: the OpenAPI checks first, then the list invariants."""
    errors: list[FieldError] = []
    duplicates: list[FieldError] = []
    _validate(value, schema, path, errors, duplicates)
    return errors + duplicates


def _validate(value: Any, schema: Schema, path: str, errors: list[FieldError], duplicates: list[FieldError]) -> None:
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, int | str) or isinstance(value, bool):
            actual = type_name(value)
            errors.append(_type_error(path, value, "integer,string"))
            errors.append(invalid("", "", f'"{path}" must validate at least one schema (anyOf)'))
            errors.append(
                FieldError("TypeInvalid", path, actual, f'{path} in body must be of type integer: "{actual}"')
            )
            return
    elif value is None:
        if not schema.get("nullable") and "type" in schema:
            errors.append(_type_error(path, value, str(schema["type"])))
        return
    elif "type" in schema and not _is_type(value, str(schema["type"])):
        errors.append(_type_error(path, value, str(schema["type"])))
        return
    if isinstance(value, str):
        _check_string(value, schema, path, errors)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, schema, path, errors)
    enum = schema.get("enum")
    if enum is not None and not any(value == e and type(value) is type(e) for e in enum):
        errors.append(not_supported(path, value, enum))
    if isinstance(value, list):
        _check_list(value, schema, path, errors, duplicates)
    elif isinstance(value, dict):
        _check_object(value, schema, path, errors, duplicates)


def _check_string(value: str, schema: Schema, path: str, errors: list[FieldError]) -> None:
    if "maxLength" in schema and len(value.encode()) > int(schema["maxLength"]):
        errors.append(too_long(path, int(schema["maxLength"])))
    if "minLength" in schema and len(value) < int(schema["minLength"]):
        errors.append(invalid(path, value, f"{path} in body should be at least {schema['minLength']} chars long"))
    if "pattern" in schema and not _pattern(str(schema["pattern"])).search(value):
        errors.append(invalid(path, value, f"{path} in body should match '{schema['pattern']}'"))
    if schema.get("format") == "date-time" and not DATE_TIME.match(value):
        errors.append(invalid(path, value, f'{path} in body must be of type date-time: "{value}"'))


def _check_number(value: float, schema: Schema, path: str, errors: list[FieldError]) -> None:
    if "minimum" in schema:
        bound = schema["minimum"]
        if value < bound or (schema.get("exclusiveMinimum") and value == bound):
            relation = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
            errors.append(invalid(path, value, f"{path} in body should be {relation} {bound}"))
    if "maximum" in schema:
        bound = schema["maximum"]
        if value > bound or (schema.get("exclusiveMaximum") and value == bound):
            relation = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
            errors.append(invalid(path, value, f"{path} in body should be {relation} {bound}"))


def _check_list(
    value: list[Any], schema: Schema, path: str, errors: list[FieldError], duplicates: list[FieldError]
) -> None:
    if "maxItems" in schema and len(value) > int(schema["maxItems"]):
        errors.append(too_many(path, len(value), int(schema["maxItems"])))
    if "minItems" in schema and len(value) < int(schema["minItems"]):
        errors.append(invalid(path, len(value), f"{path} in body should have at least {schema['minItems']} items"))
    items: Schema = schema.get("items") or {}
    for index, item in enumerate(value):
        _validate(item, items, f"{path}[{index}]", errors, duplicates)
    duplicates.extend(_duplicates(value, schema, path))


def _duplicates(value: list[Any], schema: Schema, path: str) -> list[FieldError]:
    """structurallisttype: the items of a ``map`` list are unique by their keys, of a ``set`` by value."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type not in ("map", "set"):
        return []
    keys = list(schema.get("x-kubernetes-list-map-keys") or [])
    seen: list[Any] = []
    found: list[FieldError] = []
    for index, item in enumerate(value):
        if list_type == "map":
            if not isinstance(item, dict):
                continue
            identity: Any = {key: item[key] for key in keys if key in item}
        else:
            identity = item
        if identity in seen:
            found.append(FieldError("Duplicate", f"{path}[{index}]", identity))
        else:
            seen.append(identity)
    return found


def _check_object(
    value: dict[str, Any], schema: Schema, path: str, errors: list[FieldError], duplicates: list[FieldError]
) -> None:
    properties: dict[str, Schema] = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value:
            errors.append(required(_child(path, name)))
    if "maxProperties" in schema and len(value) > int(schema["maxProperties"]):
        errors.append(too_many(path, len(value), int(schema["maxProperties"])))
    if "minProperties" in schema and len(value) < int(schema["minProperties"]):
        errors.append(
            invalid(path, len(value), f"{path} in body should have at least {schema['minProperties']} properties")
        )
    additional = schema.get("additionalProperties")
    for key in sorted(value):
        declared = properties.get(key)
        if declared is None and isinstance(additional, dict):
            declared = additional
        if declared is not None:
            _validate(value[key], declared, _child(path, key), errors, duplicates)


def has_rules(schema: Schema) -> bool:
    """Whether any part of ``schema`` carries CEL rules (``x-kubernetes-validations``)."""
    if schema.get("x-kubernetes-validations"):
        return True
    children = list((schema.get("properties") or {}).values())
    for nested in ("items", "additionalProperties"):
        if isinstance(schema.get(nested), dict):
            children.append(schema[nested])
    return any(has_rules(child) for child in children)


__all__ = ["NO_VALUE", "FieldError", "has_rules", "type_name", "validate"]

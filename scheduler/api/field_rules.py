"""Field rules Kueue's validators share: quantities, fair-sharing weights, selectors, taints.

Pure functions returning ``FieldError`` lists (the one shape shared with ``runtimes``);
``errors_from_pydantic`` (a model that did not parse) lives in ``runtimes.messages``, re-exported here.
"""

from __future__ import annotations

from fractions import Fraction

from runtimes.errors import FieldError
from runtimes.k8s.core import Taint, Toleration
from runtimes.k8s.meta import LabelSelector
from runtimes.k8s.quantity import Quantity
from runtimes.messages import errors_from_pydantic as errors_from_pydantic
from scheduler.api.kueue import FairSharing
from scheduler.api.names import label_value_error, qualified_name_error

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
MIN_NONZERO_FAIR_SHARING_WEIGHT = Fraction(1, 10**9)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def quantity_non_negative(quantity: Quantity | None, path: str) -> list[FieldError]:
    if quantity is not None and quantity.value < 0:
        return [FieldError(path, f"must be greater than or equal to 0, got {quantity.raw}")]
    return []


def validate_fair_sharing(fair_sharing: FairSharing | None, path: str) -> list[FieldError]:
    if fair_sharing is None or fair_sharing.weight is None:
        return []
    weight = fair_sharing.weight.value
    if weight < 0:
        return [FieldError(f"{path}.weight", f"must be greater than or equal to 0, got {fair_sharing.weight.raw}")]
    if 0 < weight <= MIN_NONZERO_FAIR_SHARING_WEIGHT:
        return [FieldError(f"{path}.weight", f"must be 0 or greater than 1e-9, got {fair_sharing.weight.raw}")]
    return []


def validate_label_selector(selector: LabelSelector | None, path: str) -> list[FieldError]:
    if selector is None:
        return []
    errors: list[FieldError] = []
    for key, value in selector.match_labels.items():
        if (problem := qualified_name_error(key)) is not None:
            errors.append(FieldError(f"{path}.matchLabels", problem))
        if (problem := label_value_error(value)) is not None:
            errors.append(FieldError(f"{path}.matchLabels[{key}]", problem))
    for i, requirement in enumerate(selector.match_expressions):
        base = f"{path}.matchExpressions[{i}]"
        if (problem := qualified_name_error(requirement.key)) is not None:
            errors.append(FieldError(f"{base}.key", problem))
        if requirement.operator in ("In", "NotIn"):
            if not requirement.values:
                errors.append(
                    FieldError(f"{base}.values", f"must be non-empty when operator is {requirement.operator}")
                )
        elif requirement.operator in ("Exists", "DoesNotExist"):
            if requirement.values:
                errors.append(FieldError(f"{base}.values", f"must be empty when operator is {requirement.operator}"))
        else:
            errors.append(
                FieldError(
                    f"{base}.operator",
                    f"{requirement.operator!r} is not one of In, NotIn, Exists, DoesNotExist",
                )
            )
    return errors


def validate_taint(taint: Taint, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if (problem := qualified_name_error(taint.key)) is not None:
        errors.append(FieldError(f"{path}.key", problem))
    if taint.value and (problem := label_value_error(taint.value)) is not None:
        errors.append(FieldError(f"{path}.value", problem))
    if taint.effect not in TAINT_EFFECTS:
        errors.append(FieldError(f"{path}.effect", f"{taint.effect!r} is not one of {', '.join(TAINT_EFFECTS)}"))
    return errors


def validate_toleration(toleration: Toleration, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    operator = toleration.operator or "Equal"
    if toleration.key and (problem := qualified_name_error(toleration.key)) is not None:
        errors.append(FieldError(f"{path}.key", problem))
    if operator not in TOLERATION_OPERATORS:
        errors.append(FieldError(f"{path}.operator", f"{operator!r} is not one of Equal, Exists"))
    elif operator == "Exists" and toleration.value:
        errors.append(FieldError(f"{path}.value", "must be empty when operator is Exists"))
    elif operator == "Equal" and not toleration.key:
        errors.append(FieldError(f"{path}.operator", "must be Exists when key is empty"))
    if toleration.effect and toleration.effect not in TAINT_EFFECTS:
        errors.append(FieldError(f"{path}.effect", f"{toleration.effect!r} is not one of {', '.join(TAINT_EFFECTS)}"))
    return errors

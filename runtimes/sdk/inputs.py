"""Checks on what a user hands the SDK, shared by every backend (local and Kubernetes).

- ``shippable_source``: a ``CustomTrainer.func`` travels to the training nodes as source text
  and is called there by name, so it must be a plain ``def`` with source on disk that needs
  nothing from the caller's local scope. Lambdas, closures, builtins, methods and other callables
  are refused here, at ``train()``, instead of failing on every node later.
- ``resource_requirements``: ``resources_per_node`` keys are kubeflow's SDK aliases (``cpu``,
  ``memory``, ``gpu`` → ``nvidia.com/gpu``, case-insensitive as there) or full Kubernetes resource
  names; a typo such as ``gpus`` is refused rather than requested as a resource nobody has.
"""

from __future__ import annotations

import difflib
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from runtimes.k8s.quantity import QuantityError, parse_quantity

# kubeflow's SDK (kubeflow/trainer/utils get_resources_per_node) lowercases keys and renames gpu.
RESOURCE_ALIASES = {"cpu": "cpu", "memory": "memory", "gpu": "nvidia.com/gpu"}
# Kubernetes' own unqualified resource names a node may offer, besides the aliases.
STANDARD_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_MODULE_LEVEL_HINT = "define it with `def` at module level (imports inside its body) and pass values via func_args"


def check_shippable(func: object, field: str = "CustomTrainer.func") -> None:
    """Raise ValueError saying why ``func`` cannot be shipped as source, and what to do instead."""
    if inspect.isbuiltin(func):
        name = getattr(func, "__name__", repr(func))
        raise ValueError(
            f"{field}: {name!r} is a builtin with no Python source to ship to the training nodes; "
            f"wrap the call in your own function: {_MODULE_LEVEL_HINT}"
        )
    if inspect.ismethod(func):
        raise ValueError(
            f"{field}: {func.__qualname__!r} is a bound method; its object does not exist on the training "
            f"nodes: {_MODULE_LEVEL_HINT}"
        )
    if not inspect.isfunction(func):
        raise ValueError(
            f"{field} must be a Python function, got {type(func).__name__}; only a function's source is "
            f"shipped: {_MODULE_LEVEL_HINT}"
        )
    if func.__name__ == "<lambda>":
        raise ValueError(
            f"{field}: a lambda cannot be shipped: its source is part of another line and it has no name to "
            f"call on the training nodes; {_MODULE_LEVEL_HINT}"
        )
    if inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func):
        raise ValueError(f"{field}: {func.__name__!r} is async; the nodes call it as a plain function; use `def`")
    free = func.__code__.co_freevars
    if free:
        names = ", ".join(free)
        raise ValueError(
            f"{field}: {func.__qualname__!r} is a closure over local variable(s) {names} of the function it "
            f"is defined in; they do not exist on the training nodes: {_MODULE_LEVEL_HINT}"
        )


def shippable_source(func: Callable[..., Any], field: str = "CustomTrainer.func") -> str:
    """The dedented source of ``func`` without decorator lines, after ``check_shippable``."""
    check_shippable(func, field)
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        raise ValueError(
            f"{field} {func.__name__!r}: its source is not available (define it in a file, "
            "not in an interactive session without source)"
        ) from None
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("@"))


def _resource_name(key: object, field: str) -> str:
    if not isinstance(key, str) or not key:
        raise ValueError(f"{field}: resource names must be non-empty strings, got {key!r}")
    alias = RESOURCE_ALIASES.get(key.lower())
    if alias is not None:
        return alias
    if "/" in key or key.startswith("hugepages-") or key in STANDARD_RESOURCES:
        return key
    known = [*RESOURCE_ALIASES, "ephemeral-storage"]
    close = difflib.get_close_matches(key.lower(), known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ValueError(
        f"{field}: unknown resource {key!r}; {hint}use one of the aliases cpu, memory, gpu (= nvidia.com/gpu) "
        "or a full Kubernetes resource name such as nvidia.com/gpu or ephemeral-storage"
    )


def resource_requirements(values: dict[str, Any] | None, field: str) -> dict[str, Any] | None:
    """``{"cpu": 2, "gpu": 1}`` → requests = limits with Kubernetes names, every amount checked."""
    if not values:
        return None
    if not isinstance(values, dict):
        raise ValueError(f"{field} must be a dict like {{'cpu': 2, 'memory': '4Gi', 'gpu': 1}}, got {values!r}")
    amounts: dict[str, str] = {}
    for key, value in values.items():
        name = _resource_name(key, field)
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(f"{field}[{key!r}]: {value!r} is not a quantity (a number or a string like '4Gi')")
        try:
            amount = parse_quantity(value)
        except QuantityError:
            raise ValueError(
                f"{field}[{key!r}]: {value!r} is not a Kubernetes quantity (e.g. 2, '500m', '4Gi')"
            ) from None
        if amount < 0:
            raise ValueError(f"{field}[{key!r}]: {value!r} is negative; a request must be 0 or more")
        if name in amounts:
            raise ValueError(f"{field}: {key!r} names {name} a second time")
        amounts[name] = str(value)
    return {"requests": dict(amounts), "limits": dict(amounts)}

"""What an object goes through on every write before it is stored, as kube-apiserver runs it.

``prepare`` is the decoding of a custom resource: pruned to its CRD's structural schema (each
dropped field a ``unknown field "..."`` warning, fieldValidation's default ``Warn``) and
defaulted. ``validate`` is the registry strategy's check: ``metadata.name`` and the labels for
every kind, then, for a custom resource, its schema (``schema_validation``), refused with 422
``Invalid`` naming each field. The CRDs are trainyard's copies (manifests/crds); where a copy
(or its module's CRD) carries CEL rules (``x-kubernetes-validations``), the rules themselves are not
evaluated, but a refusal for a blocking error says, as the real server does, that some rules were
not checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from .crds import crd_version
from .errors import ApiError
from .field_errors import BLOCKING, FieldError, invalid, invalid_object, required
from .kinds import ResourceType
from .object_names import labels_errors, name_errors
from .schema_defaulting import apply_defaults
from .schema_pruning import prune
from .schema_validation import has_rules, validate
from .schemas import kind_schema

Schema = dict[str, Any]
# The kinds whose CRDs (Kueue v0.17, Trainer v2.3, JobSet v0.11.1) carry CEL rules: trainyard's copies
# carry none (manifests/crds keeps to what Kubernetes 1.27 serves), and the rules are not evaluated
# here, but a refusal of such a kind for a blocking error says that they were not checked, as
# kube-apiserver says it (tests/real/test_differential.py holds this set to the modules' CRDs).
KINDS_WITH_CEL_RULES = frozenset(
    {
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("kueue.x-k8s.io", "Cohort"),
        ("kueue.x-k8s.io", "LocalQueue"),
        ("kueue.x-k8s.io", "ResourceFlavor"),
        ("kueue.x-k8s.io", "Topology"),
        ("kueue.x-k8s.io", "Workload"),
        ("trainer.kubeflow.org", "TrainJob"),
        ("trainer.kubeflow.org", "TrainingRuntime"),
        ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
        ("jobset.x-k8s.io", "JobSet"),
    }
)
RULES_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


OMITTED_EMPTY_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")
OMITTED_EMPTY = {("", "ConfigMap"): ("data", "binaryData"), ("", "Secret"): ("data", "stringData")}


def _omit_empty(part: Any, keys: tuple[str, ...]) -> None:
    if isinstance(part, dict):
        for key in keys:
            if key in part and part[key] in ({}, [], None):
                del part[key]


@dataclass(frozen=True)
class CustomResourceSchema:
    """A custom kind's structural schema: whole (its ``metadata`` ObjectMeta, for pruning), without
    ``metadata`` (for validation: ObjectMeta is checked as ObjectMeta), and whether it has CEL rules."""

    schema: Schema
    body: Schema
    rules: bool


@cache
def custom_schema(rtype: ResourceType) -> CustomResourceSchema | None:
    """The schema a custom kind's objects are held to; None for built-ins and kinds with no CRD copy."""
    if not rtype.custom:
        return None
    crd = crd_version(rtype.group, rtype.version, rtype.kind)
    if crd is None or not crd.schema:
        return None
    schema = kind_schema(rtype)
    body = {**schema, "properties": {k: v for k, v in schema["properties"].items() if k != "metadata"}}
    rules = has_rules(crd.schema) or (rtype.group, rtype.kind) in KINDS_WITH_CEL_RULES
    return CustomResourceSchema(schema, body, rules)


def prepare(
    rtype: ResourceType, obj: dict[str, Any], warnings: list[str] | None = None, *, only: str | None = None
) -> None:
    """Prune and default a custom resource (in place); each dropped field is a warning in ``warnings``.

    ``only="status"``: a status write, whose other parts are not kept: only its status is touched.
    Empty ObjectMeta maps and lists (and a ConfigMap's or Secret's empty data) are left out, as
    Go's ``omitempty`` leaves them out of what the real server stores.
    """
    if only is None:
        _omit_empty(obj.get("metadata"), OMITTED_EMPTY_METADATA)
        _omit_empty(obj, OMITTED_EMPTY.get((rtype.group, rtype.kind), ()))
    custom = custom_schema(rtype)
    if custom is None:
        return
    if only is None:
        dropped = prune(obj, custom.schema, root=True)
        apply_defaults(obj, custom.schema)
    else:
        part = custom.schema["properties"].get(only) or {}
        dropped = prune(obj[only], part, only) if only in obj else []
        apply_defaults(obj.get(only), part)
    if warnings is not None:
        warnings.extend(f'unknown field "{path}"' for path in sorted(dropped))


def validate_object(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Refuse (422) an object whose metadata or schema the real server would refuse."""
    metadata = obj.get("metadata") or {}
    errors: list[FieldError] = []
    name = str(metadata.get("name") or "")
    if name:
        errors.extend(name_errors(name, label=(rtype.group, rtype.kind) == ("", "Namespace")))
    else:
        errors.append(required("metadata.name", "name or generateName is required"))
    labels = metadata.get("labels")
    if isinstance(labels, dict):
        errors.extend(labels_errors(labels, "metadata.labels"))
    custom = custom_schema(rtype)
    if custom is not None:
        errors.extend(validate({key: value for key, value in obj.items() if key != "metadata"}, custom.body))
        if custom.rules and any(error.type in BLOCKING for error in errors):
            errors.append(invalid("", None, RULES_NOT_CHECKED))
    if errors:
        kind = f"{rtype.kind}.{rtype.group}" if rtype.group else rtype.kind
        raise invalid_object(kind, name, errors, group=rtype.group, kind=rtype.kind)


def missing_resource_version(rtype: ResourceType, name: str) -> ApiError:
    """The refusal of an update without ``metadata.resourceVersion`` where the kind needs one."""
    error = invalid("metadata.resourceVersion", 0, "must be specified for an update")
    return invalid_object(rtype.qualified_plural, name, [error], group=rtype.group, kind=rtype.plural)

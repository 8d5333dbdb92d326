"""One validation path per kind, for every object trainyard reads.

The webhook handlers, the CLI (``admit``, ``render``, ``run``, ``convert``, ``simulate``,
``kwok export``), ``serve --objects``, the simulator's loaders, the SDK and the controllers all
call :func:`check_object`: the apiVersion and kind are recognised (or the document is foreign and
skipped), the object is parsed, the owner's rules run (Kueue's in ``scheduler.api.validation``,
Trainer's in ``runtimes.validation``), and unknown fields are listed as the API server's field
validation lists them. The verdict's :attr:`ObjectCheck.message` is the webhook's message, so
every entry point refuses an object in the same words.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from runtimes.api.trainer import (
    TRAINER_API_VERSION,
    TRAINER_GROUP,
    TRAINER_KINDS,
    ClusterTrainingRuntime,
    TrainingRuntime,
    TrainJob,
    TrainJobSpec,
)
from runtimes.errors import FieldError
from runtimes.k8s.core import Node
from runtimes.k8s.fields import UnknownField, register_upstream_fields, unknown_fields
from runtimes.k8s.meta import Resource
from runtimes.messages import (
    MAX_LISTED_ERRORS,
    describe_errors,
    errors_from_pydantic,
    parse_field_path,
    subject_of,
    version_not_understood,
)
from runtimes.validation import validate_runtime, validate_trainjob_fields
from scheduler.api.kueue import KUEUE_API_VERSIONS, KUEUE_GROUP, KUEUE_KINDS, ClusterQueueSpec, deprecated_fields
from scheduler.api.names import dns_subdomain_error
from scheduler.api.validation import validate_kueue_object

CORE_KINDS = ("Node", "Namespace")
# Kueue kinds trainyard does not act on: a Kueue install's manifests are foreign here, not wrong.
KUEUE_KINDS_NOT_READ = frozenset(
    {"AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster", "ProvisioningRequestConfig"}
)
# Kinds whose name alone says they are meant for trainyard, whatever group the document names.
# (Workload and Topology are also kube-scheduler's and the admission-check kinds are generic names:
# the API group decides for those.)
_DISTINCT_KINDS = frozenset(TRAINER_KINDS) | (frozenset(KUEUE_KINDS) - {"Workload", "Topology"} - KUEUE_KINDS_NOT_READ)

# Upstream fields the models leave to round trip (so they are not "unknown").
register_upstream_fields(ClusterQueueSpec, ("admissionScope",))
register_upstream_fields(TrainJobSpec, ("podSpecOverrides",))


@dataclass
class ObjectCheck:
    """What :func:`check_object` found. ``foreign``: a kind trainyard does not handle (skip it)."""

    api_version: str
    kind: str
    subject: str
    obj: Resource | None = None
    errors: list[FieldError] = field(default_factory=list)
    unknown: list[UnknownField] = field(default_factory=list)
    deprecated: list[str] = field(default_factory=list)
    foreign: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors and not self.foreign

    @property
    def message(self) -> str:
        """The webhook's message for the errors (empty when there are none)."""
        return describe_errors(self.subject, self.errors) if self.errors else ""

    def warnings(self) -> list[str]:
        """The AdmissionReview warnings: deprecated spellings, then unknown fields."""
        return [*self.deprecated, *(str(unknown) for unknown in self.unknown)]

    def strict_errors(self) -> list[FieldError]:
        """Unknown fields as errors (``--strict``, the API server's ``Strict`` field validation)."""
        return [
            FieldError(unknown.dotted, str(unknown).replace(f' "{unknown.dotted}"', "", 1)) for unknown in self.unknown
        ]


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _understood(kind: str) -> tuple[str, ...]:
    if kind in TRAINER_KINDS:
        return (TRAINER_API_VERSION,)
    if kind in KUEUE_KINDS:
        return KUEUE_API_VERSIONS
    return ("v1",)


def classify(api_version: str, kind: str) -> tuple[type[Resource] | None, FieldError | None]:
    """The model for (apiVersion, kind); an error for a wrong version or kind of ours; (None, None)
    for a foreign document."""
    if not api_version and not kind:
        return None, None  # not a Kubernetes object at all (a dashboard's JSON, a values file): foreign
    if not api_version or not kind:
        missing = "apiVersion" if not api_version else "kind"
        return None, FieldError(missing, "must be set: every object needs apiVersion and kind")
    group = _group(api_version)
    if kind in TRAINER_KINDS and api_version == TRAINER_API_VERSION:
        return TRAINER_KINDS[kind], None
    if kind in KUEUE_KINDS and api_version in KUEUE_API_VERSIONS:
        return KUEUE_KINDS[kind], None
    if kind == "Node" and api_version == "v1":
        return Node, None
    if kind == "Namespace" and api_version == "v1":
        return Resource, None
    ours = group in (TRAINER_GROUP, KUEUE_GROUP) or (kind in CORE_KINDS and not group)
    if kind in _DISTINCT_KINDS or (ours and (kind in KUEUE_KINDS or kind in CORE_KINDS)):
        return None, version_not_understood(api_version, kind, _understood(kind))
    if group == TRAINER_GROUP or (group == KUEUE_GROUP and kind not in KUEUE_KINDS_NOT_READ):
        known = sorted(TRAINER_KINDS if group == TRAINER_GROUP else KUEUE_KINDS)
        close = difflib.get_close_matches(kind, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return None, FieldError(
            "kind", f"{kind!r} is not a {group} kind trainyard reads{hint}; known: {', '.join(known)}"
        )
    return None, None


def _rules(obj: Resource, old: Resource | None) -> list[FieldError]:
    if isinstance(obj, TrainJob):
        return validate_trainjob_fields(obj)
    if isinstance(obj, TrainingRuntime | ClusterTrainingRuntime):
        return validate_runtime(obj)
    if type(obj) in (Node, Resource):
        problem = dns_subdomain_error(obj.name) if obj.name or not obj.metadata.generate_name else None
        return [] if problem is None else [FieldError("metadata.name", problem)]
    return validate_kueue_object(obj, old)


def check_object(
    document: dict[str, Any],
    old: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    namespace: str | None = None,
    rules: bool = True,
) -> ObjectCheck:
    """Parse and validate one object by the rules of its kind; ``old`` is the object before an UPDATE.

    ``name`` and ``namespace`` (an AdmissionReview's) name the object in the message when given.
    ``rules=False`` parses and lists unknown fields only, for a caller that runs the kind's rules
    itself in a wider check (the TrainJob webhook validates with the runtime in one pass).
    """
    api_version, kind = str(document.get("apiVersion") or ""), str(document.get("kind") or "")
    metadata = document.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    shown_name = name or (str(metadata.get("name")) if metadata.get("name") else None)
    shown_namespace = namespace or (str(metadata.get("namespace")) if metadata.get("namespace") else None)
    check = ObjectCheck(api_version, kind, subject_of(kind or "object", shown_name, shown_namespace))
    model, problem = classify(api_version, kind)
    if problem is not None:
        check.errors.append(problem)
        return check
    if model is None:
        check.foreign = True
        return check
    try:
        obj = model.model_validate(document)
    except ValidationError as error:
        check.errors = errors_from_pydantic(error)
        return check
    old_obj = None
    if old is not None:
        try:
            old_obj = model.model_validate(old)
        except ValidationError:
            old_obj = None  # an old object that no longer parses cannot constrain the update
    check.obj = obj
    check.deprecated = deprecated_fields(document) if kind in KUEUE_KINDS else []
    check.errors = _rules(obj, old_obj) if rules else []
    check.unknown = [] if model is Resource else unknown_fields(obj)
    return check


__all__ = [
    "MAX_LISTED_ERRORS",
    "ObjectCheck",
    "check_object",
    "classify",
    "describe_errors",
    "parse_field_path",
    "subject_of",
]

"""``/validate/kueue``: ClusterQueue, LocalQueue, ResourceFlavor, Cohort, Topology, WorkloadPriorityClass.

The rules are Kueue's, kept in ``scheduler.api.validation`` and asked through
``scheduler.api.checks.check_object`` (the CLI's path too); this handler only words the answer.
v1beta1 spellings are accepted with a warning, and so are unknown fields (the API server's
``Warn`` field validation).
"""

from __future__ import annotations

from typing import Any

from runtimes.errors import FieldError
from scheduler.api.checks import check_object, describe_errors, subject_of
from scheduler.api.kueue import KUEUE_API_VERSIONS, KUEUE_KINDS
from scheduler.api.validation import VALIDATED_KINDS
from webhooks.handlers import reviews_objects
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict


@reviews_objects()
def validate(request: AdmissionRequest, document: dict[str, Any], cache: ObjectCache) -> Verdict:
    kind, api_version = document.get("kind"), document.get("apiVersion")
    if kind not in VALIDATED_KINDS and (api_version in KUEUE_API_VERSIONS or kind not in KUEUE_KINDS):
        subject = subject_of(str(kind or request.kind), request.name, request.namespace)
        problem = FieldError("kind", f"{kind!r} is not validated here; expected one of {', '.join(VALIDATED_KINDS)}")
        return Verdict.invalid(describe_errors(subject, [problem]))
    old = request.old_object if request.operation == "UPDATE" else None
    check = check_object(document, old, name=request.name, namespace=request.namespace)
    if check.errors:
        return Verdict.invalid(check.message, check.warnings())
    return Verdict.allow(check.warnings())

"""``/validate/kueue``: ClusterQueue, LocalQueue, ResourceFlavor, Cohort, Topology, WorkloadPriorityClass.

The rules are Kueue's, kept in ``scheduler.api.validation``; this handler only parses the
review's objects, asks, and words the answer. v1beta1 spellings are accepted with a warning.
"""

from __future__ import annotations

from scheduler.api.kueue import deprecated_fields
from scheduler.api.validation import parse_kueue_object, validate_kueue_object
from webhooks.handlers import describe_errors, subject_of
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict


def validate(request: AdmissionRequest, cache: ObjectCache) -> Verdict:
    if request.operation in ("DELETE", "CONNECT"):
        return Verdict.allow()
    document = request.object
    if document is None:
        return Verdict.invalid(f"{request.operation} of {request.kind} carries no request.object")
    subject = subject_of(str(document.get("kind") or request.kind), request.name, request.namespace)
    warnings = deprecated_fields(document)
    obj, errors = parse_kueue_object(document)
    if obj is None:
        return Verdict.invalid(describe_errors(subject, errors), warnings)
    old = None
    if request.operation == "UPDATE" and request.old_object is not None:
        # An old object that no longer parses cannot constrain the update; judge the new one alone.
        old, _ = parse_kueue_object(request.old_object)
    errors = validate_kueue_object(obj, old)
    if errors:
        return Verdict.invalid(describe_errors(subject, errors), warnings)
    return Verdict.allow(warnings)

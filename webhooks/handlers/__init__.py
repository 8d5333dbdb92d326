"""Admission handlers: pure functions of an ``AdmissionRequest`` and the ``ObjectCache``.

A handler returns a ``Verdict`` and never changes anything, so dryRun requests need no
special path. Every rule it applies is asked of the package that owns it: each object is read
through ``scheduler.api.checks.check_object`` (the one validation path the CLI uses too, so both
refuse an object in the same words, and unknown fields come back as warnings), Trainer's rules
with a runtime come from ``runtimes``, and "can ever fit" from the engine.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from scheduler.api.checks import MAX_LISTED_ERRORS as MAX_LISTED_ERRORS
from scheduler.api.checks import describe_errors as describe_errors
from scheduler.api.checks import subject_of as subject_of
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict

Handler = Callable[[AdmissionRequest, ObjectCache], Verdict]
ObjectHandler = Callable[[AdmissionRequest, dict[str, Any], ObjectCache], Verdict]

REVIEWED_OPERATIONS = ("CREATE", "UPDATE")


def reviews_objects(what: str | None = None) -> Callable[[ObjectHandler], Handler]:
    """Make a ``Handler`` of a function that reviews the object a CREATE or UPDATE carries.

    Every handler judges objects being written: DELETE and CONNECT pass untouched, and a request
    without ``request.object`` is refused, naming ``what`` (for example "a TrainJob"; the request's
    kind when not given). The wrapped function receives that object.
    """

    def wrap(review: ObjectHandler) -> Handler:
        @functools.wraps(review)
        def handler(request: AdmissionRequest, cache: ObjectCache) -> Verdict:
            if request.operation not in REVIEWED_OPERATIONS:
                return Verdict.allow()
            if request.object is None:
                return Verdict.invalid(f"{request.operation} of {what or request.kind} carries no request.object")
            return review(request, request.object, cache)

        return handler

    return wrap

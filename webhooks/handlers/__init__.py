"""Admission handlers: pure functions of an ``AdmissionRequest`` and the ``ObjectCache``.

A handler returns a ``Verdict`` and never changes anything, so dryRun requests need no
special path. Every rule it applies is asked of the package that owns it: each object is read
through ``scheduler.api.checks.check_object`` (the one validation path the CLI uses too, so both
refuse an object in the same words, and unknown fields come back as warnings), Trainer's rules
with a runtime come from ``runtimes``, and "can ever fit" from the engine.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.api.checks import MAX_LISTED_ERRORS as MAX_LISTED_ERRORS
from scheduler.api.checks import describe_errors as describe_errors
from scheduler.api.checks import subject_of as subject_of
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest, Verdict

Handler = Callable[[AdmissionRequest, ObjectCache], Verdict]

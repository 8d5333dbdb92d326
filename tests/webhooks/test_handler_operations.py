"""Every admission handler reviews the object a CREATE or UPDATE carries, and only that."""

from __future__ import annotations

import pytest

from webhooks.handlers import Handler, kueue, runtimes, trainjobs
from webhooks.objects import ObjectCache
from webhooks.review import AdmissionRequest

HANDLERS = [
    pytest.param(kueue.validate, "ClusterQueue", "ClusterQueue", id="validate-kueue"),
    pytest.param(runtimes.validate, "TrainingRuntime", "TrainingRuntime", id="validate-runtimes"),
    pytest.param(trainjobs.validate, "TrainJob", "a TrainJob", id="validate-trainjobs"),
    pytest.param(trainjobs.mutate, "TrainJob", "a TrainJob", id="mutate-trainjobs"),
]


def _request(operation: str, kind: str) -> AdmissionRequest:
    return AdmissionRequest(
        uid="u1",
        group="",
        version="v1",
        kind=kind,
        operation=operation,
        namespace="team-a",
        name="x",
        object=None,
        old_object=None,
        dry_run=False,
    )


@pytest.mark.parametrize(("handler", "kind", "named"), HANDLERS)
@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_deletes_and_connects_pass_untouched(handler: Handler, kind: str, named: str, operation: str) -> None:
    verdict = handler(_request(operation, kind), ObjectCache())
    assert verdict.allowed
    assert verdict.patch is None
    assert verdict.message is None


@pytest.mark.parametrize(("handler", "kind", "named"), HANDLERS)
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_a_write_without_an_object_is_refused_by_name(handler: Handler, kind: str, named: str, operation: str) -> None:
    verdict = handler(_request(operation, kind), ObjectCache())
    assert not verdict.allowed
    assert verdict.message == f"{operation} of {named} carries no request.object"

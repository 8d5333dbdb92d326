"""Every file in manifests/samples passes the one validation path, and the webhook, with no warning.

The samples are what a new user tries first: they must agree with each other (TrainJobs name the
bundled LocalQueues) and with every rule trainyard applies anywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtimes.api.trainer import TrainJob
from scheduler.api.kueue import KUEUE_KINDS
from scheduler.api.loading import read_checked
from scheduler.api.validation import VALIDATED_KINDS
from webhooks.handlers import kueue as kueue_handler
from webhooks.handlers import trainjobs as trainjobs_handler
from webhooks.objects import ObjectCache, load_directory
from webhooks.review import AdmissionRequest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "manifests" / "samples"
SAMPLE_FILES = sorted(p for p in SAMPLES.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))


def test_there_are_samples() -> None:
    assert len(SAMPLE_FILES) >= 8


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[str(p.relative_to(SAMPLES)) for p in SAMPLE_FILES])
def test_sample_passes_validation_without_warnings(path: Path) -> None:
    checked = read_checked([path])
    assert checked.objects or checked.namespaces
    assert checked.warnings == []
    assert checked.notes == []


def request(document: dict[str, object], kind: str, operation: str = "CREATE") -> AdmissionRequest:
    metadata = document.get("metadata")
    assert isinstance(metadata, dict)
    return AdmissionRequest(
        uid="u",
        group="",
        version="",
        kind=kind,
        operation=operation,
        namespace=metadata.get("namespace"),
        name=metadata.get("name"),
        object=document,
        old_object=None,
        dry_run=False,
    )


@pytest.fixture(scope="module")
def cluster() -> ObjectCache:
    """The runtimes and the bundled queues, as ``serve --objects`` loads them."""
    cache = ObjectCache()
    load_directory(REPO / "manifests" / "runtimes", cache)
    load_directory(SAMPLES / "kueue", cache)
    return cache


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[str(p.relative_to(SAMPLES)) for p in SAMPLE_FILES])
def test_sample_passes_the_webhook(path: Path, cluster: ObjectCache) -> None:
    for read in read_checked([path]).objects:
        document = read.document.data
        if read.obj.kind in VALIDATED_KINDS and read.obj.kind in KUEUE_KINDS and read.obj.kind != "Workload":
            verdict = kueue_handler.validate(request(document, read.obj.kind), cluster)
            assert verdict.allowed, verdict.message
            assert verdict.warnings == []
        elif isinstance(read.obj, TrainJob):
            mutation = trainjobs_handler.mutate(request(document, "TrainJob"), cluster)
            assert mutation.allowed, mutation.message
            verdict = trainjobs_handler.validate(request(document, "TrainJob"), cluster)
            assert verdict.allowed, f"{read.where()}: {verdict.message}"
            assert verdict.warnings == []

"""The "can ever fit" rule for a queued TrainJob, asked of the owning code.

The TrainJob becomes a Kueue Workload exactly as the controller builds it
(``scheduler.trainjob.workload_for_trainjob``); its pod sets are checked against Kueue's TAS
annotation rules, then the admission engine says whether it could ever be admitted (quota
reachable through borrowing up the cohort, a topology domain at the required level large
enough on an empty cluster). The engine is built from the object cache once per cache version.
"""

from __future__ import annotations

from runtimes.api.trainer import AnyTrainingRuntime, TrainJob
from runtimes.errors import FieldError
from scheduler.api.job_validation import validate_pod_sets_topology
from scheduler.engine import AdmissionEngine, EngineConfig
from scheduler.trainjob import workload_for_trainjob
from webhooks.objects import ENGINE_KINDS, ObjectCache


def build_engine(cache: ObjectCache) -> AdmissionEngine:
    """An engine holding every queue object, Node and Namespace of the cache (no workloads)."""
    engine = AdmissionEngine(EngineConfig())
    for kind in ENGINE_KINDS:
        for obj in cache.all(kind):
            engine.apply(obj)
    for name, labels in cache.namespaces.items():
        engine.set_namespace(name, labels)
    return engine


def check_fit(
    cache: ObjectCache, trainjob: TrainJob, runtime: AnyTrainingRuntime
) -> tuple[list[FieldError], str | None]:
    """(TAS annotation errors, why it never fits) — both empty/None when the job could run."""
    workload = workload_for_trainjob(trainjob, runtime)
    problems = validate_pod_sets_topology(workload.spec.pod_sets)
    if problems:
        return problems, None
    engine = cache.derived("admission-engine", build_engine)
    return [], engine.never_fits_reason(workload)

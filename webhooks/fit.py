"""The "can ever fit" rule for a queued TrainJob, asked of the owning code.

The TrainJob becomes a Kueue Workload exactly as the controller builds it
(``scheduler.trainjob.workload_for_trainjob``, which renders the JobSet and with it runs all of
Trainer's TrainJob rules); its pod sets are checked against Kueue's TAS annotation rules, then the
admission engine says whether it could ever be admitted (quota reachable through borrowing up the
cohort, a topology domain at the required level large enough on an empty cluster). The engine is
built from the object cache once per cache version.

That render reads pod sets only, so it generates no key material: no SSH key pair is made for an
MPI TrainJob at admission.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtimes.api.trainer import AnyTrainingRuntime, TrainJob
from runtimes.errors import FieldError, RenderError
from runtimes.k8s import wire
from scheduler.api.job_validation import validate_pod_sets_topology
from scheduler.engine import AdmissionEngine, EngineConfig
from scheduler.trainjob import workload_for_trainjob
from webhooks.objects import ENGINE_KINDS, ObjectCache

MAX_REMEMBERED_VERDICTS = 4096


def build_engine(cache: ObjectCache) -> AdmissionEngine:
    """An engine holding every queue object, Node and Namespace of the cache (no workloads)."""
    engine = AdmissionEngine(EngineConfig())
    for kind in ENGINE_KINDS:
        for obj in cache.all(kind):
            engine.apply(obj)
    for name, labels in cache.namespaces.items():
        engine.set_namespace(name, labels)
    return engine


@dataclass
class FitVerdict:
    """``errors``: the TrainJob (or its runtime) is invalid; ``never_fits``: why it can never run."""

    errors: list[FieldError] = field(default_factory=list)
    never_fits: str | None = None


def check_fit(
    cache: ObjectCache, trainjob: TrainJob, runtime: AnyTrainingRuntime, *, ask_engine: bool = True
) -> FitVerdict:
    """Render ``trainjob`` once (validating it), then ask Kueue's TAS rules and, if ``ask_engine``
    (the job has no other error), the engine."""
    try:
        workload = workload_for_trainjob(trainjob, runtime)
    except RenderError as error:
        if error.subject.startswith("TrainJob"):
            return FitVerdict(errors=error.errors)
        # The runtime itself breaks Trainer's rules: name it rather than its fields as the job's.
        listed = ", ".join(str(problem) for problem in error.errors)
        return FitVerdict(
            errors=[
                FieldError(
                    "spec.runtimeRef",
                    f"{error.subject} is invalid ({listed}): fix the runtime or reference another one",
                )
            ]
        )
    problems = validate_pod_sets_topology(workload.spec.pod_sets)
    if problems or not ask_engine:
        return FitVerdict(errors=problems)
    engine = cache.derived("admission-engine", build_engine)
    # The verdict depends only on the Workload's namespace and spec and on the cached objects,
    # and most reviews repeat a few job shapes: remember it until the cache changes.
    verdicts = cache.derived("never-fits-verdicts", _new_verdict_memo)
    shape = wire.dumps([workload.metadata.namespace, workload.spec.to_dict()], sort_keys=True)
    if shape not in verdicts:
        if len(verdicts) >= MAX_REMEMBERED_VERDICTS:
            verdicts.clear()
        verdicts[shape] = engine.never_fits_reason(workload)
    return FitVerdict(never_fits=verdicts[shape])


def _new_verdict_memo(_: ObjectCache) -> dict[bytes, str | None]:
    return {}

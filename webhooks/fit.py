"""The "can ever fit" rule for a queued TrainJob, asked of the owning code.

The TrainJob becomes a Kueue Workload exactly as the controller builds it
(``scheduler.trainjob.workload_for_trainjob``, which renders the JobSet and with it runs all of
Trainer's TrainJob rules); its pod sets are checked against Kueue's TAS annotation rules, then the
admission engine says whether it could ever be admitted (quota reachable through borrowing up the
cohort, a topology domain at the required level large enough on an empty cluster). The engine is
built from the object cache once per cache version.

That render reads pod sets only, so it generates no key material: no SSH key pair is made for an
MPI TrainJob at admission.

Most reviews repeat a few job shapes (a sweep, a nightly job, a team's usual size), and the whole
verdict depends on the job's shape alone: its namespace, spec, labels and annotations, and the
runtime it names. Only its name differs from one job to the next, and the name is read by one
rule (``validate_trainjob_name``) and written into pod templates (hostnames, labels) that neither
Trainer's other rules, Kueue's TAS rules nor the engine read. So a verdict is remembered per shape
until the cache changes; each job's name is still checked on its own. A job with a bad name is
judged whole, without the memo, so that its other errors are reported together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from runtimes.api.trainer import AnyTrainingRuntime, TrainJob
from runtimes.errors import FieldError, RenderError
from runtimes.k8s import wire
from runtimes.validation import validate_trainjob, validate_trainjob_name
from scheduler.api.job_validation import validate_pod_sets_topology
from scheduler.engine import AdmissionEngine, EngineConfig
from scheduler.trainjob import workload_for_trainjob
from webhooks.objects import ENGINE_KINDS, ObjectCache

MAX_REMEMBERED_VERDICTS = 4096
# what kubectl apply records of the object itself: never read by a rule, and unique per job
IGNORED_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})


def build_engine(cache: ObjectCache) -> AdmissionEngine:
    """An engine holding every queue object, Node and Namespace of the cache (no workloads)."""
    engine = AdmissionEngine(EngineConfig())
    for kind in ENGINE_KINDS:
        for obj in cache.all(kind):
            engine.apply(obj)
    for name, labels in cache.namespace_items():
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
    (the job has no other error), the engine; remembered per job shape (see the module's notes)."""
    purpose = "fit" if ask_engine else "render"
    return _remembered(cache, trainjob, runtime, purpose, lambda: _judge(cache, trainjob, runtime, ask_engine))


def check_rules(cache: ObjectCache, trainjob: TrainJob, runtime: AnyTrainingRuntime | None) -> list[FieldError]:
    """Trainer's TrainJob rules with ``runtime`` (a job that is not queued is not rendered),
    remembered per job shape as ``check_fit`` is."""
    if runtime is None:
        return validate_trainjob(trainjob, runtime)
    verdict = _remembered(cache, trainjob, runtime, "rules", lambda: FitVerdict(validate_trainjob(trainjob, runtime)))
    return verdict.errors


def _remembered(
    cache: ObjectCache,
    trainjob: TrainJob,
    runtime: AnyTrainingRuntime,
    purpose: str,
    judge: Callable[[], FitVerdict],
) -> FitVerdict:
    if validate_trainjob_name(trainjob):
        return judge()
    verdicts = cache.derived("fit-verdicts", _new_verdict_memo)
    shape = _shape(trainjob, runtime, purpose)
    verdict = verdicts.get(shape)
    if verdict is None:
        if len(verdicts) >= MAX_REMEMBERED_VERDICTS:
            verdicts.clear()
        verdict = verdicts[shape] = judge()
    return FitVerdict(errors=list(verdict.errors), never_fits=verdict.never_fits)


def _shape(trainjob: TrainJob, runtime: AnyTrainingRuntime, purpose: str) -> bytes:
    """Everything of the job and its runtime a verdict reads, and nothing else (no name, no uid)."""
    metadata = trainjob.metadata
    annotations = {k: v for k, v in (metadata.annotations or {}).items() if k not in IGNORED_ANNOTATIONS}
    return wire.dumps(
        [
            metadata.namespace,
            metadata.labels,
            annotations,
            trainjob.spec.to_dict(),
            [runtime.kind, runtime.metadata.namespace, runtime.metadata.name],
            purpose,
        ],
        sort_keys=True,
    )


def _judge(cache: ObjectCache, trainjob: TrainJob, runtime: AnyTrainingRuntime, ask_engine: bool) -> FitVerdict:
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
    return FitVerdict(never_fits=engine.never_fits_reason(workload))


def _new_verdict_memo(_: ObjectCache) -> dict[bytes, FitVerdict]:
    return {}

"""The defaults ``/mutate/trainjobs`` writes: Trainer's and Kueue's, and nothing of our own.

- Trainer's CRD defaults (``trainjob_types.go``): ``spec.runtimeRef.apiGroup``
  ``trainer.kubeflow.org``, ``spec.runtimeRef.kind`` ``ClusterTrainingRuntime``, ``spec.suspend``
  false, ``spec.managedBy`` ``trainer.kubeflow.org/trainjob-controller``. The API server writes
  them before any webhook runs; writing them here too makes the webhook's answer the same for an
  object that did not come through it (``trainyard`` reading YAML, tests), and a no-op otherwise.
- Trainer's defaulting webhook: ``spec.runtimePatches[].time`` stamped when a patch is written —
  on CREATE every patch without one; on UPDATE a patch whose content did not change keeps its
  old time, a new or changed one without a time gets the current time.
- Kueue's job webhook (CREATE only): the ``kueue.x-k8s.io/queue-name`` label from the
  namespace's LocalQueue named ``default``, and ``spec.suspend: true`` for a queued job so Kueue
  decides when it starts.

Nothing is copied from the runtime (node counts, images, resources): Trainer reads those from
the runtime at render time, and a copy would freeze today's runtime into the TrainJob.
Every default is idempotent, so a reinvoked webhook returns no patch the second time.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from runtimes.api.trainer import CLUSTER_TRAINING_RUNTIME_KIND, DEFAULT_MANAGED_BY, TRAINER_GROUP
from scheduler.api.kueue import DEFAULT_LOCAL_QUEUE_NAME, QUEUE_NAME_LABEL

Clock = Callable[[], datetime]


def rfc3339(moment: datetime) -> str:
    """metav1.Time's wire format: RFC 3339 in UTC, whole seconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _copied(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    """``parent[key]`` replaced by a shallow copy (so the original stays the diff's base)."""
    value = parent.get(key)
    if not isinstance(value, dict):
        return None
    copied = dict(value)
    parent[key] = copied
    return copied


def default_trainjob(
    document: dict[str, Any],
    namespace: str | None,
    has_default_queue: Callable[[str], bool],
    *,
    clock: Clock = _utc_now,
) -> dict[str, Any]:
    """A copy of the CREATE request's TrainJob with every default written in (``document`` untouched).

    Only the dicts on the paths that change are copied. A malformed shape (metadata or spec not
    an object) is left alone for the validating webhook to name.
    """
    mutated = dict(document)
    metadata = _copied(mutated, "metadata")
    spec = _copied(mutated, "spec")
    if metadata is None or spec is None:
        return document
    labels = metadata.get("labels")
    if labels is not None and not isinstance(labels, dict):
        return document
    labels = dict(labels or {})
    namespace = namespace or metadata.get("namespace")
    if QUEUE_NAME_LABEL not in labels and namespace and has_default_queue(namespace):
        labels[QUEUE_NAME_LABEL] = DEFAULT_LOCAL_QUEUE_NAME
        metadata["labels"] = labels
    if QUEUE_NAME_LABEL in labels:
        if spec.get("suspend") is not True:
            # Kueue starts the job by unsuspending it once the workload is admitted.
            spec["suspend"] = True
    else:
        spec.setdefault("suspend", False)
    runtime_ref = _copied(spec, "runtimeRef")
    if runtime_ref is not None:
        runtime_ref.setdefault("apiGroup", TRAINER_GROUP)
        runtime_ref.setdefault("kind", CLUSTER_TRAINING_RUNTIME_KIND)
    spec.setdefault("managedBy", DEFAULT_MANAGED_BY)
    _stamp_runtime_patches(spec, None, clock)
    return mutated


def default_trainjob_update(
    document: dict[str, Any], old: dict[str, Any] | None, *, clock: Clock = _utc_now
) -> dict[str, Any]:
    """On UPDATE only Trainer's defaulter acts: the ``runtimePatches[].time`` stamps."""
    mutated = dict(document)
    spec = _copied(mutated, "spec")
    if spec is None:
        return document
    old_spec = old.get("spec") if isinstance(old, dict) else None
    old_patches = old_spec.get("runtimePatches") if isinstance(old_spec, dict) else None
    _stamp_runtime_patches(spec, old_patches if isinstance(old_patches, list) else [], clock)
    return mutated


def _without_time(patch: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in patch.items() if key != "time"}


def _stamp_runtime_patches(spec: dict[str, Any], old_patches: list[Any] | None, clock: Clock) -> None:
    patches = spec.get("runtimePatches")
    if not isinstance(patches, list) or not patches:
        return
    old_by_manager = {
        patch.get("manager"): patch for patch in old_patches or [] if isinstance(patch, dict) and "manager" in patch
    }
    stamped: list[Any] = []
    now: str | None = None
    for patch in patches:
        if not isinstance(patch, dict):
            stamped.append(patch)
            continue
        patch = dict(patch)
        old = old_by_manager.get(patch.get("manager"))
        if old is not None and _without_time(old) == _without_time(patch):
            if old.get("time") is not None:
                patch["time"] = old["time"]
        elif patch.get("time") is None:
            now = now or rfc3339(clock())
            patch["time"] = now
        stamped.append(patch)
    spec["runtimePatches"] = stamped

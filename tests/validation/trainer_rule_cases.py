"""One TrainJob per Trainer (and Kueue job-label) rule the TrainJob webhook enforces on CREATE.

Beyond the parity table's basics (tests/validation/test_webhook_cli_parity.py). Each case names
the commands that must refuse it with the webhook's words: ``render`` checks Trainer's rules,
``admit`` also Kueue's job labels (the queue and priority class must exist, as on a cluster).
"""

from __future__ import annotations

from typing import Any

TRAINER = "trainer.kubeflow.org/v1alpha1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def trainjob(
    runtime: str = "torch-distributed", labels: dict[str, str] | None = None, **trainer: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "job", "namespace": "default"}
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": TRAINER,
        "kind": "TrainJob",
        "metadata": metadata,
        "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": 1, **trainer}},
    }


BOTH = ("render", "admit")
ADMIT = ("admit",)

TRAINER_RULE_CASES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("runtime-ref-name-empty", trainjob(runtime=""), BOTH),
    ("name-missing", {**trainjob(), "metadata": {"namespace": "default"}}, BOTH),
    ("num-proc-per-node-beyond-int32", trainjob(numProcPerNode=2**40), BOTH),
    ("num-nodes-beyond-int32-after-default", trainjob(numNodes=2**31), BOTH),
    ("num-proc-per-node-word-for-a-plain-runtime", trainjob(runtime="plain-python", numProcPerNode="auto"), BOTH),
    ("queue-label-not-a-name", trainjob(labels={QUEUE_LABEL: "Bad Queue"}), ADMIT),
    ("queue-label-unknown", trainjob(labels={QUEUE_LABEL: "nope"}), ADMIT),
    (
        "priority-class-label-unknown",
        trainjob(labels={"kueue.x-k8s.io/priority-class": "urgent"}),
        ADMIT,
    ),
    (
        "max-execution-time-label-zero",
        trainjob(labels={"kueue.x-k8s.io/max-exec-time-seconds": "0"}),
        ADMIT,
    ),
]

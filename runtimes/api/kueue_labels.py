"""The labels and annotations by which a job speaks to Kueue (its side of the Kueue API).

They live in ``runtimes`` so that both the renderer (which reads the TAS annotations to derive a
Workload's pod sets) and the scheduler's Kueue models share one spelling.
"""

from __future__ import annotations

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"

# TAS pod-set annotations (Kueue pkg/controller/jobframework/tas.go)
PODSET_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PODSET_PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
PODSET_UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
PODSET_SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
PODSET_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
PODSET_GROUP_NAME = "kueue.x-k8s.io/podset-group-name"

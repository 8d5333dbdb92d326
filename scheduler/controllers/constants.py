"""Labels, annotations and names the controllers put on the objects they manage.

Kueue's own spellings where Kueue defines the concept (pod-set label, workload annotation, the
TAS scheduling gate), so Kueue's tools read trainyard's objects; ``trainyard.io/...`` for what is
trainyard's alone.
"""

from __future__ import annotations

# On every JobSet trainyard creates and on its pod templates: the Pod and JobSet informers
# select on it, so the controllers never mirror what they do not manage.
MANAGED_LABEL = "trainyard.io/managed"
MANAGED_VALUE = "true"
MANAGED_SELECTOR = f"{MANAGED_LABEL}={MANAGED_VALUE}"

# Kueue's job-side spellings (pkg/controller/constants, pkg/controller/tas)
PODSET_LABEL = "kueue.x-k8s.io/podset"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
TAS_LABEL = "kueue.x-k8s.io/tas"
TOPOLOGY_SCHEDULING_GATE = "kueue.x-k8s.io/topology"

# The runtimePatches manager trainyard writes under in the `trainer` launcher mode.
RUNTIME_PATCH_MANAGER = "trainyard.io/scheduler"

# The Lease the replicas elect their leader on, and the Events' reporting component.
LEADER_LEASE_NAME = "trainyard-controller"
EVENT_SOURCE = "trainyard-controller"

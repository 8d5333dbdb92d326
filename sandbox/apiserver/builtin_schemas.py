"""OpenAPI v3 schemas of the built-in kinds this server stores, as far as trainyard and kubectl use them.

A real API server publishes every field of k8s.io/api; this one publishes the fields trainyard
reads or writes and kubectl shows, with a line on each, in the same shape: ``kubectl explain
pod.spec.containers`` walks them, and server-side apply reads their list markers
(``x-kubernetes-list-type``: ``map`` with its keys, ``set`` or ``atomic``) as the real schemas
declare them. A part left open (``x-kubernetes-preserve-unknown-fields``) keeps whatever it is
given, as the store does anyway.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]


def obj(description: str, **properties: Schema) -> Schema:
    return {"type": "object", "description": description, "properties": properties}


def open_obj(description: str) -> Schema:
    return {"type": "object", "description": description, "x-kubernetes-preserve-unknown-fields": True}


def string(description: str) -> Schema:
    return {"type": "string", "description": description}


def integer(description: str) -> Schema:
    return {"type": "integer", "format": "int32", "description": description}


def boolean(description: str) -> Schema:
    return {"type": "boolean", "description": description}


def string_map(description: str) -> Schema:
    return {"type": "object", "description": description, "additionalProperties": {"type": "string"}}


def quantities(description: str) -> Schema:
    quantity = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
    return {"type": "object", "description": description, "additionalProperties": quantity}


def keyed_list(description: str, item: Schema, *keys: str) -> Schema:
    return {
        "type": "array",
        "description": description,
        "items": item,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": list(keys),
    }


def atomic_list(description: str, item: Schema) -> Schema:
    return {"type": "array", "description": description, "items": item, "x-kubernetes-list-type": "atomic"}


def string_set(description: str) -> Schema:
    return {"type": "array", "description": description, "items": {"type": "string"}, "x-kubernetes-list-type": "set"}


OWNER_REFERENCE = obj(
    "An object this one depends on: when every owner is gone, the garbage collector deletes it.",
    apiVersion=string("API version of the owner."),
    kind=string("Kind of the owner."),
    name=string("Name of the owner."),
    uid=string("UID of the owner."),
    controller=boolean("True when the owner is the managing controller."),
    blockOwnerDeletion=boolean("Foreground deletion of the owner waits for this object."),
)
OBJECT_META = obj(
    "Standard object metadata.",
    name=string("Name, unique within a namespace (or the cluster for cluster-scoped kinds)."),
    generateName=string("A prefix the server completes into a unique name when name is empty."),
    namespace=string("The namespace the object lives in; empty for cluster-scoped kinds."),
    uid=string("Unique in time and space; set by the server on create."),
    resourceVersion=string("The version of the object the server holds; writes compare it (optimistic concurrency)."),
    selfLink=string("Deprecated: once the object's URL; no longer set."),
    generation=integer("Incremented by the server each time the desired state (spec) changes."),
    creationTimestamp=string("When the server created the object (RFC 3339)."),
    deletionTimestamp=string("When deletion was asked; the object stays while finalizers remain."),
    deletionGracePeriodSeconds=integer("Seconds the object has left to terminate gracefully."),
    labels=string_map("Key-value pairs for selecting and grouping objects."),
    annotations=string_map("Key-value pairs for tools and controllers (not selectable)."),
    ownerReferences=keyed_list("Objects this one depends on.", OWNER_REFERENCE, "uid"),
    finalizers=string_set("Keys that must be cleared before the object is deleted."),
    managedFields=atomic_list("Which field manager owns which fields (server-side apply).", open_obj("An entry.")),
)
CONDITION = obj(
    "A condition of the object's state.",
    type=string("Type of the condition."),
    status=string("True, False or Unknown."),
    reason=string("One-word CamelCase reason for the last transition."),
    message=string("What happened, for people."),
    lastTransitionTime=string("When the status last changed."),
)
CONTAINER = obj(
    "A container to run in the pod.",
    name=string("Name of the container, unique in the pod."),
    image=string("Container image."),
    command=atomic_list("Entrypoint (the image's ENTRYPOINT when empty).", {"type": "string"}),
    args=atomic_list("Arguments to the entrypoint.", {"type": "string"}),
    workingDir=string("Working directory of the command."),
    env=keyed_list(
        "Environment variables.",
        obj(
            "An environment variable.",
            name=string("Variable name."),
            value=string("Its value."),
            valueFrom=open_obj("Where the value comes from (a field, a resource, a ConfigMap or Secret key)."),
        ),
        "name",
    ),
    ports=keyed_list(
        "Ports the container exposes.",
        obj(
            "A port.",
            containerPort=integer("Port number."),
            name=string("Name of the port."),
            protocol=string("TCP (default), UDP or SCTP."),
        ),
        "containerPort",
        "protocol",
    ),
    resources=obj(
        "Compute resources the container asks for and is limited to.",
        requests=quantities("Resources the scheduler reserves for the container (nvidia.com/gpu, cpu, memory)."),
        limits=quantities("The most the container may use."),
    ),
    volumeMounts=keyed_list(
        "Volumes mounted into the container.",
        obj("A mount.", name=string("Volume name."), mountPath=string("Where it is mounted."), readOnly=boolean("")),
        "mountPath",
    ),
)
TOLERATION = obj(
    "A taint the pod tolerates.",
    key=string("Taint key; empty with operator Exists matches every taint."),
    operator=string("Equal (default) or Exists."),
    value=string("Taint value, for Equal."),
    effect=string("NoSchedule, PreferNoSchedule or NoExecute; empty matches all."),
    tolerationSeconds=integer("How long a NoExecute taint is tolerated."),
)
POD_SPEC = obj(
    "Desired behaviour of the pod.",
    containers=keyed_list("Containers of the pod.", CONTAINER, "name"),
    initContainers=keyed_list("Containers run to completion, in order, before the others start.", CONTAINER, "name"),
    nodeName=string("The node the pod is bound to (set by the scheduler's binding)."),
    nodeSelector=string_map("Labels a node must carry for the pod to go there."),
    affinity=open_obj("Node affinity, pod affinity and anti-affinity."),
    tolerations=atomic_list("Taints the pod tolerates.", TOLERATION),
    schedulingGates=keyed_list(
        "Gates that keep the pod from being scheduled until removed.", obj("A gate.", name=string("")), "name"
    ),
    restartPolicy=string("Always, OnFailure or Never."),
    serviceAccountName=string("ServiceAccount the pod runs as."),
    priorityClassName=string("PriorityClass of the pod."),
    schedulerName=string("The scheduler that places the pod."),
    hostname=string("Hostname of the pod."),
    subdomain=string("Subdomain: with a headless Service, the pod's DNS name."),
    volumes=keyed_list("Volumes the containers may mount.", open_obj("A volume."), "name"),
)
POD_STATUS = obj(
    "Observed state of the pod.",
    phase=string("Pending, Running, Succeeded, Failed or Unknown."),
    conditions=keyed_list("Conditions of the pod (PodScheduled, Ready ...).", CONDITION, "type"),
    podIP=string("IP address of the pod."),
    hostIP=string("IP address of the node."),
    nominatedNodeName=string("The node a preempting pod is nominated to."),
    startTime=string("When the kubelet acknowledged the pod."),
    containerStatuses=atomic_list("State of each container.", open_obj("A container's state.")),
)
POD_TEMPLATE = obj("A pod to create.", metadata=OBJECT_META, spec=POD_SPEC)
NODE_SPEC = obj(
    "Desired behaviour of the node.",
    unschedulable=boolean("Cordoned: no new pods are scheduled onto the node."),
    taints=atomic_list(
        "Taints that repel pods not tolerating them.",
        obj("A taint.", key=string(""), value=string(""), effect=string(""), timeAdded=string("")),
    ),
    podCIDR=string("Pod IP range of the node."),
)
NODE_STATUS = obj(
    "Observed state of the node.",
    capacity=quantities("Total resources of the node."),
    allocatable=quantities("Resources available to pods."),
    conditions=keyed_list("Conditions (Ready ...).", CONDITION, "type"),
    addresses=keyed_list("Addresses of the node.", obj("An address.", type=string(""), address=string("")), "type"),
    nodeInfo=open_obj("Versions and identity of the node (kubelet, OS, kernel, runtime)."),
)
JOB_SPEC = obj(
    "Desired behaviour of the Job.",
    parallelism=integer("Most pods running at once."),
    completions=integer("Successful pods needed."),
    completionMode=string("NonIndexed or Indexed."),
    backoffLimit=integer("Failed pods before the Job fails."),
    suspend=boolean("Suspended: no pods run."),
    selector=open_obj("Selects the Job's pods (generated by the server)."),
    manualSelector=boolean("The selector was written by hand."),
    template=POD_TEMPLATE,
)
JOB_STATUS = obj(
    "Observed state of the Job.",
    active=integer("Running pods."),
    ready=integer("Ready pods."),
    succeeded=integer("Succeeded pods."),
    failed=integer("Failed pods."),
    completedIndexes=string("Indexes that succeeded, as ranges."),
    conditions=atomic_list("Conditions (Complete, Failed, Suspended ...).", CONDITION),
    startTime=string(""),
    completionTime=string(""),
)
LOCAL_REFERENCE = obj("A reference to an object in the same namespace.", name=string("Its name."))

# (group, kind) -> the kind's schema, apart from apiVersion, kind and metadata
BUILTIN: dict[tuple[str, str], Schema] = {
    ("", "Pod"): obj("A group of containers run together on one node.", spec=POD_SPEC, status=POD_STATUS),
    ("", "Node"): obj("A machine pods run on.", spec=NODE_SPEC, status=NODE_STATUS),
    ("", "Namespace"): obj(
        "A scope for names.",
        spec=obj("", finalizers=string_set("Finalizers of the namespace.")),
        status=obj("", phase=string("Active or Terminating.")),
    ),
    ("", "ConfigMap"): obj(
        "Configuration data for pods.",
        data=string_map("UTF-8 values."),
        binaryData=string_map("Binary values (base64)."),
        immutable=boolean("The data can no longer change."),
    ),
    ("", "Secret"): obj(
        "Secret data for pods.",
        data=string_map("Values (base64)."),
        stringData=string_map("Plain values, merged into data on write."),
        type=string("Opaque (default) or a typed secret."),
        immutable=boolean("The data can no longer change."),
    ),
    ("", "ServiceAccount"): obj(
        "An identity for processes in pods.",
        secrets=atomic_list("Secrets the account may use.", open_obj("A reference.")),
        imagePullSecrets=atomic_list("Secrets for pulling images.", LOCAL_REFERENCE),
        automountServiceAccountToken=boolean("Mount the account's token into pods."),
    ),
    ("", "Event"): obj(
        "Something that happened to an object.",
        involvedObject=open_obj("The object the event is about."),
        reason=string("Why, in one CamelCase word."),
        message=string("What happened."),
        type=string("Normal or Warning."),
        count=integer("How many times it happened."),
        source=open_obj("Who reported it."),
        firstTimestamp=string(""),
        lastTimestamp=string(""),
    ),
    ("coordination.k8s.io", "Lease"): obj(
        "A lease, for leader election and node heartbeats.",
        spec=obj(
            "",
            holderIdentity=string("Who holds the lease."),
            leaseDurationSeconds=integer("How long a holder may go without renewing."),
            acquireTime=string(""),
            renewTime=string(""),
            leaseTransitions=integer("How many times the holder changed."),
        ),
    ),
    ("batch", "Job"): obj("Pods run to completion.", spec=JOB_SPEC, status=JOB_STATUS),
}


def builtin_schema(group: str, kind: str) -> Schema | None:
    """The kind's schema with apiVersion, kind and metadata, or None for a kind described nowhere."""
    found = BUILTIN.get((group, kind))
    if found is None:
        return None
    properties = {
        "apiVersion": string("Versioned schema of this representation of the object."),
        "kind": string("The REST resource this object represents."),
        "metadata": OBJECT_META,
        **found["properties"],
    }
    return {**found, "properties": properties}

"""TrainJob, TrainingRuntime and ClusterTrainingRuntime, trainer.kubeflow.org/v1alpha1.

Shaped after the latest Kubeflow Trainer release (``runtimePatches``, ``numProcPerNode`` an
integer, ``activeDeadlineSeconds``, ``status.trainerStatus``) while still reading what v2.0/v2.1
clusters hold: ``podTemplateOverrides`` (v2.1), ``podSpecOverrides`` (v2.0), ``spec.labels``/``spec.annotations`` and
``numProcPerNode: auto|cpu|gpu``. Validation of values lives in ``runtimes.validation``; the
models accept whatever is well-typed so that a bad value gets a message naming its field.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from runtimes.api.jobset import JobSetSpec, ReplicatedJobStatus
from runtimes.k8s.core import EnvVar, ResourceRequirements
from runtimes.k8s.meta import Condition, KubeModel, ObjectMeta, Resource

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_API_VERSION = f"{TRAINER_GROUP}/v1alpha1"
TRAINJOB_KIND = "TrainJob"
TRAINING_RUNTIME_KIND = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME_KIND = "ClusterTrainingRuntime"

# The label that says which step of a TrainJob a replicated job is (Trainer's LabelTrainJobAncestor).
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
ANCESTOR_DATASET_INITIALIZER = "dataset-initializer"
ANCESTOR_MODEL_INITIALIZER = "model-initializer"
# Reserved replicated-job and container names.
NODE = "node"
LAUNCHER = "launcher"
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
# The container each ancestor step must have.
ANCESTOR_CONTAINERS = {
    ANCESTOR_TRAINER: NODE,
    ANCESTOR_DATASET_INITIALIZER: DATASET_INITIALIZER,
    ANCESTOR_MODEL_INITIALIZER: MODEL_INITIALIZER,
}
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
SUPPORT_LABEL = "trainer.kubeflow.org/support"
DEFAULT_MANAGED_BY = "trainer.kubeflow.org/trainjob-controller"
MULTIKUEUE_MANAGED_BY = "kueue.x-k8s.io/multikueue"
STORAGE_URI_ENV = "STORAGE_URI"
# numProcPerNode spellings Trainer v2.0/v2.1 accepted besides an integer.
NUM_PROC_PER_NODE_WORDS = ("auto", "cpu", "gpu")

NumProcPerNode = int | str


# ------------------------------------------------------------------------------------------ TrainJob


class RuntimeRef(KubeModel):
    name: str = ""
    api_group: str | None = None  # defaults to trainer.kubeflow.org
    kind: str | None = None  # defaults to ClusterTrainingRuntime

    @property
    def effective_kind(self) -> str:
        return self.kind or CLUSTER_TRAINING_RUNTIME_KIND

    @property
    def effective_api_group(self) -> str:
        return self.api_group or TRAINER_GROUP


class LocalObjectReference(KubeModel):
    name: str = ""


class DatasetInitializer(KubeModel):
    storage_uri: str | None = None
    env: list[EnvVar] | None = None
    secret_ref: LocalObjectReference | None = None


class ModelInitializer(KubeModel):
    storage_uri: str | None = None
    env: list[EnvVar] | None = None
    secret_ref: LocalObjectReference | None = None


class Initializer(KubeModel):
    dataset: DatasetInitializer | None = None
    model: ModelInitializer | None = None


class Trainer(KubeModel):
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[EnvVar] | None = None
    num_nodes: int | None = None
    resources_per_node: ResourceRequirements | None = None
    # An int at Trainer HEAD; "auto" | "cpu" | "gpu" (or an int) in v2.0/v2.1.
    num_proc_per_node: NumProcPerNode | None = None


# runtimePatches (Trainer HEAD): manager-keyed strategic-merge patches over the runtime's template.


class ContainerPatch(KubeModel):
    name: str
    env: list[EnvVar] | None = None
    volume_mounts: list[dict[str, Any]] | None = None
    security_context: dict[str, Any] | None = None


class PodSpecPatch(KubeModel):
    """The restricted pod spec fields a patch may set (Trainer's PodSpecPatch), merged as
    written; any other field is kept, and reported as unknown."""

    service_account_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] | None = None
    volumes: list[dict[str, Any]] | None = None
    init_containers: list[ContainerPatch] | None = None
    containers: list[ContainerPatch] | None = None
    scheduling_gates: list[dict[str, Any]] | None = None
    image_pull_secrets: list[dict[str, Any]] | None = None
    security_context: dict[str, Any] | None = None
    termination_grace_period_seconds: int | None = None


class PodTemplatePatch(KubeModel):
    metadata: dict[str, Any] | None = None
    spec: PodSpecPatch | None = None


class JobSpecPatch(KubeModel):
    template: PodTemplatePatch | None = None


class JobTemplatePatch(KubeModel):
    metadata: dict[str, Any] | None = None
    spec: JobSpecPatch | None = None


class ReplicatedJobPatch(KubeModel):
    name: str
    template: JobTemplatePatch | None = None


class JobSetSpecPatch(KubeModel):
    replicated_jobs: list[ReplicatedJobPatch] | None = None


class JobSetTemplatePatch(KubeModel):
    metadata: dict[str, Any] | None = None
    spec: JobSetSpecPatch | None = None


class TrainingRuntimeSpecPatch(KubeModel):
    template: JobSetTemplatePatch | None = None


class RuntimePatch(KubeModel):
    manager: str = ""
    time: str | None = None
    training_runtime_spec: TrainingRuntimeSpecPatch | None = None


# podTemplateOverrides (Trainer v2.1): the predecessor of runtimePatches.


class TargetJob(KubeModel):
    name: str


class ContainerOverride(KubeModel):
    name: str
    env: list[EnvVar] | None = None
    volume_mounts: list[dict[str, Any]] | None = None


class PodOverrideFields(KubeModel):
    """The pod spec fields an override may set (Trainer's PodTemplateSpecOverride; v2.0's
    PodSpecOverride had the same ones but imagePullSecrets), merged as written."""

    service_account_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] | None = None
    volumes: list[dict[str, Any]] | None = None
    init_containers: list[ContainerOverride] | None = None
    containers: list[ContainerOverride] | None = None
    scheduling_gates: list[dict[str, Any]] | None = None


class PodTemplateOverrideSpec(PodOverrideFields):
    image_pull_secrets: list[dict[str, Any]] | None = None


class PodTemplateOverride(KubeModel):
    target_jobs: list[TargetJob] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    spec: PodTemplateOverrideSpec | None = None


class PodSpecOverride(PodOverrideFields):
    """podSpecOverrides (Trainer v2.0), podTemplateOverrides' predecessor: the pod spec fields
    written inline next to ``targetJobs``."""

    target_jobs: list[TargetJob] = Field(default_factory=list)

    def pod_spec(self) -> dict[str, Any]:
        """The override's pod spec fields (everything but ``targetJobs``)."""
        return {key: value for key, value in self.to_dict().items() if key != "targetJobs"}


class TrainJobSpec(KubeModel):
    runtime_ref: RuntimeRef = Field(default_factory=RuntimeRef)
    initializer: Initializer | None = None
    trainer: Trainer | None = None
    runtime_patches: list[RuntimePatch] | None = None
    pod_template_overrides: list[PodTemplateOverride] | None = None  # v2.1
    pod_spec_overrides: list[PodSpecOverride] | None = None  # v2.0
    labels: dict[str, str] | None = None  # v2.0/v2.1: propagated to the JobSet
    annotations: dict[str, str] | None = None  # v2.0/v2.1
    suspend: bool | None = None
    active_deadline_seconds: int | None = None
    managed_by: str | None = None


class TrainerMetric(KubeModel):
    name: str
    value: str


class TrainerStatus(KubeModel):
    progress_percentage: int | None = None
    estimated_remaining_seconds: int | None = None
    metrics: list[TrainerMetric] | None = None
    last_updated_time: str | None = None


class TrainJobStatus(KubeModel):
    conditions: list[Condition] | None = None
    jobs_status: list[ReplicatedJobStatus] | None = None  # Trainer's JobStatus: the same fields
    trainer_status: TrainerStatus | None = None


class TrainJob(Resource):
    api_version: str = TRAINER_API_VERSION
    kind: str = TRAINJOB_KIND
    spec: TrainJobSpec = Field(default_factory=TrainJobSpec)
    status: TrainJobStatus | None = None


# ------------------------------------------------------------------------------- TrainingRuntime


class TorchMLPolicySource(KubeModel):
    num_proc_per_node: NumProcPerNode | None = None  # v2.0/v2.1 only; default "auto"
    elastic_policy: dict[str, Any] | None = None  # v2.0/v2.1 only, never implemented upstream
    env_injection: dict[str, Any] | None = None  # HEAD


class MPIMLPolicySource(KubeModel):
    num_proc_per_node: int | None = None  # default 1
    mpi_implementation: str | None = None  # default OpenMPI
    ssh_auth_mount_path: str | None = None  # default /root/.ssh
    run_launcher_as_node: bool | None = None  # default false

    @property
    def effective_num_proc_per_node(self) -> int:
        return 1 if self.num_proc_per_node is None else self.num_proc_per_node

    @property
    def effective_mpi_implementation(self) -> str:
        return self.mpi_implementation or "OpenMPI"

    @property
    def effective_ssh_auth_mount_path(self) -> str:
        return self.ssh_auth_mount_path or "/root/.ssh"


class MLPolicy(KubeModel):
    num_nodes: int | None = None  # default 1
    torch: TorchMLPolicySource | None = None
    mpi: MPIMLPolicySource | None = None
    jax: dict[str, Any] | None = None
    xgboost: dict[str, Any] | None = None
    flux: dict[str, Any] | None = None

    def sources(self) -> list[str]:
        """The ML policy sources that are set (Trainer allows at most one)."""
        names = ("torch", "mpi", "jax", "xgboost", "flux")
        return [name for name in names if getattr(self, name) is not None]


class CoschedulingPodGroupPolicySource(KubeModel):
    schedule_timeout_seconds: int | None = None  # default 60; 0 also means the default


class PodGroupPolicy(KubeModel):
    coscheduling: CoschedulingPodGroupPolicySource | None = None
    volcano: dict[str, Any] | None = None


class JobSetTemplateSpec(KubeModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSetSpec = Field(default_factory=JobSetSpec)


class TrainingRuntimeSpec(KubeModel):
    ml_policy: MLPolicy | None = None
    pod_group_policy: PodGroupPolicy | None = None
    template: JobSetTemplateSpec = Field(default_factory=JobSetTemplateSpec)


class TrainingRuntime(Resource):
    api_version: str = TRAINER_API_VERSION
    kind: str = TRAINING_RUNTIME_KIND
    spec: TrainingRuntimeSpec = Field(default_factory=TrainingRuntimeSpec)


class ClusterTrainingRuntime(Resource):
    api_version: str = TRAINER_API_VERSION
    kind: str = CLUSTER_TRAINING_RUNTIME_KIND
    spec: TrainingRuntimeSpec = Field(default_factory=TrainingRuntimeSpec)


AnyTrainingRuntime = TrainingRuntime | ClusterTrainingRuntime

TRAINER_KINDS: dict[str, type[Resource]] = {
    TRAINJOB_KIND: TrainJob,
    TRAINING_RUNTIME_KIND: TrainingRuntime,
    CLUSTER_TRAINING_RUNTIME_KIND: ClusterTrainingRuntime,
}

"""Upstream Trainer/JobSet/PodGroup YAML loads unchanged and writes back exactly as it came in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from runtimes.api.jobset import JobSet
from runtimes.api.podgroup import PodGroup
from runtimes.api.trainer import ClusterTrainingRuntime, TrainingRuntime, TrainJob
from runtimes.k8s.meta import Resource

ROOT = Path(__file__).resolve().parents[2]

# Shapes from kubeflow/trainer examples and manifests (v2.1 and HEAD), JobSet and scheduler-plugins.
UPSTREAM: dict[str, tuple[type[Resource], str]] = {
    "trainjob-runtime-patches": (
        TrainJob,
        """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: runtime-patches-example}
spec:
  runtimeRef: {apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime, name: torch-distributed}
  activeDeadlineSeconds: 3600
  managedBy: kueue.x-k8s.io/multikueue
  trainer:
    numNodes: 2
    numProcPerNode: 4
    command: [torchrun, train.py]
    env: [{name: CUSTOM_VAR, value: custom-value}]
    resourcesPerNode:
      requests: {cpu: "2", memory: 4Gi}
      limits: {cpu: "4", memory: 8Gi, nvidia.com/gpu: 1}
  runtimePatches:
    - manager: example.io/platform-team
      time: "2026-01-01T00:00:00Z"
      trainingRuntimeSpec:
        template:
          metadata: {labels: {team: ml-platform}, annotations: {prometheus.io/scrape: "true"}}
          spec:
            replicatedJobs:
              - name: node
                template:
                  spec:
                    template:
                      spec:
                        serviceAccountName: training-sa
                        nodeSelector: {node-type: training}
                        tolerations: [{key: training-workload, operator: Equal, value: "true", effect: NoSchedule}]
                        containers: [{name: sidecar, volumeMounts: [{name: data, mountPath: /data}]}]
status:
  conditions:
    - {type: Complete, status: "True", reason: AllJobsCompleted, message: done, lastTransitionTime: "2026-01-01T00:00:00Z"}
  jobsStatus: [{name: node, ready: 0, succeeded: 2, failed: 0, active: 0, suspended: 0}]
  trainerStatus:
    progressPercentage: 100
    metrics: [{name: loss, value: "0.12"}]
""",
    ),
    "trainjob-v2.1-overrides": (
        TrainJob,
        """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: podspec-example, namespace: default, labels: {app: training}}
spec:
  runtimeRef: {name: torch-distributed}
  labels: {team: a}
  annotations: {note: v2.1}
  suspend: true
  initializer:
    dataset: {storageUri: "hf://tatsu-lab/alpaca", secretRef: {name: hf}}
    model: {storageUri: "hf://meta-llama/Llama-3.2-1B-Instruct", env: [{name: X, value: "1"}]}
  trainer:
    numNodes: 2
    numProcPerNode: auto
    image: python:3.11-slim
  podTemplateOverrides:
    - targetJobs: [{name: node}]
      metadata: {annotations: {prometheus.io/scrape: "true"}}
      spec:
        nodeSelector: {node-type: training}
        serviceAccountName: default
        containers: [{name: node, volumeMounts: [{name: v, mountPath: /v}]}]
""",
    ),
    "deepspeed-runtime": (ClusterTrainingRuntime, (ROOT / "manifests/runtimes/deepspeed_distributed.yaml").read_text()),
    "torch-runtime": (ClusterTrainingRuntime, (ROOT / "manifests/runtimes/torch_distributed.yaml").read_text()),
    "torchtune-runtime": (
        TrainingRuntime,
        """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: torchtune-llama3.2-1b, namespace: ml}
spec:
  mlPolicy: {numNodes: 1, torch: {numProcPerNode: 2}}
  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 100}}
  template:
    spec:
      volumeClaimPolicies:
        - templates: [{metadata: {name: initializer}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 20Gi}}}}]
      replicatedJobs:
        - name: dataset-initializer
          template:
            spec:
              template:
                metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}
                spec:
                  containers:
                    - name: dataset-initializer
                      image: ghcr.io/kubeflow/trainer/dataset-initializer
                      env: [{name: STORAGE_URI, value: "hf://tatsu-lab/alpaca"}]
                      volumeMounts: [{mountPath: /workspace/dataset, name: initializer}]
                  volumes: [{name: initializer, persistentVolumeClaim: {claimName: initializer}}]
        - name: node
          dependsOn: [{name: dataset-initializer, status: Complete}]
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: ghcr.io/kubeflow/trainer/torchtune-trainer
                      command: [tune, run, full_finetune_distributed, --config llama3_2/1B_full.yaml]
                      resources: {limits: {nvidia.com/gpu: 2}}
""",
    ),
    "jobset": (
        JobSet,
        """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: rack}}
spec:
  network: {enableDNSHostnames: true, subdomain: js-svc, publishNotReadyAddresses: false}
  successPolicy: {operator: Any, targetReplicatedJobs: [driver]}
  failurePolicy:
    maxRestarts: 2
    restartStrategy: BlockingRecreate
    rules:
      - {name: fail_fast, action: FailJobSet, onJobFailureReasons: [PodFailurePolicy], targetReplicatedJobs: [workers]}
      - {action: RestartJobSetAndIgnoreMaxRestarts, onJobFailureMessagePatterns: [".*preempted.*"]}
  startupPolicy: {startupPolicyOrder: InOrder}
  coordinator: {replicatedJob: driver, jobIndex: 0, podIndex: 0}
  ttlSecondsAfterFinished: 60
  replicatedJobs:
    - name: driver
      groupName: default
      replicas: 1
      template:
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: d, image: busybox}]
    - name: workers
      replicas: 4
      template:
        spec:
          parallelism: 2
          completions: 2
          backoffLimit: 0
          completionMode: Indexed
          podFailurePolicy:
            rules:
              - {action: Ignore, onPodConditions: [{type: DisruptionTarget, status: "True"}]}
              - {action: FailJob, onExitCodes: {containerName: w, operator: In, values: [42]}}
          template:
            spec:
              restartPolicy: Never
              containers: [{name: w, image: busybox, resources: {requests: {cpu: 500m}}}]
status:
  restarts: 1
  restartsCountTowardsMax: 1
  terminalState: Completed
  conditions: [{type: Completed, status: "True", reason: AllJobsCompleted}]
  replicatedJobsStatus: [{name: workers, ready: 4, succeeded: 0, failed: 0, active: 4, suspended: 0}]
""",
    ),
    "podgroup": (
        PodGroup,
        """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec: {minMember: 3, minResources: {cpu: "3", memory: 3Gi}, scheduleTimeoutSeconds: 10}
status: {phase: Running, running: 3}
""",
    ),
}


@pytest.mark.parametrize("case", sorted(UPSTREAM))
def test_upstream_yaml_round_trips(case: str) -> None:
    model, text = UPSTREAM[case]
    data: dict[str, Any] = yaml.safe_load(text)
    assert model.model_validate(data).to_dict() == data


def test_typed_fields_read_as_trainer_means() -> None:
    job = TrainJob.model_validate(yaml.safe_load(UPSTREAM["trainjob-v2.1-overrides"][1]))
    assert job.spec.trainer is not None
    assert job.spec.trainer.num_proc_per_node == "auto"
    assert job.spec.runtime_ref.effective_kind == "ClusterTrainingRuntime"
    jobset = JobSet.model_validate(yaml.safe_load(UPSTREAM["jobset"][1]))
    workers = jobset.spec.replicated_job("workers")
    assert workers is not None
    assert workers.effective_replicas * workers.pods_per_job == 8
    assert jobset.subdomain == "js-svc"
    rule = workers.template.spec.pod_failure_policy.rules[1]  # type: ignore[union-attr]
    assert rule.on_exit_codes is not None
    assert rule.on_exit_codes.matches(42)
    assert not rule.on_exit_codes.matches(1)

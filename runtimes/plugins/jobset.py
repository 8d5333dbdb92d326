"""The JobSet plugin: turns the RuntimeInfo into the JobSet that runs the TrainJob.

pre_build writes each pod set's count into its Job as ``parallelism`` = ``completions`` (numNodes
for the trainer) and fills the network default; build applies the TrainJob's trainer and
initializer settings, the pod-group labels, and wraps the spec in a JobSet named after the
TrainJob. Everything else (successPolicy, failurePolicy, startup order, the Jobs'
podFailurePolicy) comes from the runtime unchanged.
"""

from __future__ import annotations

from typing import Any

from runtimes.api.jobset import JOBSET_API_VERSION, JOBSET_KIND
from runtimes.api.trainer import (
    ANCESTOR_DATASET_INITIALIZER,
    ANCESTOR_MODEL_INITIALIZER,
    DATASET_INITIALIZER,
    MODEL_INITIALIZER,
    NODE,
    STORAGE_URI_ENV,
    DatasetInitializer,
    ModelInitializer,
    TrainJob,
)
from runtimes.errors import FieldError
from runtimes.plugins.framework import RuntimeInfo
from runtimes.plugins.jobset_validation import validate_initializers, validate_patches
from runtimes.plugins.owner import rendered_metadata
from runtimes.plugins.podspec import find_container, set_metadata_entries, upsert_env


class JobSetPlugin:
    name = "jobset"

    def validate(self, info: RuntimeInfo, trainjob: TrainJob) -> list[FieldError]:
        return validate_initializers(info, trainjob) + validate_patches(info, trainjob)

    def pre_build(self, info: RuntimeInfo, trainjob: TrainJob) -> None:
        for pod_set in info.pod_sets:
            job = info.replicated_job(pod_set.name)
            if job is None:
                continue
            job_spec = job.setdefault("template", {}).setdefault("spec", {})
            job_spec["parallelism"] = pod_set.count
            job_spec["completions"] = pod_set.count
            pod_template = job_spec.get("template") or {}
            # Kubernetes only accepts a podFailurePolicy with restartPolicy Never, and JobSet's
            # webhook would default OnFailure: a runtime that asks for the policy gets Never.
            if job_spec.get("podFailurePolicy") and not (pod_template.get("spec") or {}).get("restartPolicy"):
                job_spec.setdefault("template", {}).setdefault("spec", {})["restartPolicy"] = "Never"
        # Pods reach each other (torch rendezvous, MPI ssh) by their JobSet DNS names; JobSet's
        # webhook defaults this to true, written out here so every reader sees it.
        network = info.jobset_spec.setdefault("network", {})
        network.setdefault("enableDNSHostnames", True)

    def build(self, info: RuntimeInfo, trainjob: TrainJob) -> list[dict[str, Any]]:
        self._apply_trainer(info, trainjob)
        initializer = trainjob.spec.initializer
        if initializer is not None:
            if initializer.dataset is not None:
                self._apply_initializer(info, ANCESTOR_DATASET_INITIALIZER, DATASET_INITIALIZER, initializer.dataset)
            if initializer.model is not None:
                self._apply_initializer(info, ANCESTOR_MODEL_INITIALIZER, MODEL_INITIALIZER, initializer.model)
        for pod_set in info.pod_sets:
            job = info.replicated_job(pod_set.name)
            if job is None:
                continue
            if pod_set.ancestor is not None:
                # Trainer runs exactly one Job per initializer and trainer step.
                job["replicas"] = 1
            pod_template = info.pod_template(pod_set.name)
            if pod_template is not None:
                set_metadata_entries(pod_template, "labels", info.pod_labels)
                set_metadata_entries(pod_template, "annotations", info.pod_annotations)

        # The RuntimeInfo is thrown away after the render, so its template becomes the JobSet spec.
        spec = info.jobset_spec
        if trainjob.spec.suspend is not None:
            spec["suspend"] = trainjob.spec.suspend
        metadata = rendered_metadata(
            trainjob, info.namespace, info.trainjob_name, info.jobset_labels, info.jobset_annotations
        )
        return [{"apiVersion": JOBSET_API_VERSION, "kind": JOBSET_KIND, "metadata": metadata, "spec": spec}]

    @staticmethod
    def _apply_trainer(info: RuntimeInfo, trainjob: TrainJob) -> None:
        """The trainer's image, command, args and env override the runtime's ``node`` container."""
        trainer = trainjob.spec.trainer
        if trainer is None:
            return
        trainer_pod_set = info.trainer_pod_set()
        if trainer.image is not None:
            # MPI workers must run the launcher's image, so every node pod set gets it.
            targets = {ps.name for ps in info.node_pod_sets()}
            if trainer_pod_set is not None:
                targets.add(trainer_pod_set.name)
            for name in sorted(targets):
                pod_spec = info.pod_spec(name)
                container = find_container(pod_spec, NODE) if pod_spec is not None else None
                if container is not None:
                    container["image"] = trainer.image
        if trainer_pod_set is None:
            return
        pod_spec = info.pod_spec(trainer_pod_set.name)
        container = find_container(pod_spec, NODE) if pod_spec is not None else None
        if container is None:
            return
        # An ML policy may have completed the command (torchtune's recipe and config).
        command = info.resolved.get("trainerCommand", trainer.command)
        if command is not None:
            container["command"] = list(command)
        if trainer.args is not None:
            container["args"] = list(trainer.args)
        if trainer.env:
            upsert_env(container, [env.to_dict() for env in trainer.env])

    @staticmethod
    def _apply_initializer(
        info: RuntimeInfo,
        ancestor: str,
        container_name: str,
        given: DatasetInitializer | ModelInitializer,
    ) -> None:
        for pod_set in info.pod_sets_by_ancestor(ancestor):
            pod_spec = info.pod_spec(pod_set.name)
            container = find_container(pod_spec, container_name) if pod_spec is not None else None
            if container is None:
                continue
            if given.storage_uri is not None:
                upsert_env(container, [{"name": STORAGE_URI_ENV, "value": given.storage_uri}])
            if given.env:
                upsert_env(container, [env.to_dict() for env in given.env])
            if given.secret_ref is not None and given.secret_ref.name:
                env_from = container.setdefault("envFrom", [])
                source = {"secretRef": {"name": given.secret_ref.name}}
                if source not in env_from:
                    env_from.append(source)

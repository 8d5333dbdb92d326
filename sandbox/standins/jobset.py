"""A stand-in for the JobSet controller (jobset.x-k8s.io/v1alpha2), no more than trainyard needs.

A JobSet gets one batch/v1 Job per replicated job and index, named ``<jobset>-<rjob>-<index>``,
labelled and annotated as JobSet does (``jobset.sigs.k8s.io/jobset-name``, ``replicatedjob-name``,
``job-index``, ``restart-attempt``...), owned by the JobSet, with the pods' subdomain set to
``spec.network.subdomain`` or the JobSet's name. Its status is JobSet's: ``replicatedJobsStatus``
(ready/succeeded/failed/active/suspended per replicated job), ``restarts`` and the conditions
``Completed`` (AllJobsCompleted), ``Failed`` (FailedJobs, ReachedMaxRestarts) and ``Suspended``
(SuspendedJobs / ResumeJobs). A replicated job with ``dependsOn`` gets its Jobs only once every
dependency has reached its status (Ready: each of its Jobs ready, failed or succeeded; Complete:
each succeeded), as JobSet's controller creates them: a DeepSpeed launcher waits for its nodes.
``successPolicy`` (All/Any over targetReplicatedJobs) decides
completion; a failed Job fails the JobSet without a ``failurePolicy``, and restarts it (all its
Jobs deleted and recreated with the next restart-attempt) while ``restarts < maxRestarts``.
``spec.suspend`` suspends the Jobs (whose controller then deletes their pods); on resume the
Jobs get the replicated jobs' current pod template scheduling fields, as JobSet copies them.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from typing import Any

from scheduler.controllers.cache import ClusterCache
from scheduler.controllers.runtime import ReconcileResult
from scheduler.kube import KubeApiError, KubeClient, create_unless_exists, patch_status

from .conditions import is_true, set_condition
from .keys import BATCH_SECONDS, BatchingStandin, controller_uid, object_key, reconciled, split_key

log = logging.getLogger(__name__)


JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
JOBSET_UID = "jobset.sigs.k8s.io/jobset-uid"
REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
JOB_KEY = "jobset.sigs.k8s.io/job-key"
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"

ALL_JOBS_COMPLETED = ("AllJobsCompleted", "jobset completed successfully")
FAILED_JOBS = ("FailedJobs", "jobset failed due to one or more job failures")
REACHED_MAX_RESTARTS = ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts")
SUSPENDED = ("SuspendedJobs", "jobset is suspended")
RESUMED = ("ResumeJobs", "jobset is resumed")

# what JobSet copies from a replicated job's pod template into its suspended Jobs on resume
SCHEDULING_FIELDS = ("nodeSelector", "tolerations", "schedulingGates", "affinity")


def _job_finished(job: dict[str, Any]) -> str | None:
    if is_true(job, "Complete"):
        return "Complete"
    if is_true(job, "Failed"):
        return "Failed"
    return None


def _replicated_jobs(jobset: dict[str, Any]) -> list[dict[str, Any]]:
    return list((jobset.get("spec") or {}).get("replicatedJobs") or [])


def _replicas(rjob: dict[str, Any]) -> int:
    return int(rjob.get("replicas", 1))


def _startable(jobset: dict[str, Any], statuses: list[dict[str, Any]]) -> set[str]:
    """The replicated jobs whose ``dependsOn`` are met (JobSet's dependencyReachedStatus: a
    dependency counts only if it comes earlier in the list)."""
    by_name = {status["name"]: status for status in statuses}
    replicas: dict[str, int] = {}
    startable = set()
    for rjob in _replicated_jobs(jobset):
        replicas[rjob["name"]] = _replicas(rjob)
        reached = True
        for dependency in rjob.get("dependsOn") or []:
            status, wanted = by_name.get(dependency.get("name")), replicas.get(dependency.get("name"), 0)
            if status is None:
                reached = False
            elif dependency.get("status") == "Complete":
                reached = reached and status["succeeded"] == wanted
            else:
                reached = reached and status["failed"] + status["ready"] + status["succeeded"] == wanted
        if reached:
            startable.add(rjob["name"])
    return startable


class JobSetController(BatchingStandin):
    """A ``scheduler.controllers`` reconciler of JobSet keys; ``queue`` is the one its controller works."""

    name = "jobset-standin"

    def __init__(
        self, client: KubeClient, cache: ClusterCache, *, workers: int = 4, batch_seconds: float = BATCH_SECONDS
    ) -> None:
        super().__init__(client, cache, workers=workers, batch_seconds=batch_seconds)
        cache.on_change("JobSet", self._jobset_changed)
        cache.on_change("Job", self._job_changed)
        self.jobs_created = 0
        self.restarts = 0

    def _jobset_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new or old
        assert obj is not None
        self.queue.add(object_key(obj))

    def _job_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new or old
        assert obj is not None
        namespace = obj["metadata"].get("namespace")
        for reference in obj["metadata"].get("ownerReferences") or []:
            if reference.get("controller") and reference.get("kind") == "JobSet":
                key = f"{namespace}/{reference['name']}" if namespace else str(reference["name"])
                self.queue.add_after(key, self.batch_seconds)

    async def reconcile(self, key: str) -> ReconcileResult:
        return await reconciled(self._reconcile(key))

    async def _reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        jobset = self.cache.get("JobSet", name, namespace)
        if jobset is None or jobset["metadata"].get("deletionTimestamp"):
            return
        status = copy.deepcopy(jobset.get("status") or {})
        restarts = int(status.get("restarts", 0))
        uid = str(jobset["metadata"]["uid"])
        owned = [j for j in self.cache.owned_by("Job", uid) if controller_uid(j) == uid]
        current = [j for j in owned if j["metadata"].get("labels", {}).get(RESTART_ATTEMPT) == str(restarts)]
        stale = [j for j in owned if j not in current]
        if is_true(jobset, "Completed") or is_true(jobset, "Failed"):
            await self._delete_jobs([j for j in owned if _job_finished(j) is None])
            return
        await self._delete_jobs([j for j in stale if not j["metadata"].get("deletionTimestamp")])
        suspended = bool((jobset.get("spec") or {}).get("suspend"))
        failed = [j for j in current if _job_finished(j) == "Failed"]
        if failed:
            await self._on_failure(jobset, status, current, restarts)
            return
        if not suspended and self._succeeded(jobset, current):
            status["conditions"] = set_condition(status.get("conditions") or [], "Completed", True, *ALL_JOBS_COMPLETED)
            status["terminalState"] = "Completed"
            status["replicatedJobsStatus"] = self._replicated_status(jobset, current)
            await self._write_status(jobset, status)
            await self._delete_jobs([j for j in current if _job_finished(j) is None])
            return
        if not stale:  # new Jobs take the old ones' names: wait until those are gone
            await self._create_missing(jobset, current, restarts, suspended)
        await self._sync_suspension(jobset, current, suspended)
        conditions = status.get("conditions") or []
        if suspended:
            conditions = set_condition(conditions, "Suspended", True, *SUSPENDED)
        elif any(c.get("type") == "Suspended" for c in conditions):
            conditions = set_condition(conditions, "Suspended", False, *RESUMED)
        status["conditions"] = conditions
        status["replicatedJobsStatus"] = self._replicated_status(jobset, current)
        status.setdefault("restarts", restarts)
        await self._write_status(jobset, status)

    # ------------------------------------------------------------------------ outcomes

    def _succeeded(self, jobset: dict[str, Any], jobs: list[dict[str, Any]]) -> bool:
        policy = (jobset.get("spec") or {}).get("successPolicy") or {}
        operator = policy.get("operator", "All")
        targets = set(policy.get("targetReplicatedJobs") or [rj["name"] for rj in _replicated_jobs(jobset)])
        done: dict[str, int] = {}
        for job in jobs:
            if _job_finished(job) == "Complete":
                rjob = job["metadata"]["labels"].get(REPLICATED_JOB_NAME, "")
                done[rjob] = done.get(rjob, 0) + 1
        if operator == "Any":
            return any(done.get(target, 0) > 0 for target in targets)
        return bool(targets) and all(
            done.get(rj["name"], 0) >= _replicas(rj) for rj in _replicated_jobs(jobset) if rj["name"] in targets
        )

    async def _on_failure(
        self, jobset: dict[str, Any], status: dict[str, Any], jobs: list[dict[str, Any]], restarts: int
    ) -> None:
        policy = (jobset.get("spec") or {}).get("failurePolicy")
        status["replicatedJobsStatus"] = self._replicated_status(jobset, jobs)
        if policy is None or restarts >= int(policy.get("maxRestarts", 0)):
            reason = FAILED_JOBS if policy is None else REACHED_MAX_RESTARTS
            status["conditions"] = set_condition(status.get("conditions") or [], "Failed", True, *reason)
            status["terminalState"] = "Failed"
            await self._write_status(jobset, status)
            await self._delete_jobs([j for j in jobs if _job_finished(j) is None])
            return
        # restart: the status write comes first, so the next attempt's number is committed before
        # any Job of it exists (a crash in between leaves old Jobs that are stale, never mixed)
        status["restarts"] = restarts + 1
        status["restartsCountTowardsMax"] = int(status.get("restartsCountTowardsMax", 0)) + 1
        await self._write_status(jobset, status)
        self.restarts += 1
        log.info(
            "JobSet %s/%s restarts (attempt %d)",
            jobset["metadata"].get("namespace"),
            jobset["metadata"]["name"],
            restarts + 1,
        )
        await self._delete_jobs(jobs)

    # ---------------------------------------------------------------------------- jobs

    async def _create_missing(
        self, jobset: dict[str, Any], jobs: list[dict[str, Any]], restarts: int, suspended: bool
    ) -> None:
        existing = {j["metadata"]["name"] for j in jobs}
        startable = _startable(jobset, self._replicated_status(jobset, jobs))
        global_index = 0
        for rjob in _replicated_jobs(jobset):
            for index in range(_replicas(rjob)):
                name = f"{jobset['metadata']['name']}-{rjob['name']}-{index}"
                if name not in existing and rjob["name"] in startable:
                    body = self._job(jobset, rjob, index, global_index, restarts, suspended)
                    # AlreadyExists: the cache is behind; the Job is there
                    if await create_unless_exists(self.client, body, attempts=1):
                        self.jobs_created += 1
                global_index += 1

    def _job(
        self,
        jobset: dict[str, Any],
        rjob: dict[str, Any],
        index: int,
        global_index: int,
        restarts: int,
        suspended: bool,
    ) -> dict[str, Any]:
        metadata = jobset["metadata"]
        namespace, jobset_name = metadata.get("namespace"), metadata["name"]
        name = f"{jobset_name}-{rjob['name']}-{index}"
        template = copy.deepcopy(rjob.get("template") or {})
        stamp = {
            JOBSET_NAME: jobset_name,
            JOBSET_UID: str(metadata["uid"]),
            REPLICATED_JOB_NAME: str(rjob["name"]),
            REPLICATED_JOB_REPLICAS: str(_replicas(rjob)),
            JOB_INDEX: str(index),
            JOB_GLOBAL_INDEX: str(global_index),
            JOB_KEY: hashlib.sha1(f"{namespace}/{name}".encode(), usedforsecurity=False).hexdigest(),
            RESTART_ATTEMPT: str(restarts),
        }
        job_metadata = template.get("metadata") or {}
        spec = template.get("spec") or {}
        spec["suspend"] = suspended
        spec.setdefault("completionMode", "Indexed")
        pod_template = spec.setdefault("template", {})
        pod_metadata = pod_template.setdefault("metadata", {}) or {}
        pod_template["metadata"] = pod_metadata
        pod_metadata["labels"] = {**(pod_metadata.get("labels") or {}), **stamp}
        pod_metadata["annotations"] = {**(pod_metadata.get("annotations") or {}), **stamp}
        network = (jobset.get("spec") or {}).get("network") or {}
        if network.get("enableDNSHostnames", True):
            pod_template.setdefault("spec", {})["subdomain"] = network.get("subdomain") or jobset_name
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {**(job_metadata.get("labels") or {}), **stamp},
                "annotations": {**(job_metadata.get("annotations") or {}), **stamp},
                "ownerReferences": [
                    {
                        "apiVersion": jobset["apiVersion"],
                        "kind": "JobSet",
                        "name": jobset_name,
                        "uid": str(metadata["uid"]),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
        }

    async def _sync_suspension(self, jobset: dict[str, Any], jobs: list[dict[str, Any]], suspended: bool) -> None:
        templates = {rj["name"]: rj.get("template") or {} for rj in _replicated_jobs(jobset)}
        startable = _startable(jobset, self._replicated_status(jobset, jobs))
        for job in jobs:
            if _job_finished(job) is not None or bool(job["spec"].get("suspend")) == suspended:
                continue
            if not suspended and job["metadata"]["labels"].get(REPLICATED_JOB_NAME) not in startable:
                continue  # resumed only once its dependencies are met, as JobSet resumes them
            patch: dict[str, Any] = {"spec": {"suspend": suspended}}
            if not suspended:
                patch["spec"]["template"] = self._resumed_template(
                    job, templates.get(job["metadata"]["labels"].get(REPLICATED_JOB_NAME, ""), {})
                )
            await self.client.patch("Job", job["metadata"]["name"], patch, job["metadata"].get("namespace"))

    @staticmethod
    def _resumed_template(job: dict[str, Any], rjob_template: dict[str, Any]) -> dict[str, Any]:
        """The replicated job's current pod scheduling fields and metadata, for a Job about to resume."""
        wanted = ((rjob_template.get("spec") or {}).get("template")) or {}
        wanted_spec = wanted.get("spec") or {}
        current_metadata = (job["spec"].get("template") or {}).get("metadata") or {}
        wanted_metadata = wanted.get("metadata") or {}
        spec_patch: dict[str, Any] = {name: wanted_spec.get(name) for name in SCHEDULING_FIELDS}
        metadata_patch = {
            "labels": {**(current_metadata.get("labels") or {}), **(wanted_metadata.get("labels") or {})},
            "annotations": {
                **(current_metadata.get("annotations") or {}),
                **(wanted_metadata.get("annotations") or {}),
            },
        }
        return {"metadata": metadata_patch, "spec": spec_patch}

    async def _delete_jobs(self, jobs: list[dict[str, Any]]) -> None:
        for job in jobs:
            try:
                # JobSet deletes its Jobs in the foreground: their pods go first
                await self.client.delete(
                    "Job", job["metadata"]["name"], job["metadata"].get("namespace"), propagation_policy="Foreground"
                )
            except KubeApiError as error:
                if error.status != 404:
                    raise

    # -------------------------------------------------------------------------- status

    def _replicated_status(self, jobset: dict[str, Any], jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        counts = {
            rj["name"]: {"name": rj["name"], "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
            for rj in _replicated_jobs(jobset)
        }
        for job in jobs:
            entry = counts.get(job["metadata"]["labels"].get(REPLICATED_JOB_NAME, ""))
            if entry is None:
                continue
            finished = _job_finished(job)
            job_status = job.get("status") or {}
            if finished == "Complete":
                entry["succeeded"] += 1
            elif finished == "Failed":
                entry["failed"] += 1
            else:
                pods = int(job["spec"].get("parallelism", 1))
                if job["spec"].get("completions") is not None:
                    pods = min(pods, int(job["spec"]["completions"]))
                if int(job_status.get("ready", 0)) + int(job_status.get("succeeded", 0)) >= pods:
                    entry["ready"] += 1
                if int(job_status.get("active", 0)) > 0:
                    entry["active"] += 1
                if job["spec"].get("suspend"):
                    entry["suspended"] += 1
        return list(counts.values())

    async def _write_status(self, jobset: dict[str, Any], status: dict[str, Any]) -> None:
        if status == (jobset.get("status") or {}):
            return
        metadata = jobset["metadata"]
        await patch_status(
            self.client,
            "JobSet",
            metadata["name"],
            metadata.get("namespace"),
            status,
            resource_version=str(metadata["resourceVersion"]),
            attempts=1,
        )


__all__ = ["JobSetController"]

"""`trainyard kwok export`: the files a real KWOK cluster needs to run the same scenario.

Layout of ``OUT``::

    00-namespaces.yaml   one Namespace per team
    10-nodes.yaml        fake Nodes (kwok.x-k8s.io/node: fake, topology labels, capacity)
    20-stages.yaml       the KWOK Stages the simulation used
    25-runtime.yaml      the ClusterTrainingRuntime every exported TrainJob runs on
    30-kueue.yaml        Topology, ResourceFlavors, Cohorts, ClusterQueues, LocalQueues, priorities
    40-trainjobs.yaml    one TrainJob per job, in submit order (see below)
    schedule.csv         job name, namespace, submit time (s): when to create each TrainJob
    README.md            how to start kwok and apply the files

Each job becomes a suspended TrainJob labelled with its LocalQueue (and priority class), on the
``kwok-simulated-training`` runtime: one ``node`` replicated job whose container is a pause
image (KWOK fakes the pods; nothing runs). ``trainer.numNodes`` and ``resourcesPerNode`` give
the same pod set the simulator submits, and a ``runtimePatches`` entry puts the per-job parts on
the pod template: KWOK's pod-complete delay annotations (the job's duration), the Kueue TAS
annotation, and the GPU-model node affinity. The cluster needs Kueue (with its TrainJob
integration), Kubeflow Trainer and JobSet installed next to kwok.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from scheduler.api.kueue import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from simulations.engine_driver import workload_document
from simulations.events import RandomStreams
from simulations.kwok.constants import POD_COMPLETE_DELAY_ANNOTATION, POD_COMPLETE_JITTER_ANNOTATION
from simulations.scenarios import BuiltScenario
from simulations.workloads import JobSpec
from simulations.yamlsource import load_documents

TRAINER_API_VERSION = "trainer.kubeflow.org/v1alpha1"
SIMULATED_RUNTIME_NAME = "kwok-simulated-training"
# Trainer requires a domain-prefixed manager on every runtimePatches entry.
RUNTIME_PATCH_MANAGER = "trainyard.kubeflow.org/kwok-export"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


def simulated_runtime() -> dict[str, Any]:
    """The ClusterTrainingRuntime of the exported TrainJobs: plain ML policy, a pause container."""
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": SIMULATED_RUNTIME_NAME, "labels": {"trainer.kubeflow.org/framework": "plainml"}},
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "restartPolicy": "Never",
                                            "containers": [{"name": "node", "image": PAUSE_IMAGE}],
                                        }
                                    }
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def trainjob_document(job: JobSpec) -> dict[str, Any]:
    """A suspended, Kueue-queued TrainJob with the same pod set the simulator submits."""
    workload_spec = workload_document(job)["spec"]
    pod_template = workload_spec["podSets"][0]["template"]
    resources = pod_template["spec"]["containers"][0]["resources"]
    delay = f"{round(job.duration * 1000)}ms"
    annotations = dict(pod_template["metadata"].get("annotations") or {})
    # delay = jitter-delay: KWOK completes the pod exactly ``duration`` after it started.
    annotations[POD_COMPLETE_DELAY_ANNOTATION] = delay
    annotations[POD_COMPLETE_JITTER_ANNOTATION] = delay
    pod_patch: dict[str, Any] = {"metadata": {"annotations": annotations}}
    if "affinity" in pod_template["spec"]:
        pod_patch["spec"] = {"affinity": pod_template["spec"]["affinity"]}
    labels = {QUEUE_NAME_LABEL: workload_spec["queueName"]}
    if job.priority_class:
        labels[PRIORITY_CLASS_LABEL] = job.priority_class
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": job.name, "namespace": job.team, "labels": labels},
        "spec": {
            "suspend": True,
            "runtimeRef": {
                "apiGroup": "trainer.kubeflow.org",
                "kind": "ClusterTrainingRuntime",
                "name": SIMULATED_RUNTIME_NAME,
            },
            "trainer": {
                "numNodes": job.nodes,
                "resourcesPerNode": {"requests": dict(resources["requests"]), "limits": dict(resources["limits"])},
            },
            "runtimePatches": [
                {
                    "manager": RUNTIME_PATCH_MANAGER,
                    "trainingRuntimeSpec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod_patch}}}]
                            }
                        }
                    },
                }
            ],
        },
    }


def _dump(path: Path, documents: Iterable[dict[str, Any]]) -> int:
    count = 0
    with path.open("w") as handle:
        for document in documents:
            if count:
                handle.write("---\n")
            yaml.safe_dump(document, handle, sort_keys=False)
            count += 1
    return count


def exported_jobs(built: BuiltScenario, seed: int, speedup: float = 1.0) -> Iterator[JobSpec]:
    """The scenario's jobs; with ``speedup`` N, submit times and durations run N times faster.

    A real cluster runs in wall-clock time, so a day of trace takes a day; ``speedup`` compresses
    it (KWOK's stage delays stay as written: they are seconds, not hours).
    """
    if speedup <= 0:
        raise ValueError(f"speedup must be > 0, got {speedup}")
    for job in built.jobs(RandomStreams(seed)):
        if speedup == 1.0:
            yield job
        else:
            yield dataclasses.replace(job, submit_time=job.submit_time / speedup, duration=job.duration / speedup)


def namespace_documents(built: BuiltScenario, jobs: Iterable[JobSpec]) -> list[dict[str, Any]]:
    """A Namespace for every team with jobs and every namespace a Kueue object lives in."""
    names = {job.team for job in jobs} | {obj.namespace for obj in built.objects if obj.namespace}
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in sorted(names)]


def stage_documents(built: BuiltScenario) -> list[dict[str, Any]]:
    """The KWOK Stages the scenario runs with, as documents."""
    documents: list[dict[str, Any]] = []
    for path in built.scenario.stages:
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")) if path.is_dir() else [path]
        for file in files:
            documents.extend(document.data for document in load_documents(file))
    return documents


def export(built: BuiltScenario, out: Path, seed: int = 1, speedup: float = 1.0) -> dict[str, int]:
    """Write the scenario under ``out``; returns how many objects each file holds."""
    out.mkdir(parents=True, exist_ok=True)
    jobs = list(exported_jobs(built, seed, speedup))
    counts = {
        "00-namespaces.yaml": _dump(out / "00-namespaces.yaml", namespace_documents(built, jobs)),
        "10-nodes.yaml": _dump(out / "10-nodes.yaml", built.node_documents),
        "20-stages.yaml": _dump(out / "20-stages.yaml", stage_documents(built)),
    }
    counts["30-kueue.yaml"] = _dump(out / "30-kueue.yaml", (o.to_dict() for o in built.objects))
    counts["25-runtime.yaml"] = _dump(out / "25-runtime.yaml", [simulated_runtime()])
    counts["40-trainjobs.yaml"] = _dump(out / "40-trainjobs.yaml", (trainjob_document(j) for j in jobs))
    with (out / "schedule.csv").open("w") as handle:
        handle.write("name,namespace,submit_time\n")
        for job in jobs:
            handle.write(f"{job.name},{job.team},{job.submit_time:.3f}\n")
    (out / "README.md").write_text(
        f"# {built.scenario.name} on a real KWOK cluster\n\n"
        + (
            f"Times are {speedup:g}x faster than the scenario's (submit times and durations).\n\n"
            if speedup != 1
            else ""
        )
        + "1. `kwokctl create cluster` (KWOK v0.7+), or run kwok with\n"
        "   `--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake`.\n"
        "2. Install JobSet, Kubeflow Trainer and Kueue (TopologyAwareScheduling enabled; the\n"
        "   trainer.kubeflow.org/trainjob integration on).\n"
        "3. `kubectl apply -f 20-stages.yaml` (replace the default pod stages), then\n"
        "   `kubectl apply -f 00-namespaces.yaml -f 10-nodes.yaml -f 25-runtime.yaml -f 30-kueue.yaml`.\n"
        "4. Create the TrainJobs of `40-trainjobs.yaml` at the times in `schedule.csv`\n"
        "   (`trainyard simulate --backend kwok --kubeconfig PATH --scenario ...` does this and\n"
        "   collects the same metrics as the simulator).\n"
    )
    return counts

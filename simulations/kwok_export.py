"""`trainyard kwok export`: the files a real KWOK cluster needs to run the same scenario.

Layout of ``OUT``::

    00-namespaces.yaml   one Namespace per team
    10-nodes.yaml        fake Nodes (kwok.x-k8s.io/node: fake, topology labels, capacity)
    20-stages.yaml       the KWOK Stages the simulation used
    30-kueue.yaml        Topology, ResourceFlavors, Cohorts, ClusterQueues, LocalQueues, priorities
    40-workloads.yaml    one object per job, in submit order (see below)
    schedule.csv         job name, namespace, submit time (s): when to create each object
    README.md            how to start kwok and apply the files

The jobs are written as suspended ``batch/v1`` Jobs labelled with their LocalQueue, the
integration every Kueue installation has: ``parallelism = completions = pods``, the TAS
annotation and KWOK's pod-complete delay annotations on the pod template. (A TrainJob needs
the Trainer controller and a runtime on the cluster, which a bare KWOK cluster lacks.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from simulations.engine_driver import workload_document
from simulations.events import RandomStreams
from simulations.kwok import POD_COMPLETE_DELAY_ANNOTATION, POD_COMPLETE_JITTER_ANNOTATION
from simulations.scenarios import BuiltScenario
from simulations.workloads import JobSpec
from simulations.yamlsource import load_documents

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"


def job_document(job: JobSpec) -> dict[str, Any]:
    """A suspended Kueue-managed Job with the same pod set the simulator submits."""
    workload = workload_document(job)
    pod_set = workload["spec"]["podSets"][0]
    template = pod_set["template"]
    delay = f"{round(job.duration * 1000)}ms"
    annotations = dict(template["metadata"].get("annotations") or {})
    annotations[POD_COMPLETE_DELAY_ANNOTATION] = delay
    annotations[POD_COMPLETE_JITTER_ANNOTATION] = delay
    spec = dict(template["spec"])
    spec["containers"] = [dict(spec["containers"][0], image="registry.k8s.io/pause:3.10")]
    labels = {QUEUE_NAME_LABEL: workload["spec"]["queueName"]}
    if job.priority_class:
        labels[PRIORITY_CLASS_LABEL] = job.priority_class
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job.name, "namespace": job.team, "labels": labels},
        "spec": {
            "suspend": True,
            "parallelism": job.nodes,
            "completions": job.nodes,
            "completionMode": "Indexed",
            "backoffLimit": 0,
            "template": {"metadata": {"labels": {"app": job.name}, "annotations": annotations}, "spec": spec},
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


def exported_jobs(built: BuiltScenario, seed: int) -> Iterator[JobSpec]:
    return built.jobs(RandomStreams(seed))


def export(built: BuiltScenario, out: Path, seed: int = 1) -> dict[str, int]:
    """Write the scenario under ``out``; returns how many objects each file holds."""
    out.mkdir(parents=True, exist_ok=True)
    jobs = list(exported_jobs(built, seed))
    teams = sorted({job.team for job in jobs} | {o.namespace for o in built.objects if o.namespace})
    counts = {
        "00-namespaces.yaml": _dump(
            out / "00-namespaces.yaml",
            ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}} for team in teams),
        ),
        "10-nodes.yaml": _dump(out / "10-nodes.yaml", built.node_documents),
    }
    stage_documents: list[dict[str, Any]] = []
    for path in built.scenario.stages:
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml")) if path.is_dir() else [path]
        for file in files:
            stage_documents.extend(d.data for d in load_documents(file))
    counts["20-stages.yaml"] = _dump(out / "20-stages.yaml", stage_documents)
    counts["30-kueue.yaml"] = _dump(out / "30-kueue.yaml", (o.to_dict() for o in built.objects))
    counts["40-workloads.yaml"] = _dump(out / "40-workloads.yaml", (job_document(j) for j in jobs))
    with (out / "schedule.csv").open("w") as handle:
        handle.write("name,namespace,submit_time\n")
        for job in jobs:
            handle.write(f"{job.name},{job.team},{job.submit_time:.3f}\n")
    (out / "README.md").write_text(
        f"# {built.scenario.name} on a real KWOK cluster\n\n"
        "1. `kwokctl create cluster --enable kueue` (KWOK v0.8+; stages here use the v0.7 `next` form),\n"
        "   or run kwok with `--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake`\n"
        "   and install Kueue with TopologyAwareScheduling enabled.\n"
        "2. `kubectl apply -f 20-stages.yaml` (replace the default pod stages), then\n"
        "   `kubectl apply -f 00-namespaces.yaml -f 10-nodes.yaml -f 30-kueue.yaml`.\n"
        "3. Create the Jobs of `40-workloads.yaml` at the times in `schedule.csv`\n"
        "   (`trainyard simulate --backend kwok --kubeconfig PATH --scenario ...` does this and\n"
        "   collects the same metrics as the simulator).\n"
    )
    return counts

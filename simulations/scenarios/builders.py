"""Builders: a Scenario turned into Kueue objects, nodes and a job stream (synthetic, trace or Kueue perf)."""

from __future__ import annotations

from collections.abc import Iterator

from runtimes.k8s.meta import Resource
from scheduler.api.kueue import ClusterQueue, Cohort, LocalQueue, ResourceFlavor, WorkloadPriorityClass
from simulations.arrivals import generate_jobs
from simulations.cluster_spec import (
    GPU_RESOURCE,
    LOCAL_QUEUE_NAME,
    TOPOLOGY_NAME,
    ClusterSpec,
    build_node_documents,
    build_queues,
    build_topology,
    capacity_by_model,
    nodes_from_documents,
)
from simulations.errors import SimulationInputError
from simulations.events import RandomStreams
from simulations.scenarios.spec import BuiltScenario, KueuePerfSpec, Scenario
from simulations.steady import expected_jobs
from simulations.workloads import JobSpec, SyntheticWorkload


def build(scenario: Scenario) -> BuiltScenario:
    if scenario.kueue_perf is not None:
        return _build_kueue_perf(scenario, scenario.kueue_perf)
    if scenario.trace is not None and scenario.trace.is_dir():
        return _build_openb(scenario)
    cluster = scenario.cluster or ClusterSpec()
    problems = cluster.validate()
    if problems:
        raise SimulationInputError(scenario.name, None, "cluster", "; ".join(problems))
    documents = build_node_documents(cluster)
    nodes = nodes_from_documents(documents)
    levels = cluster.levels
    objects: list[Resource] = [build_topology(levels)]
    objects.extend(build_queues(scenario.queues, capacity_by_model(cluster)))
    nominal = {t.name: int(cluster.gpu_count * t.share) for t in scenario.queues.teams}
    if scenario.trace is not None:
        from simulations.traces.jobcsv import read_job_csv

        trace_jobs = read_job_csv(scenario.trace)
        known = {t.name for t in scenario.queues.teams}
        for job in trace_jobs:
            if job.team not in known:
                raise SimulationInputError(
                    str(scenario.trace),
                    None,
                    "team",
                    f"team {job.team!r} of {job.name} has no queue; teams are {', '.join(sorted(known))}",
                )
        return BuiltScenario(
            scenario,
            objects,
            nodes,
            documents,
            levels,
            len(trace_jobs),
            lambda _: iter(trace_jobs),
            GPU_RESOURCE,
            cluster.gpu_count,
            nominal,
        )
    workload = scenario.workload or SyntheticWorkload(jobs=1000)

    def jobs(streams: RandomStreams) -> Iterator[JobSpec]:
        return generate_jobs(workload, cluster.gpu_count, cluster.gpus_per_node, streams, topology_levels=levels)

    return BuiltScenario(
        scenario,
        objects,
        nodes,
        documents,
        levels,
        expected_jobs(workload, cluster.gpu_count),
        jobs,
        GPU_RESOURCE,
        cluster.gpu_count,
        nominal,
        horizon=workload.horizon,
    )


def _build_openb(scenario: Scenario) -> BuiltScenario:
    from simulations.cluster_spec import HOSTNAME_LABEL, PRIORITY_CLASSES, build_flavor, flavor_name
    from simulations.traces.openb import OPENB_TEAM, read_openb

    assert scenario.trace is not None
    trace = read_openb(scenario.trace)
    objects: list[Resource] = [build_topology((HOSTNAME_LABEL,))]
    objects.extend(build_flavor(model, TOPOLOGY_NAME) for model in sorted(trace.capacity_by_model))
    flavors = []
    for model in sorted(trace.capacity_by_model):
        totals = trace.capacity_by_model[model]
        flavors.append(
            {
                "name": flavor_name(model),
                "resources": [
                    {"name": "cpu", "nominalQuota": str(totals["cpu"])},
                    {"name": "memory", "nominalQuota": f"{totals['memory']}Gi"},
                    {"name": GPU_RESOURCE, "nominalQuota": str(totals[GPU_RESOURCE])},
                ],
            }
        )
    objects.append(
        ClusterQueue.model_validate(
            {
                "metadata": {"name": OPENB_TEAM},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU_RESOURCE], "flavors": flavors}],
                    "preemption": {"withinClusterQueue": "LowerPriority"},
                },
            }
        )
    )
    objects.append(
        LocalQueue.model_validate(
            {"metadata": {"name": LOCAL_QUEUE_NAME, "namespace": OPENB_TEAM}, "spec": {"clusterQueue": OPENB_TEAM}}
        )
    )
    objects.extend(
        WorkloadPriorityClass.model_validate({"metadata": {"name": name}, "value": value})
        for name, value in PRIORITY_CLASSES.items()
    )
    jobs = trace.jobs
    return BuiltScenario(
        scenario,
        objects,
        trace.nodes,
        trace.node_documents,
        (HOSTNAME_LABEL,),
        len(jobs),
        lambda _: iter(jobs),
        GPU_RESOURCE,
        trace.gpu_count,
        {OPENB_TEAM: trace.gpu_count},
        dict(trace.notes),
    )


def _kueue_perf_queue(name: str, cohort: str, perf: KueuePerfSpec) -> ClusterQueue:
    """One ClusterQueue of Kueue's performance test: CPU only, borrowing in its cohort."""
    cpu = {"name": "cpu", "nominalQuota": str(perf.nominal_cpu), "borrowingLimit": str(perf.borrowing_limit_cpu)}
    return ClusterQueue.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "cohortName": cohort,
                "namespaceSelector": {},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [cpu]}]}],
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            },
        }
    )


def _kueue_perf_jobs(perf: KueuePerfSpec, queues: list[str]) -> list[JobSpec]:
    """Kueue's runner creates each class's workloads at a fixed interval in every CQ."""
    entries: list[JobSpec] = []
    for queue in queues:
        for cls, count, cpu, runtime, _priority, interval in perf.classes:
            for i in range(count):
                entries.append(
                    JobSpec(
                        name=f"{cls}-{i}",
                        team=queue,
                        submit_time=i * interval,
                        nodes=1,
                        gpus_per_node=0,
                        duration=runtime,
                        priority_class=cls,
                        cpu_milli=cpu * 1000,
                        memory_mib=0,
                    )
                )
    entries.sort(key=lambda job: job.submit_time)
    return entries


def _build_kueue_perf(scenario: Scenario, perf: KueuePerfSpec) -> BuiltScenario:
    objects: list[Resource] = [ResourceFlavor.model_validate({"metadata": {"name": "default"}})]
    queues: list[str] = []
    for c in range(perf.cohorts):
        cohort = f"cohort-{c}"
        objects.append(Cohort.model_validate({"metadata": {"name": cohort}}))
        for q in range(perf.queues_per_cohort):
            name = f"{cohort}-cq-{q}"
            queues.append(name)
            objects.append(_kueue_perf_queue(name, cohort, perf))
            objects.append(
                LocalQueue.model_validate(
                    {"metadata": {"name": LOCAL_QUEUE_NAME, "namespace": name}, "spec": {"clusterQueue": name}}
                )
            )
    for cls, _, _, _, priority, _ in perf.classes:
        objects.append(WorkloadPriorityClass.model_validate({"metadata": {"name": cls}, "value": priority}))
    per_queue = sum(count for _, count, *_ in perf.classes)

    def jobs(streams: RandomStreams) -> Iterator[JobSpec]:
        del streams  # the Kueue generator is deterministic
        return iter(_kueue_perf_jobs(perf, queues))

    nominal = dict.fromkeys(queues, perf.nominal_cpu)
    return BuiltScenario(
        scenario, objects, [], [], (), per_queue * len(queues), jobs, "cpu", perf.nominal_cpu * len(queues), nominal
    )

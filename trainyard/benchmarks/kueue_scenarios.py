"""Kueue's scheduler performance scenarios (test/performance/scheduler/configs), as objects.

baseline: 5 cohorts × 6 ClusterQueues; per ClusterQueue 350 small (1 cpu, 200 ms, priority 50,
one every 100 ms), 100 medium (5 cpu, 500 ms, priority 100, every 500 ms), 50 large (20 cpu,
1000 ms, priority 200, every 1200 ms) = 15,000 workloads. large-scale: 10 cohorts × 100
ClusterQueues; per ClusterQueue 35 small (150 ms, every 60 ms), 11 medium (350 ms, every 300 ms),
4 large (700 ms, every 700 ms) = 50,000. Every ClusterQueue: nominal 20 cpu, borrowingLimit 100,
reclaimWithinCohort Any, withinClusterQueue LowerPriority.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.api.kueue import ClusterQueue, LocalQueue, ResourceFlavor, Workload


@dataclass(frozen=True)
class WorkloadClass:
    name: str
    count: int
    cpu: int
    runtime_s: float
    priority: int
    interval_s: float


@dataclass(frozen=True)
class KueueScenario:
    name: str
    cohorts: int
    queues_per_cohort: int
    classes: tuple[WorkloadClass, ...]
    nominal_cpu: int = 20
    borrowing_limit_cpu: int = 100

    @property
    def workloads(self) -> int:
        return self.cohorts * self.queues_per_cohort * sum(c.count for c in self.classes)


SCENARIOS = {
    "kueue-baseline": KueueScenario(
        "kueue-baseline",
        5,
        6,
        (
            WorkloadClass("small", 350, 1, 0.2, 50, 0.1),
            WorkloadClass("medium", 100, 5, 0.5, 100, 0.5),
            WorkloadClass("large", 50, 20, 1.0, 200, 1.2),
        ),
    ),
    "kueue-large": KueueScenario(
        "kueue-large",
        10,
        100,
        (
            WorkloadClass("small", 35, 1, 0.15, 50, 0.06),
            WorkloadClass("medium", 11, 5, 0.35, 100, 0.3),
            WorkloadClass("large", 4, 20, 0.7, 200, 0.7),
        ),
    ),
}

NAMESPACE = "perf"


def queue_objects(scenario: KueueScenario) -> list[ResourceFlavor | ClusterQueue | LocalQueue]:
    objects: list[ResourceFlavor | ClusterQueue | LocalQueue] = [
        ResourceFlavor.model_validate({"metadata": {"name": "default"}})
    ]
    for cohort in range(scenario.cohorts):
        for index in range(scenario.queues_per_cohort):
            name = f"cq-{cohort}-{index}"
            objects.append(
                ClusterQueue.model_validate(
                    {
                        "metadata": {"name": name},
                        "spec": {
                            "cohortName": f"cohort-{cohort}",
                            "namespaceSelector": {},
                            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                            "resourceGroups": [
                                {
                                    "coveredResources": ["cpu"],
                                    "flavors": [
                                        {
                                            "name": "default",
                                            "resources": [
                                                {
                                                    "name": "cpu",
                                                    "nominalQuota": scenario.nominal_cpu,
                                                    "borrowingLimit": scenario.borrowing_limit_cpu,
                                                }
                                            ],
                                        }
                                    ],
                                }
                            ],
                        },
                    }
                )
            )
            objects.append(
                LocalQueue.model_validate(
                    {"metadata": {"name": f"lq-{name}", "namespace": NAMESPACE}, "spec": {"clusterQueue": name}}
                )
            )
    return objects


@dataclass(frozen=True)
class Arrival:
    time: float
    cluster_queue: str
    workload_class: WorkloadClass
    index: int

    def workload(self) -> Workload:
        return Workload.model_validate(
            {
                "metadata": {
                    "name": f"{self.cluster_queue}-{self.workload_class.name}-{self.index}",
                    "namespace": NAMESPACE,
                },
                "spec": {
                    "queueName": f"lq-{self.cluster_queue}",
                    "priority": self.workload_class.priority,
                    "podSets": [
                        {
                            "name": "main",
                            "count": 1,
                            "template": {
                                "spec": {
                                    "containers": [
                                        {"name": "c", "resources": {"requests": {"cpu": str(self.workload_class.cpu)}}}
                                    ]
                                }
                            },
                        }
                    ],
                },
            }
        )


def arrivals(scenario: KueueScenario) -> list[Arrival]:
    """Every workload's creation, in time order (each class ticks at its own interval per queue)."""
    found = [
        Arrival(round(i * cls.interval_s, 6), f"cq-{cohort}-{index}", cls, i)
        for cohort in range(scenario.cohorts)
        for index in range(scenario.queues_per_cohort)
        for cls in scenario.classes
        for i in range(cls.count)
    ]
    found.sort(key=lambda a: a.time)
    return found

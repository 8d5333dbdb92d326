"""Scenarios: built-in ones and YAML files, turned into objects, nodes and a job stream.

Scenario file schema (every key optional except ``name``; unknown keys are errors)::

    name: my-cluster                # shown in reports
    description: text
    cluster:                        # synthetic hardware (simulations.cluster_spec.ClusterSpec)
      zones: 1
      spinesPerZone: 4
      blocksPerSpine: 8
      nodesPerBlock: 32
      gpusPerNode: 8
      nvlinkNodes: 1                # nodes per NVLink domain (must divide nodesPerBlock)
      gpuModel: H100
      cpu: 224                      # cores per node
      memoryGi: 2048
    teams:                          # one ClusterQueue + LocalQueue per team, all in one cohort
    - {name: team-a, share: 0.5, borrowingLimitShare: 0.25, weight: 1, arrivalWeight: 1, priorityClass: normal,
       mix: helios, durationScale: 4}   # mix/durationScale: this team's own jobs (default: the workload's)
    queueing: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority, fairSharing: false}
    workload:                       # synthetic TrainJobs (simulations.workloads)
      jobs: 2000
      mix: kalos                    # kalos | helios | philly | philly-lognormal
      load: 0.9                     # offered GPU-seconds / capacity
      durationScale: 1.0
      topologyMode: preferred       # how multi-node jobs ask: required | preferred | none
      topologyLevel: null           # default: the level just above the hostname
      highPriorityFraction: 0.0
      maxDurationSeconds: 2592000   # clip the duration tail
      arrivals: poisson             # poisson | diurnal (rate ± diurnalAmplitude over each day)
      diurnalAmplitude: 0.5
      horizonSeconds: 86400         # arrivals stop and the run ends here (jobs becomes a cap)
    trace: jobs.csv                 # instead of workload: a job CSV or the openb directory
    waitForPodsReady: {timeoutSeconds: 600}
    failures: {nodeMtbfHours: 2000, repairSeconds: 3600}
    stages: [../manifests/kwok/stages]   # KWOK Stage files or directories
    sampleSeconds: 300
    warmupSeconds: 0                # left out of every metric (the report says so)

Paths are relative to the scenario file. The Kueue objects a file's teams become pass the same
check (``scheduler.api.checks.check_object``) as every other entry point.

The package: ``spec`` (Scenario, BuiltScenario), ``catalogue`` (the built-in scenarios),
``builders`` (scenario -> objects, nodes, jobs) and ``files`` (YAML scenario files).
"""

from __future__ import annotations

from simulations.scenarios.builders import build
from simulations.scenarios.catalogue import BENCH_SCENARIO, BUILTIN, KUEUE_BASELINE, KUEUE_LARGE
from simulations.scenarios.files import load_scenario_file, resolve_scenario, with_trace
from simulations.scenarios.spec import IMMEDIATE_STAGES_DIR, BuiltScenario, FailureSpec, KueuePerfSpec, Scenario

__all__ = [
    "BENCH_SCENARIO",
    "BUILTIN",
    "IMMEDIATE_STAGES_DIR",
    "KUEUE_BASELINE",
    "KUEUE_LARGE",
    "BuiltScenario",
    "FailureSpec",
    "KueuePerfSpec",
    "Scenario",
    "build",
    "load_scenario_file",
    "resolve_scenario",
    "with_trace",
]

"""Cluster generator shapes, synthetic workload statistics, and the trace readers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from scheduler.api.kueue import ClusterQueue, LocalQueue, Topology
from simulations.arrivals import generate_jobs
from simulations.cluster_spec import (
    BLOCK_LABEL,
    GPU_RESOURCE,
    HOSTNAME_LABEL,
    NVLINK_LABEL,
    ClusterSpec,
    QueueSpec,
    build_nodes,
    build_queues,
    build_topology,
    capacity_by_model,
)
from simulations.errors import SimulationInputError
from simulations.events import Event, EventKind, EventQueue, RandomStreams
from simulations.kwok import KWOK_NODE_ANNOTATION
from simulations.traces import BUNDLED_OPENB_DIR, read_job_csv, read_openb
from simulations.workloads import SyntheticWorkload


def test_event_queue_is_stable_for_equal_times() -> None:
    queue = EventQueue()
    for i, when in enumerate([5.0, 1.0, 5.0, 1.0]):
        queue.push(Event(when, EventKind.ARRIVAL, f"e{i}"))
    assert [e.subject for e in queue.pop_batch()] == ["e1", "e3"]
    assert [e.subject for e in queue.pop_batch()] == ["e0", "e2"]
    with pytest.raises(ValueError, match="non-negative"):
        queue.push(Event(-1.0, EventKind.ARRIVAL, "bad"))


def test_random_streams_are_independent_and_reproducible() -> None:
    a, b = RandomStreams(3), RandomStreams(3)
    first = a.numpy("arrivals").random(3)
    b.numpy("sizes").random(100)  # drawing from another stream does not move this one
    assert np.array_equal(first, b.numpy("arrivals").random(3))
    assert not np.array_equal(first, RandomStreams(4).numpy("arrivals").random(3))


def test_cluster_shape_labels_and_topology() -> None:
    spec = ClusterSpec(zones=2, spines_per_zone=2, blocks_per_spine=3, nodes_per_block=4, nvlink_nodes=2)
    nodes = build_nodes(spec)
    assert len(nodes) == spec.node_count == 48
    assert spec.gpu_count == 48 * 8
    assert len({n.name for n in nodes}) == 48
    assert all(n.metadata.annotations[KWOK_NODE_ANNOTATION] == "fake" for n in nodes)
    assert all(n.status.allocatable[GPU_RESOURCE].amount(GPU_RESOURCE) == 8 for n in nodes)
    assert len({n.metadata.labels[BLOCK_LABEL] for n in nodes}) == 12
    assert len({n.metadata.labels[NVLINK_LABEL] for n in nodes}) == 24
    topology = build_topology(spec.levels)
    assert isinstance(topology, Topology)
    assert topology.level_labels[-1] == HOSTNAME_LABEL
    assert NVLINK_LABEL in topology.level_labels
    assert NVLINK_LABEL not in ClusterSpec(nvlink_nodes=1).levels
    assert ClusterSpec(nodes_per_block=30, nvlink_nodes=4).validate()  # 4 does not divide 30


def test_queues_split_the_cluster_by_share() -> None:
    spec = ClusterSpec(zones=1, spines_per_zone=1, blocks_per_spine=1, nodes_per_block=10)
    objects = build_queues(QueueSpec(), capacity_by_model(spec))
    queues = [o for o in objects if isinstance(o, ClusterQueue)]
    assert [q.name for q in queues] == ["team-a", "team-b", "team-c", "team-d"]
    gpu = next(r for r in queues[0].spec.resource_groups[0].flavors[0].resources if r.name == GPU_RESOURCE)
    assert gpu.nominal_quota.amount(GPU_RESOURCE) == 20  # a quarter of 80 GPUs
    assert all(q.spec.cohort_name == "gpu-cluster" for q in queues)
    assert {o.namespace for o in objects if isinstance(o, LocalQueue)} == {"team-a", "team-b", "team-c", "team-d"}


@pytest.mark.parametrize(("mix", "mean_gpus"), [("philly", 2.0), ("helios", 4.3), ("kalos", 28.0)])
def test_synthetic_mixes_match_their_published_shape(mix: str, mean_gpus: float) -> None:
    workload = SyntheticWorkload(jobs=6000, mix=mix, load=1.0)
    jobs = list(generate_jobs(workload, 8192, 8, RandomStreams(1), topology_levels=("block", HOSTNAME_LABEL)))
    gpus = np.array([j.gpus for j in jobs])
    assert np.median(gpus) == 1
    assert gpus.mean() == pytest.approx(mean_gpus, rel=0.25)
    submits = [j.submit_time for j in jobs]
    assert submits == sorted(submits)
    multi = [j for j in jobs if j.nodes > 1]
    assert all(j.gpus_per_node == 8 and j.topology_level == "block" for j in multi)
    assert all(j.topology_level == HOSTNAME_LABEL for j in jobs if j.nodes == 1)
    gaps = np.diff(submits)
    assert gaps.std() == pytest.approx(gaps.mean(), rel=0.15)  # Poisson: exponential gaps


def test_job_csv_reads_and_sorts(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(
        "submit_time,team,nodes,gpus_per_node,duration,priority,topology\n"
        "10,team-b,2,8,600,high,preferred:network.topology.nvidia.com/block\n"
        "0,team-a,1,4,60,,\n"
    )
    jobs = read_job_csv(path)
    assert [j.team for j in jobs] == ["team-a", "team-b"]
    assert jobs[1].priority_class == "high"
    assert jobs[1].topology_mode == "preferred"
    assert jobs[0].cpu_milli == 64000


@pytest.mark.parametrize(
    ("row", "line", "field"),
    [
        pytest.param("0,team-a,two,8,60,normal", 3, "nodes", id="not-an-integer"),
        pytest.param("0,team-a,1,8,0,normal", 3, "duration", id="zero-duration"),
        pytest.param("0,Team_A,1,8,60,normal", 3, "team", id="bad-namespace"),
        pytest.param("0,team-a,1,8,60,urgent", 3, "priority", id="unknown-priority"),
        pytest.param("-1,team-a,1,8,60,normal", 3, "submit_time", id="negative-time"),
    ],
)
def test_job_csv_errors_name_file_line_and_field(tmp_path: Path, row: str, line: int, field: str) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("submit_time,team,nodes,gpus_per_node,duration,priority\n0,team-a,1,8,60,normal\n" + row + "\n")
    with pytest.raises(SimulationInputError) as caught:
        read_job_csv(path)
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(path), line, field)


def test_job_csv_missing_column_is_named(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("submit_time,team,nodes,duration,priority\n0,a,1,1,\n")
    with pytest.raises(SimulationInputError, match="gpus_per_node"):
        read_job_csv(path)


def test_openb_reader_keeps_the_published_shape() -> None:
    trace = read_openb(BUNDLED_OPENB_DIR)
    assert len(trace.nodes) == 1213
    assert trace.gpu_count == 6212
    assert len(trace.jobs) == 8152
    assert Counter(j.gpus_per_node for j in trace.jobs)[8] == 44
    assert trace.notes["never_scheduled_pods"] == 897
    assert all(j.nodes == 1 and j.duration >= 1 for j in trace.jobs)


def test_openb_bad_row_names_file_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n"
    )
    (tmp_path / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
        "p0,1000,1024,1,1000,,LS,Running,0,10,0\n"
        "p1,1000,1024,x,1000,,LS,Running,0,10,0\n"
    )
    with pytest.raises(SimulationInputError) as caught:
        read_openb(tmp_path)
    assert (caught.value.line, caught.value.field) == (3, "num_gpu")

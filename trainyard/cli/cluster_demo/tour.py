"""`trainyard cluster-demo`: TrainJobs going through trainyard's real service, watched as with kubectl.

A ``LocalCluster`` (the sandbox API server on loopback) is seeded with a small GPU cluster
(``seed``: four 8-GPU hosts in two blocks, two teams' ClusterQueues in one cohort with
preemption); trainyard's admission webhook (registered with manifests/webhook's
configurations, called by the API server), its controller service and the stand-ins for the
JobSet and Job controllers, the binder and the kubelet run against it over HTTPS. A data
scientist first trains with the SDK's Kubernetes backend (``sdk_steps``) and waits for the job to
complete, then asks for more GPUs than the cluster has and the webhook refuses it. The tour then
submits TrainJobs through the API, as a user would, and prints step by step what the API server
says happened: Workloads created and admitted with their flavor and topologyAssignment, a job
pending with the engine's reason and position, a high-priority job preempting a low-priority
one, pods ungated onto the placed nodes, JobSets completing, quota released and the waiting
jobs admitted. Every line is read back from the server; the plan only says what to submit and
what to wait for, and a state not reached in time ends the tour with exit code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trainyard.cli.cluster_demo.seed import TourJob

if TYPE_CHECKING:
    from rich.console import Console

    from sandbox.embedded import LocalCluster
    from trainyard.cli.cluster_demo.watch import ClusterWatch

# The plan: who submits what. How long each pod runs is chosen so that the first two gangs
# still hold the whole fabric when the sweep and the urgent job arrive.
PRETRAIN = TourJob("pretrain", "team-a", nodes=2, priority="low", run_seconds=4)
FINETUNE = TourJob("finetune", "team-b", nodes=2, priority=None, run_seconds=4)
SWEEP = TourJob("sweep", "team-a", nodes=1, priority="low", run_seconds=1)
URGENT = TourJob("urgent-eval", "team-a", nodes=2, priority="high", run_seconds=2)
JOBS = (PRETRAIN, FINETUNE, SWEEP, URGENT)
# scheduler.engine.views.waiting_reason's words for a workload no cycle has tried yet.
QUEUE_TURN_PLACEHOLDER = "waiting for its turn in the queue"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--step-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="how long to wait for each expected state before giving up with exit code 1 (default 20)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print the controllers' and stand-ins' log records (warnings and retries) as they happen",
    )


class Tour:
    """The story, one method per step; each waits for the API server to show the step's outcome."""

    def __init__(self, cluster: LocalCluster, watch: ClusterWatch, console: Console, step_timeout: float) -> None:
        self.cluster = cluster
        self.watch = watch
        self.console = console
        self.timeout = step_timeout

    def step(self, title: str) -> None:
        from rich.rule import Rule

        self.console.print(Rule(f"[bold]{title}", align="left"))

    async def submit(self, job: TourJob) -> None:
        from trainyard.cli.cluster_demo.seed import trainjob

        await self.cluster.client.create(trainjob(job))
        priority = job.priority or "default"
        self.console.print(
            f"[dim]$ kubectl create -f {job.name}.yaml[/]  TrainJob [bold]{job.key}[/]: "
            f"{job.nodes} × 8 GPUs, priority {priority}"
        )

    async def wait(self, check: Callable[[], Any], what: str) -> Any:
        return await self.watch.wait_for(check, timeout=self.timeout, what=what)

    def workload(self, job: TourJob) -> dict[str, Any] | None:
        return self.watch.workload_of(job.team, job.name)

    async def admitted(self, job: TourJob) -> dict[str, Any]:
        from trainyard.cli.progress import condition_is_true

        def check() -> dict[str, Any] | None:
            workload = self.workload(job)
            return workload if workload is not None and condition_is_true(workload, "Admitted") else None

        found: dict[str, Any] = await self.wait(check, f"the Workload of TrainJob {job.key} to be admitted")
        return found

    async def show_cluster(self) -> None:
        from trainyard.cli.cluster_demo.display import nodes_table, queues_table

        self.step("A sandbox GPU cluster: 4 hosts × 8 H100s in 2 blocks, 2 teams in a cohort")
        client = self.cluster.client
        self.console.print(nodes_table((await client.list("Node")).items))
        self.console.print(queues_table((await client.list("ClusterQueue")).items))

    async def sdk_user(self) -> None:
        from trainyard.cli.cluster_demo.display import new_table
        from trainyard.cli.cluster_demo.sdk_steps import SDK_TEAM, in_thread_train_and_wait
        from trainyard.cli.progress import nodes_in_words, placement

        self.step(f"{SDK_TEAM} trains with the SDK's Kubernetes backend and waits for Complete")
        self.console.print(
            '[dim]>>> client = TrainerClient(KubernetesBackendConfig(kubeconfig, namespace="team-b", '
            'queue_name="default"))\n'
            '>>> name = client.train(runtime="torch-distributed", trainer=CustomTrainer(func=fine_tune, '
            'num_nodes=1, resources_per_node={"cpu": 8, "gpu": 8}))\n'
            ">>> client.wait_for_job_status(name)[/]"
        )
        run = await in_thread_train_and_wait(self.cluster.kubeconfig, self.timeout)
        workload = await self.wait(
            lambda: self.watch.workload_of(SDK_TEAM, run.name), f"the Workload of TrainJob {SDK_TEAM}/{run.name}"
        )
        admission = (workload.get("status") or {}).get("admission") or {}
        flavor, nodes = placement(workload)
        self.console.print(
            f"TrainJob [bold]{SDK_TEAM}/{run.name}[/] (runtime {run.runtime}) is [green]{run.status}[/]: its Workload "
            f"{workload['metadata']['name']} was admitted to ClusterQueue {admission.get('clusterQueue', '?')} "
            f"on flavor {flavor}, placed on {nodes_in_words(nodes)}"
        )
        table = new_table(f"client.get_job({run.name!r}).steps", ("STEP", "POD", "STATUS"))
        for step in run.steps:
            table.add_row(*step)
        self.console.print(table)

    async def never_fits(self) -> None:
        from trainyard.cli.cluster_demo.sdk_steps import NEVER_FITS_NODES, SDK_TEAM, in_thread_train_never_fits

        self.step(f"{SDK_TEAM} asks the SDK for {NEVER_FITS_NODES} × 8 GPUs (the cluster has 32): the webhook refuses")
        message = await in_thread_train_never_fits(self.cluster.kubeconfig)
        self.console.print(f"[red]refused[/] (ValueError from client.train): {message}", highlight=False)

    async def first_gangs(self) -> None:
        from trainyard.cli.cluster_demo.display import admitted_line

        self.step("Two teams submit a 2-node gang each: Workloads created and admitted")
        for job in (PRETRAIN, FINETUNE):
            await self.submit(job)
        for job in (PRETRAIN, FINETUNE):
            workload = await self.wait(functools.partial(self.workload, job), f"a Workload for TrainJob {job.key}")
            spec = workload.get("spec") or {}
            priority_class = (spec.get("priorityClassRef") or {}).get("name", "none")
            self.console.print(
                f"created Workload [bold]{workload['metadata']['name']}[/] for TrainJob {job.key}: "
                f"queue {spec.get('queueName')}, priority class {priority_class}, "
                f"{sum(p.get('count', 0) for p in spec.get('podSets') or [])} pods"
            )
        for job in (PRETRAIN, FINETUNE):
            self.console.print(admitted_line(await self.admitted(job)))

    async def pending_sweep(self) -> None:
        from trainyard.cli.cluster_demo.display import condition_line
        from trainyard.cli.progress import condition

        self.step("team-a submits a sweep while all 32 GPUs are held: it waits")
        await self.submit(SWEEP)

        def pending_with_position() -> dict[str, Any] | None:
            workload = self.workload(SWEEP)
            if workload is None:
                return None
            reserved = condition(workload, "QuotaReserved") or {}
            message = str(reserved.get("message", ""))
            # Before its first admission cycle the queue only says the job waits its turn; the
            # tour waits for the cycle's own reason (why it does not fit) with the position.
            tried = "position" in message and not message.startswith(QUEUE_TURN_PLACEHOLDER)
            return workload if reserved.get("status") == "False" and tried else None

        workload = await self.wait(pending_with_position, f"TrainJob {SWEEP.key} pending with a reason and position")
        self.console.print(f"[yellow]pending[/] Workload {workload['metadata']['name']}:")
        self.console.print(f"  {condition_line(workload, 'QuotaReserved')}", highlight=False)

    async def preemption(self) -> None:
        from trainyard.cli.cluster_demo.display import admitted_line, condition_line
        from trainyard.cli.progress import condition_is_true

        self.step("A high-priority job preempts the low-priority pretraining")
        await self.submit(URGENT)

        def preempted() -> dict[str, Any] | None:
            workload = self.workload(PRETRAIN)
            if workload is None:
                return None
            return (
                workload
                if condition_is_true(workload, "Evicted") and condition_is_true(workload, "Preempted")
                else None
            )

        victim = await self.wait(preempted, f"TrainJob {PRETRAIN.key} to be preempted")
        self.console.print(f"[red]preempted[/] Workload {victim['metadata']['name']} (TrainJob {PRETRAIN.key}):")
        for kind in ("Evicted", "Preempted"):
            self.console.print(f"  {condition_line(victim, kind)}", highlight=False)
        requeue = (victim.get("status") or {}).get("requeueState") or {}
        if requeue:
            self.console.print(
                f"  requeueState: count={requeue.get('count')} requeueAt={requeue.get('requeueAt', '-')}"
            )
        self.console.print(admitted_line(await self.admitted(URGENT)))
        self.console.print(self.usage("ClusterQueues now (from the Workloads' admissions on the server)"))

    async def ungated_pods(self) -> None:
        from scheduler.api.topology_assignment import HOSTNAME_LABEL
        from scheduler.controllers.ungater import is_gated, placement_for_pod
        from trainyard.cli.cluster_demo.display import new_table

        self.step(f"The pods of {URGENT.key} are ungated onto their placed nodes")
        workload = await self.admitted(URGENT)

        def bound_pods() -> list[dict[str, Any]] | None:
            pods = [
                pod
                for pod in self.watch.of_kind("Pod", URGENT.team)
                if (pod["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name") == URGENT.name
            ]
            done = len(pods) >= URGENT.nodes and all(
                not is_gated(pod) and (pod.get("spec") or {}).get("nodeName") for pod in pods
            )
            return pods if done else None

        pods = await self.wait(bound_pods, f"the pods of {URGENT.key} to be ungated and bound")
        columns = ("POD", "PLACED ON (topologyAssignment)", "BOUND TO (spec.nodeName)", "GATES", "PHASE")
        table = new_table(f"Pods of {URGENT.key}", columns)
        mismatched = []
        for pod in pods:
            placed = (placement_for_pod(pod, workload) or {}).get(HOSTNAME_LABEL, "-")
            bound = pod["spec"].get("nodeName", "-")
            if placed != bound:
                mismatched.append(pod["metadata"]["name"])
            gates = ", ".join(g.get("name", "") for g in pod["spec"].get("schedulingGates") or []) or "none"
            table.add_row(pod["metadata"]["name"], placed, bound, gates, (pod.get("status") or {}).get("phase", "-"))
        self.console.print(table)
        if mismatched:
            from trainyard.cli.cluster_demo.watch import TourTimeout

            raise TourTimeout(f"pods {', '.join(mismatched)} run on a node their topologyAssignment does not name")

    async def completion(self) -> None:
        from trainyard.cli.progress import trainjob_phase, workload_phase

        self.step("JobSets complete, quota is released, the waiting jobs are admitted")
        shown = len(self.watch.changes)
        self.console.print("[dim]$ kubectl get workloads,trainjobs -A -w[/]")

        def all_complete() -> bool:
            nonlocal shown
            for change in self.watch.changes[shown:]:
                self.console.print(
                    f"  {change.at:6.2f}s  {change.kind:<9} {change.key:<40} {change.phase}", highlight=False
                )
            shown = len(self.watch.changes)
            trainjobs = [self.watch.get("TrainJob", job.team, job.name) for job in JOBS]
            workloads = [self.workload(job) for job in JOBS]
            return all(t is not None and trainjob_phase(t) == "Complete" for t in trainjobs) and all(
                w is not None and workload_phase(w).startswith("Finished") for w in workloads
            )

        await self.wait(all_complete, "every TrainJob to complete and its Workload to finish")

    def usage(self, title: str) -> Any:
        from trainyard.cli.cluster_demo.display import usage_table

        return usage_table(
            self.watch.of_kind("ClusterQueue"),
            self.watch.of_kind("LocalQueue"),
            self.watch.of_kind("Workload"),
            title,
        )

    def summary(self) -> None:
        from trainyard.cli.cluster_demo.display import new_table
        from trainyard.cli.progress import nodes_in_words, placement, trainjob_phase

        self.step("Every TrainJob's path, and the ClusterQueues at the end")
        columns = ("TRAINJOB", "PRIORITY", "PATH (Workload phases as observed)", "LAST PLACEMENT", "STATUS")
        table = new_table("TrainJobs", columns)
        for job in JOBS:
            trainjob = self.watch.get("TrainJob", job.team, job.name) or {}
            workload = self.workload(job) or {}
            _, nodes = placement(workload)
            if not nodes:
                nodes = self._nodes_ran_on(job)
            table.add_row(
                job.key,
                job.priority or "default",
                " → ".join(self.watch.path_of(job.team, job.name)),
                nodes_in_words(nodes),
                trainjob_phase(trainjob) if trainjob else "-",
            )
        self.console.print(table)
        self.console.print(self.usage("ClusterQueues (from the Workloads' admissions on the server)"))

    def _nodes_ran_on(self, job: TourJob) -> list[str]:
        return sorted(
            str(pod["spec"].get("nodeName"))
            for pod in self.watch.of_kind("Pod", job.team)
            if (pod["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/jobset-name") == job.name
            and (pod.get("spec") or {}).get("nodeName")
        )


async def tour(step_timeout: float, console: Console) -> None:
    from sandbox.embedded import LOCAL_INFORMERS, LocalCluster
    from trainyard.cli.cluster_demo.seed import cluster_objects
    from trainyard.cli.cluster_demo.watch import ClusterWatch

    async with LocalCluster(cluster_objects()) as cluster:
        console.print(
            f"[dim]sandbox API server at {cluster.kubeconfig} (kubeconfig); starting trainyard's webhook and controllers[/]"
        )
        await cluster.start_webhook()
        replica = await cluster.start_controllers()
        from trainyard.cli.cluster_demo.watch import TourTimeout

        try:
            async with asyncio.timeout(step_timeout):
                await replica.service.manager.leading.wait()
        except TimeoutError:
            raise TourTimeout(f"the controller service did not start leading within {step_timeout:g}s") from None
        await cluster.start_standins()
        kinds = ("Workload", "TrainJob", "Pod", "ClusterQueue", "LocalQueue")
        async with ClusterWatch(cluster.client, LOCAL_INFORMERS, kinds=kinds) as watch:
            story = Tour(cluster, watch, console, step_timeout)
            await story.show_cluster()
            await story.sdk_user()
            await story.never_fits()
            await story.first_gangs()
            await story.pending_sweep()
            await story.preemption()
            await story.ungated_pods()
            await story.completion()
            story.summary()


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from trainyard.cli.cluster_demo.component_logs import component_logs
    from trainyard.cli.cluster_demo.watch import TourTimeout
    from trainyard.cli.errors import UserError

    if args.step_timeout <= 0:
        raise UserError(f"--step-timeout must be above 0 seconds, not {args.step_timeout:g}")
    console = Console()
    with component_logs(args.verbose) as held:
        try:
            asyncio.run(tour(args.step_timeout, console))
        except TourTimeout as error:
            print(f"trainyard cluster-demo: {error}", file=sys.stderr)
            for record in held.records:
                print(f"  log: {record.name} {record.levelname} {record.getMessage()}", file=sys.stderr)
            return 1
    if held.records:
        console.print(
            f"[dim]the controllers and stand-ins logged {len(held.records)} warning(s) on the way "
            "(retries they recovered from); --verbose prints them[/]"
        )
    return 0

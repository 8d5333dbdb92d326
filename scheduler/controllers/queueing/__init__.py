"""trainyard in Kueue's place (standalone): TrainJobs queued, admitted and reported as Kueue would.

``trainjob_workloads`` (TrainJob → Workload), ``engine_mirror`` (the engine as a cache of the API
server), ``queue_controller`` (debounced admission cycles, their decisions written back),
``workload_writer`` (status writes with the resourceVersion read), ``pending_status`` (pending
reasons and positions within a write budget), ``health`` (PodsReady, node failures),
``queue_status`` (ClusterQueue and LocalQueue status), ``metrics`` and ``wiring``.
"""

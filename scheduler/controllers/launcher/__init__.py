"""The launcher: starts a TrainJob once its admission is committed, stops it on eviction.

``reconciler`` (one generic reconciler over the ``JobLauncher`` protocol), one module per mode
(``jobset``: trainyard renders the JobSet; ``trainer``: beside Kubeflow Trainer's controller),
``pod_sets`` (what an admission puts on the job's pods), ``trainjob_status`` (JobSet status →
TrainJob status), ``writes`` (counted, idempotent writes and the stale-cache guard) and ``wiring``
(the launcher and the pod ungater as controllers).
"""

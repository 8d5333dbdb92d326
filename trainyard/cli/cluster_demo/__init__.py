"""`trainyard cluster-demo`: TrainJobs through trainyard's controllers on a sandbox API server.

``tour`` holds the command line and the tour's steps; ``seed`` the small GPU cluster it seeds and
the TrainJobs it submits; ``sdk_steps`` the steps a data scientist takes with the SDK; ``watch``
what the tour sees of the cluster (informers, phases); ``display`` how it prints it;
``component_logs`` where the in-process components log.
"""

from trainyard.cli.cluster_demo.tour import configure, run

__all__ = ["configure", "run"]

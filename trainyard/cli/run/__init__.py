"""`trainyard run TRAINJOB.yaml --local | --kubeconfig PATH`: run a TrainJob here, or on a cluster.

``command`` holds the command line and the local run; ``submission`` submits a TrainJob to a cluster
and follows it.
"""

from trainyard.cli.run.command import configure, run

__all__ = ["configure", "run"]

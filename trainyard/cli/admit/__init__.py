"""`trainyard admit FILE...`: a dry run of Kueue admission over YAML objects, Workloads and jobs.

``command`` holds the command line, the inputs and the report; ``job_workloads`` derives the
Workloads of Jobs, JobSets, Pods and Kubeflow jobs; ``check_states`` applies admission checks.
"""

from trainyard.cli.admit.command import configure, run

__all__ = ["configure", "run"]

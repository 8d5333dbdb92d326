"""`trainyard queues`: queue quota administration (list, pending, describe, set-quota, what-if).

``command`` holds the command line and the subcommands; ``source`` reads the queues from files or a
cluster; ``cluster_side`` talks to the cluster (reads, the visibility API, the quota patch);
``pending_order`` takes the pending order from the service's visibility API; ``file_edit`` edits a
quota in its YAML file in place; ``what_if`` rehearses changes in the simulator; ``output`` prints
the tables, JSON and YAML.
"""

from trainyard.cli.queues.command import configure, run

__all__ = ["configure", "run"]

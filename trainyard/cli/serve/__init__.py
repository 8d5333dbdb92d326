"""`trainyard serve [webhook|controller]`: run trainyard's cluster services.

``command`` holds the command line (``check_mode``: what a mode refuses, which the install
manifests are checked against); ``admission_webhook`` runs the webhook (and the controllers beside
it); ``controllers_alone`` the controllers alone; ``cluster_connections`` their connections to a
cluster (the webhook's informers, the controller service) and the signals that stop them.
"""

from trainyard.cli.serve.command import check_mode, configure, run

__all__ = ["check_mode", "configure", "run"]

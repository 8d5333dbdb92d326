"""`trainyard simulate`: a scenario or a trace through the real engine over virtual time.

``command`` holds the command line and the simulator's run; the other backends and modes beside it:
``sandbox_backend`` (the whole service on the sandbox API server, or on a KWOK cluster),
``real_cluster`` (real Kubernetes components), ``policies`` (one scenario under several placement
policies), ``saturation_mode`` (the openb trace replayed as the FGD paper does).
"""

from trainyard.cli.simulate.command import configure, run

__all__ = ["configure", "run"]

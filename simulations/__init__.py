"""Discrete-event simulations of GPU clusters with KWOK Stage semantics, driving the real engine.

Owns: the simulator and its KWOK Stage rules, cluster and workload/trace generators and readers,
scenarios, metrics, reports and plots, KWOK manifest export and the real-KWOK driver, and the
sandbox cluster (``sandbox``: an API server speaking the Kubernetes protocol with KWOK-driven nodes).

Never: owns a scheduling rule (it drives ``scheduler.engine`` through its public API, or the real
service), or imports ``webhooks`` or the ``trainyard`` CLI.
"""

from scheduler.native import activate as _activate_native

# the simulator's hot loop (events, the engine driver, KWOK stage chains, metrics) runs compiled
# when ``make install`` built it; before any submodule is imported
_activate_native(__path__, __name__)

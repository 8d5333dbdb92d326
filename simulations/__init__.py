"""Discrete-event simulations of GPU clusters with KWOK Stage semantics, driving the real engine.

Owns: the simulator and its KWOK Stage rules, cluster and workload/trace generators and readers,
scenarios, metrics, reports and plots, KWOK manifest export and the real-KWOK driver.

Never: owns a scheduling rule (it drives ``scheduler.engine`` through its public API, or the real
service), or imports ``webhooks``, the ``sandbox`` clusters or the ``trainyard`` CLI.
"""

"""Discrete-event simulations of GPU clusters with KWOK Stage semantics, driving the real engine."""

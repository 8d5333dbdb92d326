"""Benchmark harnesses behind `trainyard bench ...`; each prints one JSON object."""

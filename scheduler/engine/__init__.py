"""The pure admission engine: Kueue quota arithmetic, queues, flavor assignment, preemption, fair sharing.

Objects in, decisions out: no I/O, no clock but the one passed in, deterministic.
"""

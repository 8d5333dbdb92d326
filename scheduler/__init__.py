"""The scheduler: everything that decides where and when a TrainJob runs.

Owns: the Kueue object models and their validation (``api``), the pure admission engine (quota
arithmetic, queues, the admission cycle, preemption, fair sharing: ``engine``), topology graphs and
gang placement (``topology``), pending-work queries (``queues``), job integrations (``jobs``), the
Kubernetes adapter (``kube``) and the controllers that feed the engine and write its decisions
(``controllers``).

Never: serves HTTP (that is ``webhooks``), imports ``webhooks``, ``simulations`` or the ``trainyard``
CLI, or imports torch. Inside it, ``engine`` does no I/O (no asyncio, aiohttp or Kubernetes client)
and is the one place each admission and quota rule is written.
"""

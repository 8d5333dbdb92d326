"""trainyard: the command line, the only place that wires the packages together.

Owns: the ``trainyard`` commands (``cli``), the benchmarks they run (``benchmarks``), the local
cluster helper and the SDK's Kubernetes backend.

Never: holds a scheduling, validation or rendering rule of its own (it calls ``scheduler``,
``runtimes``, ``webhooks`` and ``simulations``), and no other package imports it.
"""

__version__ = "0.1.0"

"""trainyard as Kueue's topology AdmissionCheck (``trainyard serve --mode admission-check``).

``topology_check`` (placements answered on Kueue's Workloads), ``check_state`` (what the answer
writes, and how a placement is read back), ``activity`` (the checks' ``Active`` condition),
``kueue_started_launcher`` (the ``jobset`` launcher that leaves ``spec.suspend`` to Kueue) and
``beside_kueue`` (their wiring on one cache and one leader election).
"""

"""The saturation replay of the openb trace, as the FGD paper (ATC'23) reads it.

``replay`` (``run_saturation``: pods placed in arrival order, never leaving, under each policy),
``clusters`` (whole GPUs through the engine's placer, or shared GPUs), ``shapes`` (the pod shapes
FGD and the fragmentation rate measure against), ``refusals`` (why a pod was refused, which GPUs
are stranded), ``report`` (the table and the plot) and ``paper`` (the paper's published figures).
"""

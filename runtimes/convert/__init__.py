"""Training Operator v1 → Trainer v2: PyTorchJob and TFJob as a TrainJob (+ a runtime when needed).

A PyTorchJob whose pods differ from the built-in ``torch-distributed`` runtime only in fields a
TrainJob can carry (image, command, args, env, resources, and through ``runtimePatches`` the
service account, node selector, affinity, tolerations, volumes and mounts) becomes a TrainJob on
that runtime. Anything else (sidecars, init containers, probes, ports, a Master that differs from
its Workers) needs its own TrainingRuntime, generated next to the TrainJob. A TFJob always gets
one: Trainer ships no TensorFlow runtime, and ``TF_CONFIG`` (the cluster of chief, workers and
parameter servers) must be rebuilt from JobSet's stable pod names.

Everything that cannot be carried over is listed in :attr:`Conversion.unmapped`, for a person.
"""

from __future__ import annotations

from typing import Any

from runtimes.convert.common import Conversion as Conversion
from runtimes.convert.common import ConversionError
from runtimes.convert.pytorch import convert_pytorchjob as convert_pytorchjob
from runtimes.convert.tensorflow import convert_tfjob as convert_tfjob

__all__ = ["Conversion", "ConversionError", "convert_pytorchjob", "convert_tfjob", "convert_v1_job"]


def convert_v1_job(job: dict[str, Any]) -> Conversion:
    kind = job.get("kind")
    if kind == "PyTorchJob":
        return convert_pytorchjob(job)
    if kind == "TFJob":
        return convert_tfjob(job)
    raise ConversionError(f"kind {kind!r} is not supported: convert takes a kubeflow.org/v1 PyTorchJob or TFJob")

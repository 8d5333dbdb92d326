"""Golden tests: TrainJob + runtime (+ placement) → JobSet, PodGroup, Secret, ConfigMap.

Each case renders a TrainJob with a runtime and compares every object with
``tests/runtimes/golden/<case>.yaml``. After an intended change to rendering, regenerate the
goldens and review the diff:

    TRAINYARD_UPDATE_GOLDEN=1 .venv/bin/pytest tests/runtimes/test_render_golden.py

The MPI SSH key is random per render, so it is checked here (a real ECDSA P-521 key pair whose
public half matches) and then replaced with a placeholder before the comparison.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from runtimes.loading import dump_documents, load_runtimes, load_trainjob
from runtimes.pod_placement import PodPlacement
from runtimes.render import render_trainjob

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RUNTIMES = ROOT / "manifests" / "runtimes"
SAMPLES = ROOT / "manifests" / "samples" / "trainjobs"
FIXTURES = HERE / "fixtures"
GOLDEN = HERE / "golden"

CASES = {
    "torch": (SAMPLES / "torch-2-nodes.yaml", RUNTIMES / "torch_distributed.yaml", None),
    "torch-initializers": (
        SAMPLES / "torch-with-initializers.yaml",
        RUNTIMES / "torch_distributed_with_initializers.yaml",
        None,
    ),
    "torch-runtime-patches": (FIXTURES / "runtime-patches-job.yaml", RUNTIMES / "torch_distributed.yaml", None),
    "torch-placement": (
        SAMPLES / "torch-2-nodes.yaml",
        RUNTIMES / "torch_distributed.yaml",
        FIXTURES / "torch-placement.yaml",
    ),
    "mpi": (SAMPLES / "deepspeed-mpi.yaml", RUNTIMES / "deepspeed_distributed.yaml", None),
    "mpi-placement": (
        SAMPLES / "deepspeed-mpi.yaml",
        RUNTIMES / "deepspeed_distributed.yaml",
        FIXTURES / "mpi-placement.yaml",
    ),
    "plainml": (FIXTURES / "plain-job.yaml", RUNTIMES / "plain_python.yaml", None),
}


def _placement(path: Path | None) -> PodPlacement | None:
    if path is None:
        return None
    data = yaml.safe_load(path.read_text())
    return PodPlacement(nodes=data["nodes"], domain=data.get("domain") or {})


def _check_and_mask_ssh_secret(secret: dict[str, Any]) -> dict[str, Any]:
    private_pem = base64.b64decode(secret["data"]["ssh-privatekey"])
    public_line = base64.b64decode(secret["data"]["ssh-publickey"])
    private_key = serialization.load_pem_private_key(private_pem, password=None)
    assert isinstance(private_key, ec.EllipticCurvePrivateKey)
    assert private_key.curve.name == "secp521r1"
    expected_public = private_key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert public_line == expected_public + b"\n"
    return {**secret, "data": dict.fromkeys(secret["data"], "<generated>")}


def render_case(case: str) -> str:
    trainjob_path, runtime_path, placement_path = CASES[case]
    (runtime,) = load_runtimes(runtime_path)
    rendered = render_trainjob(load_trainjob(trainjob_path), runtime, _placement(placement_path))
    objects = rendered.objects()
    objects = [_check_and_mask_ssh_secret(o) if o["kind"] == "Secret" else o for o in objects]
    return dump_documents(objects)


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_matches_golden(case: str) -> None:
    actual = render_case(case)
    golden = GOLDEN / f"{case}.yaml"
    if os.environ.get("TRAINYARD_UPDATE_GOLDEN"):
        golden.write_text(actual)
    assert golden.exists(), f"no golden for {case}; run with TRAINYARD_UPDATE_GOLDEN=1"
    assert list(yaml.safe_load_all(actual)) == list(yaml.safe_load_all(golden.read_text()))

"""KWOK constants shared by the stage parser, the lifecycle and the exporters."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

STAGE_API_VERSION = "kwok.x-k8s.io/v1alpha1"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
POD_COMPLETE_DELAY_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"
POD_COMPLETE_JITTER_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/jitter-delay"
DEFAULT_STAGES_DIR = Path(__file__).resolve().parent.parent.parent / "manifests" / "kwok" / "stages"

# Virtual time 0 is this instant, for durationFrom expressions that yield a timestamp.
SIMULATION_EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)

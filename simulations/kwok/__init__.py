"""KWOK Stages (kwok.x-k8s.io/v1alpha1) read from files and played over virtual time.

The simulator uses a Stage exactly as the KWOK controller does (pkg/utils/lifecycle):

- **selector**: a stage with no selector matches nothing; an empty one matches everything;
  ``matchLabels``/``matchAnnotations`` are equality selectors; ``matchExpressions`` run a jq
  query (``query``) with In / NotIn / Exists / DoesNotExist, where a query that errors or
  yields ``null`` fails In/Exists and passes NotIn/DoesNotExist.
- **weight**: among matching stages one is picked at random in proportion to ``weight`` (or
  ``weightFrom``); a zero total picks uniformly.
- **delay** (``Stage.Delay``): no ``delay`` means none. ``durationFrom`` overrides
  ``durationMilliseconds`` (a time string gives ``t - now``, otherwise Go ``ParseDuration``;
  a query that yields ``null`` or an unparsable value means "no delay"). With a jitter:
  if ``jitter <= duration`` the delay **is the jitter**, without randomness; otherwise
  ``duration + Int63n(jitter - duration)`` nanoseconds.
- **next**: ``delete: true`` deletes the object; otherwise ``statusTemplate`` is applied as a
  status patch. The Go template is not executed: its YAML skeleton is read (top-level fields,
  ``phase``, and the ``type``/``status`` of literal conditions), which is all a selector can
  observe in the stage chains KWOK ships. Stage chains advance one stage per change, like
  KWOK's watch events; a stage whose patch changes nothing ends the chain.

Stages are written in the ``next`` form that KWOK v0.7 reads (v0.8 deprecates it in favour of
``steps``, which is refused here with a clear message rather than half-understood).

All of trainyard's KWOK code is here. What the simulator plays: ``constants``, ``query`` (the
jq subset and Go durations), ``selectors`` (match expressions), ``delays`` (delay/jitter rules),
``stages`` (Stage objects and their parsing), ``lifecycle`` (stage chains over a pod's life);
this package's names are those. Beside them, imported by name: ``stage_controller`` (KWOK's
controller over the API: the same Stages moving a cluster's Nodes and Pods, as the sandbox runs
it), ``export`` (``trainyard kwok export``: a scenario as the objects a real KWOK cluster runs)
and ``cluster_run`` (``trainyard simulate --backend kwok``: the scenario on such a cluster,
same metrics).
"""

from __future__ import annotations

from simulations.kwok.constants import (
    DEFAULT_STAGES_DIR,
    KWOK_NODE_ANNOTATION,
    POD_COMPLETE_DELAY_ANNOTATION,
    POD_COMPLETE_JITTER_ANNOTATION,
    SIMULATION_EPOCH,
    STAGE_API_VERSION,
)
from simulations.kwok.delays import _delay_text, draw_delay_ns  # _delay_text: tests
from simulations.kwok.lifecycle import GangOutcome, PodLifecycle, PodOutcome, simulated_pod
from simulations.kwok.selectors import MatchExpression
from simulations.kwok.stages import Stage, StageEffect, default_stages, load_stages, parse_stage

__all__ = [
    "DEFAULT_STAGES_DIR",
    "KWOK_NODE_ANNOTATION",
    "POD_COMPLETE_DELAY_ANNOTATION",
    "POD_COMPLETE_JITTER_ANNOTATION",
    "SIMULATION_EPOCH",
    "STAGE_API_VERSION",
    "GangOutcome",
    "MatchExpression",
    "PodLifecycle",
    "PodOutcome",
    "Stage",
    "StageEffect",
    "_delay_text",
    "default_stages",
    "draw_delay_ns",
    "load_stages",
    "parse_stage",
    "simulated_pod",
]

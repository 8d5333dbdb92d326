"""Whether a Node is Ready, and the request its failure queues, for every controller that follows one.

A Node that turns NotReady or is deleted under an admitted gang matters to the queue controller
(standalone) and to the topology check (beside Kueue) alike: both map the change to a
``NodeRequest``. A Node whose status cannot be read counts as Ready: nothing is evicted on a
parse error.
"""

from __future__ import annotations

from typing import Any

from runtimes.k8s.core import Node
from scheduler.controllers.requests import NodeRequest


def node_ready(document: dict[str, Any]) -> bool:
    try:
        return Node.model_validate(document).ready
    except ValueError:
        return True


def node_request_for_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[NodeRequest]:
    """A Node that went away, or went from Ready to NotReady."""
    if old is None:
        return []
    name = str((old.get("metadata") or {}).get("name"))
    if new is None or (node_ready(old) and not node_ready(new)):
        return [NodeRequest(name)]
    return []

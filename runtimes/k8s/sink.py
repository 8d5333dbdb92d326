"""``ObjectSink``: where a source of Kubernetes objects delivers them, written once for every layer.

A source — a directory of YAML (``--objects DIR``), an informer watching a cluster — calls
``apply`` for every object it sees (a plain dict, as the API server serves it), ``delete`` when
one goes away and ``mark_loaded`` once its first full listing is in. The webhook's object cache
and the controllers' cluster cache are sinks; ``scheduler.kube`` informers and the YAML loader
feed them. It lives here, in the bottom layer, so that both ``scheduler`` and ``webhooks`` name
the same protocol.
"""

from __future__ import annotations

from typing import Any, Protocol


class ObjectSink(Protocol):
    """What a source of objects calls: the YAML loader and the Kubernetes informers alike."""

    def apply(self, document: dict[str, Any]) -> None: ...

    def delete(self, kind: str, name: str, namespace: str | None = None) -> None: ...

    def mark_loaded(self) -> None: ...

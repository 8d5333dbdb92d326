"""Prometheus metrics of the webhook: requests and latency per endpoint and verdict.

Each app gets its own ``CollectorRegistry`` so several servers (tests, the benchmark) never
share or clash over global collectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

VERDICTS = ("allowed", "denied", "timeout", "error")
# Admission calls must finish far inside the API server's timeoutSeconds; resolve the fast end.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


@dataclass
class WebhookMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.requests = Counter(
            "trainyard_webhook_requests",
            "Admission requests handled, by endpoint and verdict (allowed, denied, timeout, error).",
            ("endpoint", "verdict"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "trainyard_webhook_request_duration_seconds",
            "Time from reading a request to writing its response, by endpoint and verdict.",
            ("endpoint", "verdict"),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )

        # (endpoint, verdict) -> its counter and histogram children; ``labels()`` is a locked
        # lookup that costs more than the observation itself, on every request.
        self._children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    def observe(self, endpoint: str, verdict: str, seconds: float) -> None:
        children = self._children.get((endpoint, verdict))
        if children is None:
            children = (self.requests.labels(endpoint, verdict), self.latency.labels(endpoint, verdict))
            self._children[(endpoint, verdict)] = children
        children[0].inc()
        children[1].observe(seconds)

    def exposition(self) -> tuple[bytes, str]:
        """The text exposition format and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

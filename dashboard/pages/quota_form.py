"""Changing a ClusterQueue's quota from the Queues page, when the dashboard was started with writes on.

The change goes through ``scheduler.queues.plan_quota_change``, as `trainyard queues set-quota`
does: Kueue's webhook rules check the new ClusterQueue, the queues are rehearsed with it, and
the page shows the before/after and its effect on pending and admitted workloads. Only a second,
confirming submit applies it (the CLI's ``--yes``), through the writer the CLI handed in.
"""

from __future__ import annotations

from collections.abc import Mapping

from dashboard.html import Html, tag
from scheduler.queues import (
    ClusterQueueSummary,
    QueueState,
    QuotaChange,
    QuotaChangeError,
    QuotaPlan,
    plan_quota_change,
)

FIELDS = (("flavor", "flavor"), ("resource", "resource"), ("nominal", "nominal quota"))
OPTIONAL = (("borrowing_limit", "borrowing limit"), ("lending_limit", "lending limit"))


def quota_section(summary: ClusterQueueSummary, enabled: bool) -> Html:
    """The form for one of the queue's quotas (its first flavor and resource filled in), or why there is none."""
    if not enabled:
        return tag(
            "p",
            "Read-only: start the dashboard with --allow-set-quota to change quotas here "
            f"(or run trainyard queues set-quota {summary.name} ...).",
            class_="muted",
            id="quota",
        )
    first = summary.resources[0] if summary.resources else None
    filled = {"flavor": first.flavor if first else "", "resource": first.resource if first else ""}
    inputs = [
        tag("label", label, tag("input", name=name, value=filled.get(name, ""), required=True))
        for name, label in FIELDS
    ] + [tag("label", label, tag("input", name=name, placeholder="unchanged")) for name, label in OPTIONAL]
    return tag(
        "form",
        tag("h2", f"Change a quota of {summary.name}"),
        inputs,
        tag("button", "check the change"),
        method="post",
        action=f"/queues/{summary.name}/quota",
        class_="quota",
        id="quota",
    )


def change_from(cluster_queue: str, form: Mapping[str, str]) -> QuotaChange:
    def optional(name: str) -> str | None:
        return form.get(name, "").strip() or None

    return QuotaChange(
        cluster_queue,
        form.get("flavor", "").strip(),
        form.get("resource", "").strip(),
        form.get("nominal", "").strip(),
        optional("borrowing_limit"),
        optional("lending_limit"),
    )


def plan_view(plan: QuotaPlan, change: QuotaChange) -> Html:
    rows = [
        tag("tr", tag("td", key), tag("td", plan.before.get(key) or "–"), tag("td", plan.after.get(key) or "–"))
        for key in ("nominalQuota", "borrowingLimit", "lendingLimit")
    ]
    parts = [tag("table", tag("tr", tag("th", "field"), tag("th", "now"), tag("th", "after")), rows, class_="diff")]
    effect = plan.effect
    if effect is not None:
        parts.append(tag("p", f"pending workloads: {effect.pending_before} → {effect.pending_after}"))
        for label, keys in (
            ("would be admitted", effect.admitted),
            ("would be preempted", effect.preempted),
            ("would start borrowing (preemptible by reclaim)", effect.newly_borrowing),
        ):
            if keys:
                parts.append(tag("p", f"{label}: ", ", ".join(keys)))
    hidden = [
        tag("input", type="hidden", name=name, value=value)
        for name, value in (
            ("flavor", change.flavor),
            ("resource", change.resource),
            ("nominal", change.nominal),
            ("borrowing_limit", change.borrowing_limit or ""),
            ("lending_limit", change.lending_limit or ""),
            ("confirm", "yes"),
        )
    ]
    confirm = tag("form", hidden, tag("button", "apply"), method="post", action=f"/queues/{change.cluster_queue}/quota")
    return tag("div", parts, confirm if plan.changed else tag("p", "nothing to change"), class_="plan")


def check_change(state: QueueState, change: QuotaChange) -> tuple[QuotaPlan | None, str | None]:
    """The plan, or why the change cannot be made (in the webhook's words)."""
    try:
        plan = plan_quota_change(state, change)
    except QuotaChangeError as error:
        return None, str(error)
    if plan.errors:
        return None, f"ClusterQueue {change.cluster_queue} would be refused: " + "; ".join(map(str, plan.errors))
    return plan, None

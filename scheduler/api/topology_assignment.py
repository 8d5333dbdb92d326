"""Kueue's ``podSetAssignments[].topologyAssignment``: the compressed wire form, both ways.

Kueue v1beta2 stores a placement as ``levels`` (node label keys, highest level first) and
``slices`` (apis/kueue/v1beta2/workload_types.go, TopologyAssignmentSlice); each slice covers
``domainCount`` leaf domains and gives, per level in ``valuesPerLevel``, either
``{universal: VALUE}`` (every domain of the slice has it) or ``{individual: {prefix, suffix,
roots}}`` (domain i's value is prefix + roots[i] + suffix), and the pods per domain as
``podCounts: {universal: N}`` or ``podCounts: {individual: [N, ...]}`` (Kueue v0.17's CRD, and
its encoder in pkg/util/tas/tas_assignment.go). Kueue v1beta1 stored the plain
``domains[]{values, count}`` list.
When the Topology's lowest level is ``kubernetes.io/hostname`` only that level is stored (the
hostname names the node; the higher levels add nothing).

The encoder writes what Kueue's own encoder writes (one slice, the longest common prefix and
suffix per level, a universal value when all values agree, a universal count when all counts
agree), so kubectl and Kueue's tools read trainyard's Workloads as their own. Every reader and
writer of the field goes through this module.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

HOSTNAME_LABEL = "kubernetes.io/hostname"


class TopologyAssignmentError(ValueError):
    """A topologyAssignment that is not in Kueue's shape; the message names the field."""


@dataclass(frozen=True)
class TopologyDomain:
    """One leaf domain: its value at every stored level, and how many pods it holds."""

    values: list[str]
    count: int


@dataclass(frozen=True)
class TopologyAssignment:
    """A pod set's placement: leaf domains in rank order (Kueue fills ranks domain by domain)."""

    levels: list[str]
    domains: list[TopologyDomain] = field(default_factory=list)

    @property
    def pod_count(self) -> int:
        return sum(domain.count for domain in self.domains)

    def pod_nodes(self) -> list[str]:
        """The node of each pod, by rank: domain i's hostname repeated ``count`` times.

        Only meaningful when the lowest stored level is the hostname; otherwise a domain is a
        group of nodes and no single node belongs to a rank.
        """
        if not self.levels or self.levels[-1] != HOSTNAME_LABEL:
            raise TopologyAssignmentError(
                f"topologyAssignment.levels {self.levels} does not end with {HOSTNAME_LABEL!r}: "
                "pods map to domains, not to nodes (use node_selector_for_rank)"
            )
        nodes: list[str] = []
        for domain in self.domains:
            nodes.extend([domain.values[-1]] * domain.count)
        return nodes

    def node_selector_for_rank(self, rank: int) -> dict[str, str] | None:
        """The node selector (level label → value) of the domain holding pod ``rank``, or None
        when the assignment has fewer pods than ``rank + 1``."""
        if rank < 0:
            return None
        remaining = rank
        for domain in self.domains:
            if remaining < domain.count:
                return dict(zip(self.levels, domain.values, strict=True))
            remaining -= domain.count
        return None

    def to_dict(self) -> dict[str, Any]:
        return encode_topology_assignment(self.levels, [(d.values, d.count) for d in self.domains])


def stored_levels(
    topology_levels: Sequence[str], domains: Sequence[tuple[Sequence[str], int]]
) -> tuple[list[str], list[tuple[list[str], int]]]:
    """What Kueue stores for a placement over all of a Topology's levels: only the hostname
    level when the lowest level is the hostname, every level otherwise."""
    levels = list(topology_levels)
    if levels and levels[-1] == HOSTNAME_LABEL:
        return [HOSTNAME_LABEL], [([list(values)[-1]], count) for values, count in domains]
    return levels, [(list(values), count) for values, count in domains]


def encode_topology_assignment(levels: Sequence[str], domains: Sequence[tuple[Sequence[str], int]]) -> dict[str, Any]:
    """Kueue v1beta2's compressed form of ``domains`` (values per level, pod count), kept in
    the given (rank) order, as one slice."""
    level_list = [str(level) for level in levels]
    if not level_list:
        raise TopologyAssignmentError("topologyAssignment.levels is empty: at least one level label is needed")
    for index, (values, count) in enumerate(domains):
        if len(values) != len(level_list):
            raise TopologyAssignmentError(
                f"topologyAssignment domain {index} has {len(values)} values for {len(level_list)} levels {level_list}"
            )
        if count < 0:
            raise TopologyAssignmentError(f"topologyAssignment domain {index} has a negative pod count {count}")
    if not domains:
        return {"levels": level_list, "slices": []}
    values_per_level = [_compact_values([values[i] for values, _ in domains]) for i in range(len(level_list))]
    counts = [int(count) for _, count in domains]
    slice_: dict[str, Any] = {"domainCount": len(domains), "valuesPerLevel": values_per_level}
    slice_["podCounts"] = {"universal": counts[0]} if all(c == counts[0] for c in counts) else {"individual": counts}
    return {"levels": level_list, "slices": [slice_]}


def _compact_values(values: Sequence[str]) -> dict[str, Any]:
    """One level's values: ``universal`` when all agree, else the common prefix and suffix
    (never overlapping: the prefix gives way, as in Kueue) and the roots between them."""
    prefix = values[0]
    suffix = values[0]
    shortest = min(len(v) for v in values)
    longest = max(len(v) for v in values)
    for value in values[1:]:
        prefix = _common_prefix(prefix, value)
        suffix = _common_suffix(suffix, value)
    if len(prefix) == longest:
        return {"universal": values[0]}
    if len(prefix) + len(suffix) > shortest:
        prefix = prefix[: shortest - len(suffix)]
    individual: dict[str, Any] = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    individual["roots"] = [v[len(prefix) : len(v) - len(suffix)] for v in values]
    return {"individual": individual}


def _common_prefix(a: str, b: str) -> str:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return a[:i]


def _common_suffix(a: str, b: str) -> str:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[len(a) - 1 - i] == b[len(b) - 1 - i]:
        i += 1
    return a[len(a) - i :]


def decode_topology_assignment(doc: Mapping[str, Any]) -> TopologyAssignment:
    """The domains of a stored topologyAssignment, in rank order: v1beta2 ``slices`` (each slice's
    domains in turn) or v1beta1 ``domains``. Raises TopologyAssignmentError naming the field."""
    if not isinstance(doc, Mapping):
        raise TopologyAssignmentError(f"topologyAssignment must be an object, got {type(doc).__name__}")
    levels = doc.get("levels")
    if not isinstance(levels, list) or not levels or not all(isinstance(level, str) for level in levels):
        raise TopologyAssignmentError(
            f"topologyAssignment.levels must be a non-empty list of label keys, got {levels!r}"
        )
    if "slices" in doc and doc["slices"] is not None:
        return TopologyAssignment(levels=list(levels), domains=_decode_slices(doc["slices"], len(levels)))
    if "domains" in doc and doc["domains"] is not None:
        return TopologyAssignment(levels=list(levels), domains=_decode_v1beta1_domains(doc["domains"], len(levels)))
    return TopologyAssignment(levels=list(levels), domains=[])


def _objects(raw: Any, list_name: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each entry of the list ``topologyAssignment.<list_name>`` with its path, refusing a non-list or a non-object."""
    if not isinstance(raw, list):
        raise TopologyAssignmentError(f"topologyAssignment.{list_name} must be a list, got {type(raw).__name__}")
    for index, entry in enumerate(raw):
        where = f"topologyAssignment.{list_name}[{index}]"
        if not isinstance(entry, Mapping):
            raise TopologyAssignmentError(f"{where} must be an object")
        yield where, entry


def _decode_v1beta1_domains(raw: Any, level_count: int) -> list[TopologyDomain]:
    domains: list[TopologyDomain] = []
    for where, entry in _objects(raw, "domains"):
        values = entry.get("values")
        if not isinstance(values, list) or len(values) != level_count or not all(isinstance(v, str) for v in values):
            raise TopologyAssignmentError(
                f"{where}.values must list one string per level ({level_count}), got {values!r}"
            )
        domains.append(TopologyDomain(values=list(values), count=_count(entry.get("count"), f"{where}.count")))
    return domains


def _decode_slices(raw: Any, level_count: int) -> list[TopologyDomain]:
    domains: list[TopologyDomain] = []
    for where, entry in _objects(raw, "slices"):
        domain_count = entry.get("domainCount")
        if not isinstance(domain_count, int) or isinstance(domain_count, bool) or domain_count < 1:
            raise TopologyAssignmentError(f"{where}.domainCount must be an integer of at least 1, got {domain_count!r}")
        per_level = entry.get("valuesPerLevel")
        if not isinstance(per_level, list) or len(per_level) != level_count:
            raise TopologyAssignmentError(
                f"{where}.valuesPerLevel must have one entry per level ({level_count}), got {per_level!r}"
            )
        columns = [
            _level_values(level, domain_count, f"{where}.valuesPerLevel[{i}]") for i, level in enumerate(per_level)
        ]
        counts = _pod_counts(entry, domain_count, where)
        for d in range(domain_count):
            domains.append(TopologyDomain(values=[column[d] for column in columns], count=counts[d]))
    return domains


def _level_values(raw: Any, domain_count: int, where: str) -> list[str]:
    if not isinstance(raw, Mapping):
        raise TopologyAssignmentError(f"{where} must be an object")
    universal = raw.get("universal")
    individual = raw.get("individual")
    if (universal is None) == (individual is None):
        raise TopologyAssignmentError(f"{where}: exactly one of universal, individual must be set")
    if universal is not None:
        if not isinstance(universal, str):
            raise TopologyAssignmentError(f"{where}.universal must be a string, got {universal!r}")
        return [universal] * domain_count
    if not isinstance(individual, Mapping):
        raise TopologyAssignmentError(f"{where}.individual must be an object")
    prefix = individual.get("prefix") or ""
    suffix = individual.get("suffix") or ""
    roots = individual.get("roots")
    if not isinstance(prefix, str) or not isinstance(suffix, str):
        raise TopologyAssignmentError(f"{where}.individual.prefix and .suffix must be strings")
    if not isinstance(roots, list) or len(roots) != domain_count or not all(isinstance(r, str) for r in roots):
        raise TopologyAssignmentError(
            f"{where}.individual.roots must list domainCount ({domain_count}) strings, got {roots!r}"
        )
    return [prefix + root + suffix for root in roots]


def _pod_counts(slice_: Mapping[str, Any], domain_count: int, where: str) -> list[int]:
    counts = slice_.get("podCounts")
    if not isinstance(counts, Mapping):
        raise TopologyAssignmentError(f"{where}.podCounts must be an object with universal or individual")
    universal = counts.get("universal")
    individual = counts.get("individual")
    if (universal is None) == (individual is None):
        raise TopologyAssignmentError(f"{where}.podCounts: exactly one of universal, individual must be set")
    if universal is not None:
        return [_count(universal, f"{where}.podCounts.universal")] * domain_count
    if not isinstance(individual, list) or len(individual) != domain_count:
        raise TopologyAssignmentError(
            f"{where}.podCounts.individual must list domainCount ({domain_count}) counts, got {individual!r}"
        )
    return [_count(value, f"{where}.podCounts.individual[{i}]") for i, value in enumerate(individual)]


def _count(raw: Any, where: str) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool) or raw < 0:
        raise TopologyAssignmentError(f"{where} must be a non-negative integer, got {raw!r}")
    return raw

"""Kubernetes core types (quantities, metadata, pods, nodes) that every trainyard package builds on."""

from runtimes.k8s.meta import KubeModel, LabelSelector, ObjectMeta, Resource
from runtimes.k8s.quantity import Quantity, QuantityError, format_amount, parse_quantity, to_amount

__all__ = [
    "KubeModel",
    "LabelSelector",
    "ObjectMeta",
    "Quantity",
    "QuantityError",
    "Resource",
    "format_amount",
    "parse_quantity",
    "to_amount",
]

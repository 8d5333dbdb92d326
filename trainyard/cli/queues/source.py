"""Where `trainyard queues` reads the queues from: YAML files (``--objects``) or a cluster (``--kubeconfig``).

Shared by every ``queues`` subcommand, ``what-if`` included, so it sits below both
``trainyard.cli.queues.command`` and ``trainyard.cli.queues.what_if``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.cli.errors import UserError

if TYPE_CHECKING:
    from runtimes.k8s.meta import Resource
    from scheduler.api.kueue import Workload


@dataclass
class Loaded:
    objects: list[Resource]
    workloads: list[Workload]
    namespaces: dict[str, dict[str, str]]
    resource_versions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def load_source(args: argparse.Namespace) -> Loaded:
    if (args.objects is None) == (args.kubeconfig is None):
        raise UserError("name where the queues are: --objects DIR (YAML files) or --kubeconfig PATH (a cluster)")
    if args.objects is not None:
        return _load_files(args.objects, strict=bool(getattr(args, "strict", False)))
    from trainyard.cli.queues.cluster_side import read_cluster_sync

    cluster = read_cluster_sync(args.kubeconfig, args.context)
    return Loaded(cluster.objects, cluster.workloads, cluster.namespaces, cluster.resource_versions, cluster.notes)


def _load_files(paths: list[Path], *, strict: bool) -> Loaded:
    """The objects in ``paths`` through the one validation path; unknown fields printed as warnings.

    As the API server's field validation: a misspelt field (``borowingLimit``) is a warning naming
    file, line, object and the nearest known field; ``strict`` makes it an error (exit 2).
    """
    import sys

    from runtimes.k8s.documents import DocumentError
    from scheduler.api.loading import InputError, load_kueue_objects

    try:
        loaded = load_kueue_objects(paths, strict=strict)
    except DocumentError as error:
        for line in error.warnings if isinstance(error, InputError) else []:
            print(line, file=sys.stderr)
        raise UserError(str(error)) from None
    for line in loaded.warnings:
        print(line, file=sys.stderr)
    notes = [f"skipped {s}: not a Kueue object, Node or Namespace" for s in loaded.skipped]
    return Loaded(loaded.objects, loaded.workloads, loaded.namespaces, notes=notes)

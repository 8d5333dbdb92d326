"""`trainyard render TRAINJOB.yaml [--runtime FILE]`: the objects a TrainJob becomes, as YAML.

The runtime named in ``spec.runtimeRef`` is looked up in the TrainJob's own file, then in
``--runtime`` files, then among the built-in runtimes (``manifests/runtimes/``; see
``runtimes.loading.builtin_runtimes_dir``). ``--placement`` writes a gang placement into the
JobSet, as the controller does after admission.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.cli.errors import UserError

if TYPE_CHECKING:
    from runtimes.api.trainer import AnyTrainingRuntime, TrainJob
    from runtimes.pod_placement import PodPlacement


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trainjob", metavar="TRAINJOB.yaml", help="file holding one TrainJob")
    parser.add_argument(
        "--runtime",
        metavar="FILE",
        action="append",
        default=[],
        help="file(s) with TrainingRuntimes/ClusterTrainingRuntimes (default: the built-in runtimes)",
    )
    parser.add_argument(
        "--placement",
        metavar="FILE",
        help="YAML {nodes: {<replicated job>: [node per pod index]}, domain: {<label>: <value>}}",
    )
    parser.add_argument("--strict", action="store_true", help="unknown fields are errors, not warnings")


def run(args: argparse.Namespace) -> int:
    from runtimes.api.trainer import TrainJob
    from runtimes.errors import RenderError
    from runtimes.loading import LoadError, dump_documents
    from runtimes.render import render_trainjob
    from trainyard.cli.inputs import missing_runtime, one_trainjob, trainjob_refusal

    read, inline_runtimes = one_trainjob(args.trainjob, strict=args.strict)
    trainjob = read.obj
    assert isinstance(trainjob, TrainJob)
    try:
        runtime = resolve_runtime(trainjob, args.trainjob, args.runtime, inline_runtimes, strict=args.strict)
    except UserError as error:
        if not str(error).startswith(f"{args.trainjob}: spec.runtimeRef: "):
            raise
        raise missing_runtime(read, str(error).split(": ", 2)[2]) from None
    try:
        placement = load_placement(args.placement) if args.placement else None
        rendered = render_trainjob(trainjob, runtime, placement)
    except LoadError as error:
        raise UserError(str(error)) from None
    except RenderError as error:
        if error.subject.startswith("TrainJob"):
            raise trainjob_refusal(read, error.errors) from None
        raise UserError(f"{read.where('spec.runtimeRef')}: {error}") from None
    sys.stdout.write(dump_documents(rendered.objects()))
    return 0


def resolve_runtime(
    trainjob: TrainJob,
    trainjob_path: str,
    runtime_files: list[str],
    inline: list[AnyTrainingRuntime] | None = None,
    *,
    strict: bool = False,
) -> AnyTrainingRuntime:
    """The runtime ``trainjob`` names, from its own file, ``--runtime`` files or the built-ins."""
    from runtimes.loading import builtin_runtimes_dir, find_runtime, load_builtin_runtimes
    from trainyard.cli.inputs import read_inputs, runtimes_of

    ref = trainjob.spec.runtime_ref
    kind, name = ref.effective_kind, ref.name
    searched: list[str] = [trainjob_path]
    found = find_runtime(list(inline or []), name, kind)
    for path in runtime_files:
        if found is None:
            searched.append(path)
            found = find_runtime(runtimes_of(read_inputs([path], strict=strict)), name, kind)
    if found is None and not runtime_files:
        directory = builtin_runtimes_dir()
        searched.append(str(directory) if directory else "built-in runtimes (none found)")
        builtins = load_builtin_runtimes(directory)
        found = find_runtime(builtins, name, kind)
        if found is None:
            available = ", ".join(rt.metadata.name for rt in builtins) or "(none)"
            raise UserError(
                f"{trainjob_path}: spec.runtimeRef: {kind} {name!r} not found in {', '.join(searched)}; "
                f"built-in runtimes: {available}; pass --runtime FILE for another one"
            )
    if found is None:
        raise UserError(f"{trainjob_path}: spec.runtimeRef: {kind} {name!r} not found in {', '.join(searched)}")
    return found


def load_placement(path: str) -> PodPlacement:
    import yaml

    from runtimes.pod_placement import PodPlacement

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise UserError(f"{path}: cannot read placement: {error}") from None
    nodes = data.get("nodes") if isinstance(data, dict) else None
    domain = (data.get("domain") or {}) if isinstance(data, dict) else {}
    if not isinstance(nodes, dict) or not all(isinstance(v, list) for v in nodes.values()):
        raise UserError(f"{path}: nodes: must map each replicated job name to a list of node names")
    if not isinstance(domain, dict):
        raise UserError(f"{path}: domain: must map node labels to values")
    return PodPlacement(
        nodes={str(job): [str(node) for node in names] for job, names in nodes.items()},
        domain={str(key): str(value) for key, value in domain.items()},
    )

"""`trainyard simulate --trace DIR --mode saturation`: the openb trace replayed as the FGD paper does."""

from __future__ import annotations

import argparse
import json

from trainyard.cli.errors import UserError


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from simulations.placement_policies import POLICIES
    from simulations.saturation.replay import run_saturation
    from simulations.saturation.report import paper_table, saturation_table, write_saturation_plot

    if args.trace is None or not args.trace.is_dir():
        raise UserError(
            "--mode saturation replays the openb trace: give --trace DIR, the directory holding "
            "openb_node_list_gpu_node.csv and openb_pod_list_default.csv"
        )
    if args.backend != "sim":
        raise UserError("--mode saturation runs in the simulator only (--backend sim)")
    if args.compare_policies:
        raise UserError(
            "--compare-policies runs timeline scenarios; with --mode saturation name the policies in --compare"
        )
    policies = args.compare or list(POLICIES)
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise UserError(f"--compare: {unknown[0]!r} is not a placement policy; use {', '.join(POLICIES)}")
    report = run_saturation(args.trace, policies, args.seed, "sharing" if args.gpu_sharing else "whole")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "saturation.json").write_text(json.dumps(report, indent=2) + "\n")
        write_saturation_plot(report, args.out / "saturation.png")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        console = Console()
        console.print(saturation_table(report))
        for row in report["policies"]:
            kinds = ", ".join(f"{count:,} {kind}" for kind, count in row["refusals"].items()) or "none"
            console.print(f"{row['policy']}: {row['refused']:,} pod(s) refused ({kinds})")
        console.print(
            "refused: gpus = no node that could hold the pod had its GPUs free; cpu-memory = nodes had the GPUs "
            "free but not the CPU and memory besides; never-fits = no node holds it even empty. Every refused "
            "pod and why: --json, under refused_pods"
        )
        beside = paper_table(report)
        if beside is not None:
            console.print(beside)
        if args.out is not None:
            console.print(f"wrote {args.out}/saturation.json and saturation.png")
    return 0

"""Build the pinned real components from their Go modules into the cache (``make cluster-tools``).

``python -m sandbox.real.build`` builds every component of ``versions.toml`` that the cache
lacks, and copies the CRDs each module ships beside its binaries. Each component is built in a
folder of its own holding a generated ``go.mod`` that requires the module at its pinned version
(k8s.io/kubernetes with its staging modules replaced by their matching releases, since the
module's own ``./staging`` replaces do not apply to a dependent) and a ``tools.go`` naming the
packages to build; ``go mod tidy`` resolves the rest from the Go module proxy. A second run is a
no-op; a changed pin builds a new folder. Builds take a lock, so concurrent ``make test`` runs
wait for one another instead of building twice.

Without Go on the PATH it says so and exits 0 (the real test tier then skips with one line),
unless ``--require`` is given. Users who have the binaries already point at them instead
(``--binaries DIR`` on the commands, or ``KUBEBUILDER_ASSETS``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from .components import STAMP, Component, ComponentSet, cache_root

# Version stamps the binaries print (kube-apiserver's /version, `kueue --version`, ...), as
# their own release builds set them.
_VERSION_FLAGS = {
    "k8s.io/kubernetes": [
        "k8s.io/component-base/version.gitVersion={version}",
        "k8s.io/component-base/version.gitMajor={major}",
        "k8s.io/component-base/version.gitMinor={minor}",
        "k8s.io/component-base/version.gitTreeState=clean",
        "k8s.io/client-go/pkg/version.gitVersion={version}",
    ],
    "sigs.k8s.io/kwok": ["sigs.k8s.io/kwok/pkg/consts.Version={version}"],
    "sigs.k8s.io/jobset": ["sigs.k8s.io/jobset/pkg/version.GitVersion={version}"],
    "sigs.k8s.io/kueue": ["sigs.k8s.io/kueue/pkg/version.GitVersion={version}"],
    "go.etcd.io/etcd/server/v3": [],
}


class BuildError(Exception):
    """A component could not be built; the message says which and the tail of Go's output."""


def go_available() -> bool:
    return shutil.which("go") is not None


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-mod=mod")
    env.setdefault("CGO_ENABLED", "0")
    env.setdefault("GOTOOLCHAIN", "local")
    return env


def _run_go(args: list[str], cwd: Path, component: Component) -> str:
    result = subprocess.run(["go", *args], cwd=cwd, env=_go_env(), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
        raise BuildError(f"{component.name} {component.version}: `go {' '.join(args)}` failed:\n{tail}")
    return result.stdout


def go_mod_text(component: Component) -> str:
    lines = [
        f"module trainyard.local/cluster-tools/{component.name}",
        "",
        "go 1.25.0",
        "",
        f"require {component.module} {component.version}",
    ]
    if component.staging_version is not None:
        lines.append("")
        for staging in _staging_modules(component):
            lines.append(f"replace {staging} => {staging} {component.staging_version}")
    return "\n".join(lines) + "\n"


def _staging_modules(component: Component) -> list[str]:
    """The modules k8s.io/kubernetes replaces with ./staging, read from its own go.mod."""
    info = _download(component)
    mod_file = Path(info["GoMod"]).read_text()
    return sorted(
        {
            line.split()[0]
            for line in mod_file.splitlines()
            if "=> ./staging/" in line and line.strip().startswith("k8s.io/")
        }
    )


def _download(component: Component) -> dict[str, str]:
    output = subprocess.run(
        ["go", "mod", "download", "-json", f"{component.module}@{component.version}"],
        env=_go_env(),
        capture_output=True,
        text=True,
        check=False,
        cwd=cache_root(),
    )
    try:
        info: dict[str, str] = json.loads(output.stdout)
    except json.JSONDecodeError:
        raise BuildError(f"{component.name}: go mod download printed no JSON: {output.stderr.strip()}") from None
    if "Error" in info:
        raise BuildError(
            f"{component.name} {component.version}: not available from the Go module proxy: {info['Error']}"
        )
    return info


def tools_go_text(component: Component) -> str:
    imports = "\n".join(f'\t_ "{_package(component, package)}"' for package in component.binaries)
    return f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"


def _package(component: Component, package: str) -> str:
    return component.module if package == "." else f"{component.module}/{package}"


def _ldflags(component: Component) -> str:
    version = component.version
    major, minor = version.lstrip("v").split(".")[:2]
    stamps = [
        "-X " + flag.format(version=version, major=major, minor=minor)
        for flag in _VERSION_FLAGS.get(component.module, [])
    ]
    return " ".join(["-s", "-w", *stamps])


def build_component(component: Component) -> float:
    """Build one component into its cache folder; the seconds it took."""
    started = time.monotonic()
    folder = component.folder
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / "go.mod").write_text(go_mod_text(component))
    if component.binaries:
        (staging / "tools.go").write_text(tools_go_text(component))
        _run_go(["mod", "tidy"], staging, component)
        (staging / "bin").mkdir()
        for package, name in zip(component.binaries, component.binary_names(), strict=True):
            _run_go(
                [
                    "build",
                    "-trimpath",
                    f"-ldflags={_ldflags(component)}",
                    "-o",
                    f"bin/{name}",
                    _package(component, package),
                ],
                staging,
                component,
            )
    _copy_files(component, component.crds, staging / "crds")
    _copy_files(component, component.webhooks, staging / "webhooks")
    seconds = time.monotonic() - started
    stamp = {
        "module": component.module,
        "version": component.version,
        "binaries": component.binary_names(),
        "build_seconds": round(seconds, 1),
        "go": _run_go(["env", "GOVERSION"], staging, component).strip(),
    }
    (staging / STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return seconds


def _copy_files(component: Component, patterns: tuple[str, ...], target: Path) -> None:
    """Copy the files matching ``patterns`` from the module as it ships (outside the work tree)."""
    target.mkdir(parents=True, exist_ok=True)
    if not patterns:
        return
    module_dir = Path(_download(component)["Dir"])
    found = 0
    for pattern in patterns:
        for path in sorted(module_dir.glob(pattern)):
            if path.name == "kustomization.yaml":
                continue
            shutil.copyfile(path, target / path.name)
            found += 1
    if not found:
        raise BuildError(f"{component.name} {component.version}: no file matches {list(patterns)} in the module")


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_missing(names: list[str] | None = None, *, out: TextIO = sys.stderr) -> dict[str, float]:
    """Build each named (default: every) component the cache lacks; seconds per component built."""
    components = ComponentSet.load()
    chosen = [components[name] for name in names] if names else list(components)
    built: dict[str, float] = {}
    with build_lock():
        for component in chosen:
            if component.is_built():
                continue
            print(
                f"cluster-tools: building {component.name} {component.version} from {component.module} "
                f"into {component.folder} ...",
                file=out,
                flush=True,
            )
            built[component.name] = build_component(component)
            print(f"cluster-tools: {component.name} built in {built[component.name]:.0f} s", file=out, flush=True)
    return built


def _folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.real.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("components", nargs="*", help="only these (default: every component of versions.toml)")
    parser.add_argument("--require", action="store_true", help="fail (exit 1) when Go is missing")
    parser.add_argument("--status", action="store_true", help="print what is built and where; build nothing")
    args = parser.parse_args(argv)
    components = ComponentSet.load()
    unknown = [name for name in args.components if name not in components.components]
    if unknown:
        print(f"cluster-tools: unknown component(s) {unknown}; known: {sorted(components.components)}", file=sys.stderr)
        return 2
    if args.status:
        for component in components:
            state = "built" if component.is_built() else "missing"
            print(f"{component.name:<11} {component.version:<9} {state:<8} {component.folder}")
        return 0
    if not go_available():
        print(
            "cluster-tools: no `go` on the PATH: the real components are not built and the real test tier "
            "will skip (install Go, or point KUBEBUILDER_ASSETS at existing binaries)",
            file=sys.stderr,
        )
        return 1 if args.require else 0
    started = time.monotonic()
    try:
        built = build_missing(args.components or None)
    except BuildError as error:
        print(f"cluster-tools: {error}", file=sys.stderr)
        return 1
    if built:
        size = _folder_bytes(cache_root()) / 2**20
        print(
            f"cluster-tools: built {', '.join(built)} in {time.monotonic() - started:.0f} s; "
            f"the cache at {cache_root()} holds {size:.0f} MiB",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

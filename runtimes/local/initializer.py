"""The local stand-in for Trainer's dataset and model initializer containers.

Run as ``python -m runtimes.local.initializer`` with the initializer container's env: it loads
``STORAGE_URI`` into ``TRAINYARD_INITIALIZER_TARGET`` (the job workspace's ``dataset/`` or
``model/``, where the cluster mounts ``/workspace``).

- ``file://PATH`` and plain paths are copied (a directory's contents, or one file).
- ``hf://`` and ``s3://`` need the network: the endpoint (``HF_ENDPOINT`` /
  ``AWS_ENDPOINT_URL`` when set) is probed first with a short timeout, DNS included, so an
  offline machine gets a clear message in seconds instead of a hang. When it is reachable the
  download uses ``huggingface_hub`` / ``boto3`` if installed.

Exit codes: 0 loaded, 2 bad input (unknown scheme, missing path), 3 offline or unreachable,
4 a needed client library is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

TARGET_ENV = "TRAINYARD_INITIALIZER_TARGET"
PROBE_TIMEOUT_ENV = "TRAINYARD_NETWORK_PROBE_TIMEOUT"
EXIT_BAD_INPUT = 2
EXIT_OFFLINE = 3
EXIT_MISSING_CLIENT = 4


class InitializerError(Exception):
    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def copy_local(source: Path, target: Path) -> int:
    """Copy a file or a directory's contents into ``target``; returns the number of files copied."""
    if not source.exists():
        raise InitializerError(f"STORAGE_URI path {source} does not exist", EXIT_BAD_INPUT)
    target.mkdir(parents=True, exist_ok=True)
    if source.is_file():
        shutil.copy2(source, target / source.name)
        return 1
    shutil.copytree(source, target, dirs_exist_ok=True)
    return sum(1 for p in source.rglob("*") if p.is_file())


def probe(url: str, timeout: float) -> None:
    """Raise InitializerError(EXIT_OFFLINE) unless a TCP connection to ``url``'s host opens in time."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    outcome: list[BaseException | None] = []

    def connect() -> None:
        try:
            # getaddrinfo inside create_connection ignores the socket timeout: hence the thread.
            with socket.create_connection((host, port), timeout=timeout):
                outcome.append(None)
        except OSError as error:
            outcome.append(error)

    worker = threading.Thread(target=connect, daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise InitializerError(f"cannot reach {url} within {timeout:g}s (offline?)", EXIT_OFFLINE)
    if outcome[0] is not None:
        raise InitializerError(f"cannot reach {url} (offline?): {outcome[0]}", EXIT_OFFLINE)


def _probe_for(uri: str, endpoint: str, fix: str, timeout: float) -> None:
    """Fail fast, naming ``uri`` and the fix, when ``endpoint`` cannot be reached."""
    try:
        probe(endpoint, timeout)
    except InitializerError as error:
        raise InitializerError(f"{uri}: {error}; {fix}", error.exit_code) from None


def _remote(uri: str, target: Path, timeout: float) -> str:
    parsed = urlparse(uri)
    if parsed.scheme == "hf":
        fix = "download it on a machine with network access and use a file:// STORAGE_URI"
        _probe_for(uri, os.environ.get("HF_ENDPOINT", "https://huggingface.co"), fix, timeout)
        try:
            from huggingface_hub import snapshot_download  # type: ignore[import-not-found]
        except ImportError:
            raise InitializerError(
                f"{uri}: the huggingface_hub package is not installed; {fix}", EXIT_MISSING_CLIENT
            ) from None
        repo_type = "dataset" if target.name == "dataset" else "model"
        snapshot_download(f"{parsed.netloc}{parsed.path}", repo_type=repo_type, local_dir=str(target))
        return f"downloaded {uri}"
    if parsed.scheme == "s3":
        fix = "copy the objects locally and use a file:// STORAGE_URI"
        _probe_for(uri, os.environ.get("AWS_ENDPOINT_URL", "https://s3.amazonaws.com"), fix, timeout)
        try:
            import boto3  # type: ignore[import-not-found]
        except ImportError:
            raise InitializerError(f"{uri}: the boto3 package is not installed; {fix}", EXIT_MISSING_CLIENT) from None
        bucket = boto3.resource("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL")).Bucket(parsed.netloc)
        prefix = parsed.path.lstrip("/")
        count = 0
        for obj in bucket.objects.filter(Prefix=prefix):
            destination = target / obj.key[len(prefix) :].lstrip("/")
            destination.parent.mkdir(parents=True, exist_ok=True)
            bucket.download_file(obj.key, str(destination))
            count += 1
        return f"downloaded {count} objects from {uri}"
    raise InitializerError(
        f"STORAGE_URI scheme {parsed.scheme!r} is not supported locally (use file://, a path, hf:// or s3://)",
        EXIT_BAD_INPUT,
    )


def initialize(uri: str, target: Path, timeout: float = 3.0) -> str:
    """Load ``uri`` into ``target``; returns a one-line summary, raises InitializerError."""
    if not uri:
        raise InitializerError("STORAGE_URI is empty: set spec.initializer.*.storageUri", EXIT_BAD_INPUT)
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        source = Path(parsed.path if parsed.scheme == "file" else uri).expanduser()
        count = copy_local(source, target)
        return f"copied {count} file(s) from {source} to {target}"
    target.mkdir(parents=True, exist_ok=True)
    return _remote(uri, target, timeout)


def main() -> int:
    uri = os.environ.get("STORAGE_URI", "")
    target = Path(os.environ.get(TARGET_ENV) or "workspace")
    timeout = float(os.environ.get(PROBE_TIMEOUT_ENV) or 3.0)
    try:
        print(initialize(uri, target, timeout), flush=True)
    except InitializerError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        return error.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())

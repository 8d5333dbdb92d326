"""``python -m runtimes.local FILE --workdir DIR [--device D]``: a detached local run (what the SDK starts).

FILE holds the TrainJob and its runtime; output goes to the job directory's logs only. The
process leads its own session, so stopping it (SIGTERM to its group) stops every rank too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from pathlib import Path

from runtimes.local.devices import DEVICES, device_choice
from runtimes.local.errors import LocalRunError
from runtimes.local.launcher import LaunchOptions
from runtimes.local.run import find_runtime, load_trainjob_file, run_trainjob
from runtimes.local.store import JobDirectory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtimes.local")
    parser.add_argument("file", type=Path)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--device", choices=DEVICES, default="auto", help="see trainyard run --device")
    args = parser.parse_args(argv)
    job = JobDirectory(args.workdir)
    with contextlib.suppress(PermissionError):
        os.setsid()  # lead a session, so stopping the group stops this launcher and nothing else
    job.pid_file.write_text(str(os.getpid()))
    try:
        trainjob, runtimes = load_trainjob_file(args.file)
        options = LaunchOptions(device=device_choice(args.device))
        result = asyncio.run(run_trainjob(trainjob, find_runtime(trainjob, runtimes), job, options, echo=None))
    except LocalRunError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        job.pid_file.unlink(missing_ok=True)
    return 0 if result.succeeded else 1


if __name__ == "__main__":
    sys.exit(main())

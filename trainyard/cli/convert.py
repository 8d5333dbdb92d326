"""`trainyard convert FILE`: Training Operator v1 PyTorchJob/TFJob → Trainer v2 TrainJob (+ runtime).

The converted objects go to stdout as YAML; what could not be carried over goes to stderr, one
line per field, so ``trainyard convert job.yaml > trainjob.yaml`` leaves the notes on screen.
"""

from __future__ import annotations

import argparse
import sys

from trainyard.cli.errors import UserError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="YAML with kubeflow.org/v1 PyTorchJob or TFJob objects")


def run(args: argparse.Namespace) -> int:
    from runtimes.convert import ConversionError, convert_v1_job
    from runtimes.loading import LoadError, dump_documents, read_yaml_documents
    from scheduler.api.checks import check_object

    try:
        documents = read_yaml_documents(args.file)
    except LoadError as error:
        raise UserError(str(error)) from None
    jobs = [doc for doc in documents if doc.data.get("kind") in ("PyTorchJob", "TFJob")]
    if not jobs:
        kinds = ", ".join(str(doc.data.get("kind")) for doc in documents) or "nothing"
        raise UserError(f"{args.file}: no PyTorchJob or TFJob to convert (the file holds: {kinds})")
    objects = []
    for doc in jobs:
        try:
            conversion = convert_v1_job(doc.data)
        except ConversionError as error:
            raise UserError(f"{doc.path}:{doc.line}: {error}") from None
        converted = conversion.objects()
        # What comes out must pass the same rules as any TrainJob or runtime trainyard reads.
        for obj in converted:
            check = check_object(obj, namespace=(obj.get("metadata") or {}).get("namespace") or "default")
            if check.errors:
                raise UserError(f"{doc.path}:{doc.line}: {doc.where().split(': ', 1)[1]} converts to {check.message}")
        objects.extend(converted)
        for note in conversion.unmapped:
            print(f"{doc.where()}: {note}", file=sys.stderr)
    sys.stdout.write(dump_documents(objects))
    return 0

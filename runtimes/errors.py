"""Errors about a TrainJob or a runtime, each naming the field it is about."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One problem with one field, as Kubernetes' ``field.Error`` reports it.

    ``path`` is the field path in the object (``spec.trainer.numNodes``); ``message`` names the
    value that was given and what would be accepted.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class RenderError(Exception):
    """A TrainJob that cannot be rendered with its runtime; carries the field errors."""

    def __init__(self, subject: str, errors: list[FieldError]) -> None:
        self.subject = subject
        self.errors = errors
        lines = "\n".join(f"  - {error}" for error in errors)
        super().__init__(f"{subject} is invalid:\n{lines}")

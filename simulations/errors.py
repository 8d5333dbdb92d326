"""One error type for bad simulation input: it names the file, the line and the field."""

from __future__ import annotations


class SimulationInputError(ValueError):
    """A scenario, stage or trace file that cannot be used, with where and why.

    ``str(error)`` reads ``FILE:LINE: FIELD: MESSAGE`` so a person can jump to the spot.
    """

    def __init__(self, file: str, line: int | None, field: str, message: str) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.message = message
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")

"""The simulator's errors: bad input (naming the file, the line and the field), and a failed
observer process."""

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


class ObserverProcessError(RuntimeError):
    """The observers' second process stopped before it reported (its traceback, when it sent
    one). Defined here, not in the compiled ``observers`` module: mypyc compiles no subclass of
    a built-in exception."""

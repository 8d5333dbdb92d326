"""How the CLI reports a user's mistake: one clear line, no stack trace."""

from __future__ import annotations


class UserError(Exception):
    """An error in the user's input or environment; its message is printed as is, exit code 2."""

    exit_code = 2

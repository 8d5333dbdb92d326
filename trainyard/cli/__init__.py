"""`trainyard` subcommands, one module each (see ``main.COMMANDS``)."""

"""trainyard: the command line, the only place that wires the packages together."""

__version__ = "0.1.0"

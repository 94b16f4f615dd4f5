"""jobtui: a database job scheduler with a live terminal operator console."""

__version__ = "0.1.0"

"""The `modelgate` command line (also installed as `kubectl-modelrollout`)."""

from modelgate.cli.main import main

__all__ = ["main"]

"""The command line: every click command, the console rendering and the quickstart. Nothing
below this package imports click or prints."""

from sleuth.cli.main import cli, main

__all__ = ["cli", "main"]

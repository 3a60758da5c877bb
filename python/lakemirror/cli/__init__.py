"""The `lakemirror` command line: thin commands over the mirror service."""

from lakemirror.cli.main import main

__all__ = ["main"]

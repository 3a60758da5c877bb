"""The demo: a simulated publisher, mirrored end to end on the embedded engine."""

from lakemirror.demo.run import run_demo

__all__ = ["run_demo"]

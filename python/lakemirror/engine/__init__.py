"""Spark engines: the embedded Sail server and how to reach it."""

from lakemirror.engine.sail import (
    DEFAULT_PORT,
    EngineAddress,
    InProcessEngine,
    background_engine,
    start_background,
    stop_background,
)

__all__ = ["DEFAULT_PORT", "EngineAddress", "InProcessEngine", "background_engine",
           "start_background", "stop_background"]

"""Spark engines: the embedded Sail server, how to reach it, and the watchdog over it; Spark
Connect sessions that give up on a lost server; the in-process Apache Spark session of the
`spark` target."""

from lakemirror.engine.connect import (
    RemoteServer,
    close_connect_sessions,
    connect_session,
    server_address,
)
from lakemirror.engine.sail import (
    DEFAULT_PORT,
    BackgroundProcess,
    ChildEngine,
    EngineAddress,
    background_engine,
    background_process,
    background_storage,
    start_background,
    stop_background,
)
from lakemirror.engine.spark import end_spark_session, prepare_spark_session, spark_unavailable
from lakemirror.engine.watchdog import DEFAULT_ENGINE_TIMEOUT, Watch, WatchedEngine, watchdog

__all__ = ["DEFAULT_ENGINE_TIMEOUT", "DEFAULT_PORT", "BackgroundProcess", "ChildEngine",
           "EngineAddress", "RemoteServer", "Watch", "WatchedEngine", "background_engine",
           "background_process", "background_storage", "close_connect_sessions",
           "connect_session", "end_spark_session", "prepare_spark_session", "server_address",
           "spark_unavailable", "start_background", "stop_background", "watchdog"]

"""The `spark` target: Apache Spark + Delta Lake in this process (dbt-spark's session method).

A SparkContext's static settings (catalog, warehouse dir) are fixed when it starts, and dbt-spark
reuses a running session. So the session lakemirror's profile starts is marked with the warehouse
it serves (`spark.lakemirror.warehouse`), and a dbt invocation for another warehouse ends it
first: a warehouse never talks to another's catalog. Its catalog lives in memory, like the
embedded engine's, and is attached from the warehouse's relation registry on every invocation;
for the same warehouse the session (and its warm Delta caches) is kept, with its catalog's
tables forgotten first (their data stays), so each invocation sees the registry as a new process
would. A warm caller (`run --watch`) keeps the catalog too. A session started by someone else is
left alone.
"""

from __future__ import annotations

import re
import shutil
import socket
import sys
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from lakemirror.environment import DELTA_JARS, process_environment, unset_process_variable
from lakemirror.errors import EngineError

DELTA_PACKAGES = "LAKEMIRROR_DELTA_PACKAGES"
SESSION_MARK = "spark.lakemirror.warehouse"
MAVEN_CENTRAL = ("repo1.maven.org", 443)
IVY_JARS = Path.home() / ".ivy2.5.2" / "jars"  # where Spark 4's Ivy keeps downloaded packages


def spark_unavailable(variables: Mapping[str, str] | None = None) -> str | None:
    """Why the `spark` target cannot start on this machine with `variables` (by default the
    environment its in-process JVM gets), or None: it needs Java and Delta's jars, from the
    folder LAKEMIRROR_DELTA_JARS or from Maven (LAKEMIRROR_DELTA_PACKAGES says the user has
    it)."""
    variables = process_environment() if variables is None else variables
    folder = variables.get(DELTA_JARS)
    if folder or _java_missing(variables):
        return _java_missing(variables) or _jar_folder_problem(folder or "")
    if variables.get(DELTA_PACKAGES):
        return None
    return (f"{DELTA_JARS} is not set (Delta's jars come only from Maven: set "
            f"{DELTA_PACKAGES} where Maven is reachable)")


def check_spark_target(variables: Mapping[str, str], *, ivy_jars: Path = IVY_JARS,
                       maven_answers: Callable[[], bool] | None = None) -> None:
    """Raise EngineError, before the JVM starts, when the `spark` target cannot have Java or
    Delta's jars with `variables` (the environment its JVM gets): else Spark prints Ivy's
    whole resolution log and a Java gateway traceback. Without LAKEMIRROR_DELTA_JARS and
    LAKEMIRROR_DELTA_PACKAGES, the profile's default package comes from Maven Central: fine
    when Ivy's cache (`ivy_jars`) holds it or Maven Central answers (`maven_answers`)."""
    problem = _java_missing(variables) or _delta_problem(
        variables, ivy_jars, maven_answers or _maven_central_answers)
    if problem is not None:
        raise EngineError(f"the spark target cannot start: {problem}", hint=(
            f"set {DELTA_JARS} to a folder holding delta-spark_2.13-<version>.jar and "
            f"delta-storage-<version>.jar (Delta 4.0 for Spark 4.0), or set {DELTA_PACKAGES} "
            "(e.g. io.delta:delta-spark_2.13:4.0.0) where Maven is reachable, directly or "
            "through your proxy or mirror; or run with --target embedded"))


def _delta_problem(variables: Mapping[str, str], ivy_jars: Path,
                   maven_answers: Callable[[], bool]) -> str | None:
    """Why Spark would not find Delta's jars: not in LAKEMIRROR_DELTA_JARS's folder, or, with
    neither it nor LAKEMIRROR_DELTA_PACKAGES set, neither in Ivy's cache nor on Maven Central."""
    folder = variables.get(DELTA_JARS)
    if folder:
        return _jar_folder_problem(folder)
    if (variables.get(DELTA_PACKAGES) or any(ivy_jars.glob("io.delta_delta-spark_*.jar"))
            or maven_answers()):
        return None
    return (f"{DELTA_JARS} is not set, and Maven Central ({MAVEN_CENTRAL[0]}), where Spark "
            "would download Delta's jars from, does not answer")


def _java_missing(variables: Mapping[str, str]) -> str | None:
    if shutil.which("java") is None and not variables.get("JAVA_HOME"):
        return "no java on PATH and JAVA_HOME is not set (Spark needs Java 17)"
    return None


def _jar_folder_problem(folder: str) -> str | None:
    """What Delta's jar folder `folder` (LAKEMIRROR_DELTA_JARS) lacks, or None."""
    shown = f"{DELTA_JARS}={folder}" + ("" if Path(folder).is_absolute() else
                                        " (a relative path is read from the folder lakemirror "
                                        f"runs in: {Path(folder).resolve()})")
    if not Path(folder).is_dir():
        return f"{shown} is not a folder"
    for jar in ("delta-spark_*.jar", "delta-storage-*.jar"):
        if not list(Path(folder).glob(jar)):
            return f"no {jar} in {shown}"
    return None


def _maven_central_answers() -> bool:
    try:
        with socket.create_connection(MAVEN_CENTRAL, timeout=5):
            return True
    except OSError:
        return False


def make_delta_jars_absolute(variables: MutableMapping[str, str]) -> None:
    """Resolve a relative LAKEMIRROR_DELTA_JARS against the current folder, so that processes
    started from another folder (a JVM, `lakemirror` run elsewhere) find the same jars."""
    folder = variables.get(DELTA_JARS)
    if folder and not Path(folder).is_absolute():
        variables[DELTA_JARS] = str(Path(folder).resolve())


def missing_delta_hint(error: str, engine: str = "spark") -> str | None:
    """The fix for a Spark error saying Delta's classes are missing, or None for other errors:
    on the `spark` engine the jars are this process's; on another (a Spark Connect server) the
    server's."""
    client_side = "org.apache.spark.sql.delta" in error or "DeltaSparkSessionExtension" in error
    if engine != "spark":
        if not client_side and not re.search(r"DATA_SOURCE_NOT_FOUND.*\bdelta\b", error, re.S):
            return None
        return ("the Spark server has no Delta Lake: start it with Delta's jars (--packages "
                "io.delta:delta-spark_2.13:<version>, or --jars) and --conf "
                "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension --conf "
                "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog "
                "(docs/pages/spark-cluster.md)")
    if not client_side:
        return None
    return (f"Spark found no Delta Lake classes: point {DELTA_JARS} at the folder holding "
            f"delta-spark_2.13-*.jar and delta-storage-*.jar (now "
            f"{process_environment().get(DELTA_JARS) or 'unset'}; a relative path is read from "
            "the folder "
            f"lakemirror runs in), or set {DELTA_PACKAGES} where Maven is reachable")


def prepare_spark_session(warehouse: str | None, *, warm: bool) -> None:
    """Before a dbt invocation for `warehouse`: end the in-process Spark session lakemirror's
    profile started for another warehouse (the next statement starts one with the right
    settings); for the same one, forget its catalog's tables unless the caller is warm. Also
    forget that a Spark Connect session ran here: pyspark marks the process Connect-only
    (SPARK_CONNECT_MODE_ENABLED), and would refuse a classic session (it sets the mark again
    whenever a Connect session is made)."""
    unset_process_variable("SPARK_CONNECT_MODE_ENABLED")
    _quiet_error_loggers()
    session = _lakemirror_session()
    if session is None:
        return
    if session.sparkContext.getConf().get(SESSION_MARK) != warehouse:
        session.stop()
    elif not warm:
        forget_tables(session)


def end_spark_session() -> None:
    """End the in-process Spark session lakemirror's profile started, if one runs."""
    session = _lakemirror_session()
    if session is not None:
        session.stop()


def shut_down_spark() -> None:
    """End lakemirror's Spark session and its JVM, and wait for the JVM to exit."""
    end_spark_session()
    if "pyspark" not in sys.modules:
        return
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    gateway.shutdown()
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.stdin.close()  # the JVM exits when its stdin closes
        process.wait()
    SparkContext._gateway = None
    SparkContext._jvm = None


def forget_tables(session: Any) -> None:
    """Drop the catalog's external tables and views (their data stays: the catalog only points
    at it); a table whose data lives in the catalog's own folder is left alone."""
    for database in session.catalog.listDatabases():
        for table in session.catalog.listTables(database.name):
            if table.tableType in ("EXTERNAL", "VIEW") and not table.isTemporary:
                kind = "view" if table.tableType == "VIEW" else "table"
                session.sql(f"drop {kind} if exists {_quoted(database.name)}.{_quoted(table.name)}")


def _quiet_error_loggers() -> None:
    """PySpark 4 also logs every SQL error it raises, as JSON with the Java stack, on stderr;
    dbt reports the error already, so those loggers are kept quiet."""
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def _lakemirror_session() -> Any:
    """The running Spark session lakemirror's profile started, or None."""
    if "pyspark.sql" not in sys.modules:  # nothing started one; importing pyspark is slow
        return None
    from pyspark.sql import SparkSession

    session = SparkSession._instantiatedSession
    if session is None or session.sparkContext._jsc is None:
        return None
    return session if session.sparkContext.getConf().contains(SESSION_MARK) else None


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"

"""The `spark` target: Apache Spark + Delta Lake in this process (dbt-spark's session method).

A SparkContext's static settings (catalog, warehouse dir) are fixed when it starts, and dbt-spark
reuses a running session. So the session lakemirror's profile starts is marked with the warehouse
it serves (`spark.lakemirror.warehouse`), and each dbt invocation ends it first (a warm caller
keeps it while the warehouse is the same): a warehouse never talks to another's catalog. Its
catalog lives in memory, like the embedded engine's, and is attached from the warehouse's
relation registry on every invocation. A session started by someone else is left alone.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

DELTA_JARS = "LAKEMIRROR_DELTA_JARS"
DELTA_PACKAGES = "LAKEMIRROR_DELTA_PACKAGES"
SESSION_MARK = "spark.lakemirror.warehouse"


def spark_unavailable(environ: dict[str, str] | None = None) -> str | None:
    """Why the `spark` target cannot start on this machine, or None: it needs Java and
    Delta's jars, from the folder LAKEMIRROR_DELTA_JARS or from Maven (LAKEMIRROR_DELTA_PACKAGES
    says the user has it)."""
    environ = dict(os.environ) if environ is None else environ
    if shutil.which("java") is None and not environ.get("JAVA_HOME"):
        return "no java on PATH and JAVA_HOME is not set (Spark needs Java 17)"
    folder = environ.get(DELTA_JARS)
    if not folder:
        if environ.get(DELTA_PACKAGES):
            return None
        return (f"{DELTA_JARS} is not set (Delta's jars come only from Maven: set "
                f"{DELTA_PACKAGES} where Maven is reachable)")
    if not list(Path(folder).glob("delta-spark_*.jar")):
        return f"no delta-spark_*.jar in {DELTA_JARS}={folder}"
    if not list(Path(folder).glob("delta-storage-*.jar")):
        return f"no delta-storage-*.jar in {DELTA_JARS}={folder}"
    return None


def end_spark_session(*, keep_for: str | None = None) -> None:
    """End the in-process Spark session lakemirror's profile started, unless it serves the
    warehouse `keep_for`; the next statement then starts one with the right settings. Also
    forget that a Spark Connect session ran here: pyspark marks the process Connect-only
    (SPARK_CONNECT_MODE_ENABLED), and would refuse a classic session (it sets the mark again
    whenever a Connect session is made)."""
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    if "pyspark.sql" not in sys.modules:  # nothing started one; importing pyspark is slow
        return
    from pyspark.sql import SparkSession

    session = SparkSession._instantiatedSession
    if session is None or session.sparkContext._jsc is None:
        return
    warehouse = session.sparkContext.getConf().get(SESSION_MARK)
    if warehouse is None or (keep_for is not None and warehouse == keep_for):
        return
    session.stop()

"""dbt (plain or run by lakemirror) on a Spark Connect target: a command that would connect to
a server that does not answer stops, naming the fix, instead of hanging.

Spark Connect's client retries a server that does not answer for about ten minutes without a
word. dbt imports every installed `dbt_*` module and sets up the plugins it lists before it
connects (dbt-core's plugin manager): lakemirror's (`dbt_lakemirror`) checks there that the
server answers, for targets marked in their server_side_parameters (`spark.lakemirror.engine`):
`embedded` stops at once, naming `lakemirror engine start`; `connect` (a remote cluster) waits
up to LAKEMIRROR_CONNECT_TIMEOUT seconds, which rides out a short restart of the server. It
then makes the session dbt-spark connects with, whose retries are bounded (engine.connect); on
the embedded engine as its owner, with the token kept in lakemirror's home (engine.access),
which never enters the profile, dbt's vars or its logs; that session hands lakemirror's
write requests to delta-rs (engine.delta_rs_writes). The
plugin also silences the warning dbt-spark's session cursor makes pyspark print on every
statement over Spark Connect (it cannot set spark.sql.catalogImplementation there)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbt.plugins.manager import dbtPlugin

from lakemirror.dbt_vars import ENGINE_HOME_VAR, WAREHOUSE_VAR
from lakemirror.engine.access import owner_token
from lakemirror.engine.connect import connect_session, server_address
from lakemirror.engine.delta_rs_writes import route_delta_rs_writes
from lakemirror.engine.identity import ENGINE_MARK
from lakemirror.engine.remote_access import check_connect_url, check_server_access
from lakemirror.engine.sail import (
    EngineAddress,
    answers,
    background_engine,
    background_storage,
    storage_fingerprint,
)
from lakemirror.engine.spark import SESSION_MARK, check_spark_target
from lakemirror.errors import EngineError, UnreachableServerError
from lakemirror.environment import (
    CONNECT_TIMEOUT,
    ENGINE_TIMEOUT,
    Settings,
    StorageSettings,
    process_environment,
    read_settings,
    seconds_at_least_one,
)

if TYPE_CHECKING:
    from lakemirror.engine.deadline import Deadline

TIMEOUT_PARAMETER = "spark.lakemirror.engine_timeout"  # a target's own, over the variable's
# The dbt commands that load a project without connecting to its engine.
_OFFLINE_COMMANDS = frozenset({"clean", "deps", "list", "ls", "parse", "serve"})


def embedded_engine(parameters: Mapping[str, str]) -> EngineAddress | None:
    """Where a target marked as the embedded engine's connects (its `spark.remote`), else None."""
    return marked_server(parameters, "embedded")


def marked_server(parameters: Mapping[str, str], mark: str) -> EngineAddress | None:
    """Where a target marked `mark` connects (its `spark.remote`), else None."""
    if parameters.get(ENGINE_MARK) != mark:
        return None
    return server_address(parameters.get("spark.remote", ""))


def check_embedded_engine(parameters: Mapping[str, str], env: Settings) -> None:
    """Raise EngineError when the target is the embedded engine's and nothing answers there."""
    address = embedded_engine(parameters)
    if address is None:
        return
    if answers(address):
        check_engine_storage(address, env)
        return
    running = background_engine(env.home)
    hint = (f"a background engine runs at port {running.port}: export "
            f"LAKEMIRROR_ENGINE_PORT={running.port}" if running is not None else
            "start it with `lakemirror engine start` (`lakemirror engine stop` ends it), or "
            "run `lakemirror run`, which starts an engine of its own")
    raise EngineError(f"the embedded engine is not running: nothing answers at "
                      f"{address.host}:{address.port} (LAKEMIRROR_ENGINE_HOST, "
                      "LAKEMIRROR_ENGINE_PORT)", hint=hint)


def check_engine_storage(address: EngineAddress, env: Settings) -> None:
    """Raise EngineError when the background engine at `address` lacks the storage settings of
    the warehouse URL dbt is given (`env.warehouse`): the engine reads them only from its
    own environment, so every table would fail on a storage error."""
    warehouse = env.warehouse
    if not warehouse or background_engine(env.home) != address:
        return
    from lakemirror.storage.engine_settings import engine_environment
    from lakemirror.storage.location import redact_url
    from lakemirror.storage.warehouse import warehouse_location

    wanted = storage_fingerprint(engine_environment(
        warehouse_location(warehouse, storage=env.storage), env.storage.variables))
    if wanted and background_storage(env.home) != wanted:
        shown = redact_url(warehouse)
        raise EngineError(f"the background engine at port {address.port} was started without "
                          f"the storage settings of the warehouse {shown}",
                          hint="stop it with `lakemirror engine stop`, then start it with "
                               f"`lakemirror engine start --warehouse {shown}` (or with "
                               "LAKEMIRROR_WAREHOUSE set)")


def engine_deadline(parameters: Mapping[str, str], env: Settings,
                    address: EngineAddress) -> Deadline:
    """The deadline of each call dbt makes to the server at `address` of a marked target: the
    target's spark.lakemirror.engine_timeout, else LAKEMIRROR_ENGINE_TIMEOUT, in seconds; past
    it the error names the fix (`lakemirror engine restart` for the embedded engine)."""
    from lakemirror.engine.deadline import Deadline

    seconds = seconds_at_least_one(parameters.get(TIMEOUT_PARAMETER, ""),
                                   f"the target's {TIMEOUT_PARAMETER}", env.engine_timeout)
    where = f"{address.host}:{address.port}"
    raise_it = (f"if a statement needs longer, raise {ENGINE_TIMEOUT} (or the target's "
                f"{TIMEOUT_PARAMETER})")
    if embedded_engine(parameters) is not None:
        fix = (f"restart it with `lakemirror engine restart`, then run dbt again; {raise_it}")
    else:
        fix = (f"check the Spark Connect server at {where} (restart it if it is stuck), then "
               f"run dbt again; {raise_it}")
    return Deadline(seconds, where, fix)


def invocation_state() -> dict[str, Any]:
    """What dbt's CLI (and dbtRunner) keeps of the command running: its flags, profile and
    project (`ctx.obj`); empty without one (dbt used as a library)."""
    import click

    context = click.get_current_context(silent=True)
    return context.obj if context is not None and isinstance(context.obj, dict) else {}


def invocation_settings(env: Settings, dbt_vars: Mapping[str, Any]) -> Settings:
    """The settings of the command dbt runs: the environment's (dbt's edge, for plain dbt), with
    what a lakemirror run gives dbt as vars (`--vars`) over the variables': the warehouse (over
    LAKEMIRROR_WAREHOUSE) and the home its engine's token is kept in (over LAKEMIRROR_HOME)."""
    warehouse, home = dbt_vars.get(WAREHOUSE_VAR), dbt_vars.get(ENGINE_HOME_VAR)
    if warehouse:
        env = replace(env, warehouse=str(warehouse))
    return replace(env, home=Path(str(home))) if home else env


def check_connect_server(parameters: Mapping[str, str], timeout: float) -> None:
    """Raise UnreachableServerError when the target is marked `connect` and its server does
    not accept connections within `timeout` seconds (LAKEMIRROR_CONNECT_TIMEOUT); ConfigError
    when its URL is not one."""
    if parameters.get(ENGINE_MARK) == "connect":
        check_connect_url(parameters.get("spark.remote", ""))
    address = marked_server(parameters, "connect")
    if address is None:
        return
    deadline = time.monotonic() + timeout
    while not answers(address):
        if time.monotonic() >= deadline:
            raise UnreachableServerError(
                f"the Spark Connect server does not answer: nothing accepted a connection at "
                f"{address.host}:{address.port} in {timeout:g} s (LAKEMIRROR_CONNECT_URL)",
                hint="start the server or fix LAKEMIRROR_CONNECT_URL; staged files are "
                     f"mirrored by the next run ({CONNECT_TIMEOUT} sets the wait)")
        time.sleep(0.5)


def check_spark_jars(parameters: Mapping[str, str]) -> None:
    """On the `spark` target (marked by its session's warehouse), before dbt-spark starts its
    JVM: EngineError naming the setting when Spark could not have Delta's jars."""
    if SESSION_MARK in parameters:
        check_spark_target(process_environment())


def start_spark_session(parameters: Mapping[str, str], warehouse: str,
                        storage: StorageSettings) -> None:
    """On the `spark` target (marked by its session's warehouse) with a warehouse in object
    storage (`warehouse`, the one dbt is given): start the session dbt-spark would start,
    with the Hadoop settings that reach the warehouse added (dbt-spark then reuses it); they
    are made from lakemirror's storage options (`storage`), which a profile cannot list."""
    if SESSION_MARK not in parameters or "://" not in warehouse:
        return
    from lakemirror.storage.hadoop import hadoop_settings
    from lakemirror.storage.location import ObjectLocation
    from lakemirror.storage.warehouse import warehouse_location

    location = warehouse_location(warehouse, storage=storage)
    if not isinstance(location, ObjectLocation):
        return
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.enableHiveSupport()  # as dbt-spark's session method
    for name, value in {**parameters, **hadoop_settings(location)}.items():
        builder = builder.config(name, value)
    builder.getOrCreate()


def quiet_session_cursor() -> None:
    """Silence pyspark's warning on each statement of dbt-spark's session cursor over Spark
    Connect, which asks for a Hive catalog the server's static settings fix."""
    warnings.filterwarnings("ignore", category=UserWarning,
                            message=r"Failed to set spark\.sql\.catalogImplementation")


class EngineCheck(dbtPlugin):
    """dbt's plugin: before a command that connects, the embedded engine answers, or dbt stops
    with the fix. dbt hands a plugin only the project's name: the profile and command come
    from the click context dbt's CLI (and dbtRunner) runs the command in; without one (dbt
    used as a library) there is nothing to check."""

    def initialize(self) -> None:
        quiet_session_cursor()
        state = invocation_state()
        profile, flags = state.get("profile"), state.get("flags")
        if profile is None or getattr(flags, "WHICH", None) in _OFFLINE_COMMANDS:
            return
        parameters = getattr(profile.credentials, "server_side_parameters", None) or {}
        env = invocation_settings(read_settings(), getattr(flags, "VARS", None) or {})
        check_embedded_engine(parameters, env)
        check_connect_server(parameters, env.connect_timeout)
        check_spark_jars(parameters)
        start_spark_session(parameters, env.warehouse, env.storage)
        address = marked_server(parameters, parameters.get(ENGINE_MARK, ""))
        if address is not None:
            token = (owner_token(env.home, address.port)
                     if embedded_engine(parameters) is not None else None)
            session = connect_session(parameters["spark.remote"], timeout=env.connect_timeout,
                                      deadline=engine_deadline(parameters, env, address),
                                      token=token)
            if token is not None:
                route_delta_rs_writes(session, env.storage)
            if marked_server(parameters, "connect") is not None:
                check_server_access(session, parameters["spark.remote"], address)

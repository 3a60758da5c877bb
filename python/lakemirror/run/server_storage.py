"""The `connect` target with a warehouse in object storage: the server reads and writes it with
its own Hadoop connector and credentials, which lakemirror neither gives nor sees. Before a run
writes anything, one cheap read through the server (the Delta log at the warehouse's root, which
is no table) shows whether it reaches the store; a server without the connector or with refused
credentials stops the run there. The same errors met later, by dbt's models, are explained on
their tables instead of a bare Java stack."""

from __future__ import annotations

import dataclasses

from lakemirror.engine.connect import connect_session, server_address
from lakemirror.engine.remote_access import check_server_access
from lakemirror.engine.sail import answers
from lakemirror.errors import ServerStorageError
from lakemirror.node_result import NodeResult
from lakemirror.run.settings import RunSettings
from lakemirror.storage.hadoop import server_storage_problem, spark_url
from lakemirror.storage.location import ObjectLocation, redact_url


def check_server_storage(settings: RunSettings, reached: set[tuple[str, str]]) -> None:
    """On the `connect` engine with a warehouse in object storage, raise ServerStorageError
    when the server cannot reach the warehouse. `reached` is the caller's (server, warehouse)
    pairs a probe found reachable, not probed again; the probe adds its pair when it is.
    Any other error of the probe (a server that does not answer, one without Delta) is left
    to dbt's own checks, which name it."""
    warehouse = settings.warehouse
    if settings.engine != "connect" or not isinstance(warehouse, ObjectLocation):
        return
    from pyspark.errors import PySparkException  # only here: a run imports no pyspark otherwise

    server = settings.env.connect_url
    address = server_address(server)
    if (server, str(warehouse)) in reached or address is None or not answers(address):
        return  # a server that does not answer: dbt's plugin waits for it, naming the fix
    try:
        # analysed at once: the server lists <warehouse>/_delta_log, which no run writes
        session = connect_session(server, timeout=settings.env.connect_timeout)
        check_server_access(session, server, address)
        session.read.format("delta").load(spark_url(warehouse)).schema
    except PySparkException as error:
        if (problem := server_storage_problem(str(error))) is not None:
            raise ServerStorageError(
                f"the Spark Connect server at sc://{address.host}:{address.port} cannot reach "
                f"the warehouse {redact_url(str(warehouse))}: {problem.lacks}; nothing was "
                "written",
                hint=problem.fix) from None
    reached.add((server, str(warehouse)))


def explain_storage_errors(settings: RunSettings, nodes: list[NodeResult]) -> list[NodeResult]:
    """`nodes` with each failure that says the server lacks a connector or credentials told
    as such, with the server's own first lines (its Java stack left out)."""
    if not isinstance(settings.warehouse, ObjectLocation):
        return nodes
    return [dataclasses.replace(node, message=problem.explained(node.message))
            if node.failed and node.message
            and (problem := server_storage_problem(node.message)) is not None else node
            for node in nodes]

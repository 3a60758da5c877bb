"""A Spark Connect server that lets in only the holders of its token (Spark's
`spark.connect.authenticate.token`): a refusal explained, naming where the token goes.

pyspark sends the URL's `;token=` (else SPARK_CONNECT_AUTHENTICATE_TOKEN) as bearer metadata,
in clear text only to the host literally named `localhost`; to any other host, and with
`;use_ssl=true`, it speaks TLS. A server without TLS in front never answers that: pyspark
retries until LAKEMIRROR_CONNECT_TIMEOUT without a word of why, so one TLS handshake before the
first call says so at once (docs/pages/spark-cluster.md, "Protecting the server")."""

from __future__ import annotations

import re
import socket
import ssl
from typing import Any

from lakemirror.engine.sail import EngineAddress
from lakemirror.environment import CONNECT_URL
from lakemirror.errors import ConfigError, EngineError
from lakemirror.storage.secrets import redact

_HANDSHAKE_SECONDS = 10.0
_GIVE_TOKEN = (f"put the server's token in {CONNECT_URL} as its `;token=` parameter "
               "(sc://host:port/;token=<token>) or in SPARK_CONNECT_AUTHENTICATE_TOKEN (which pyspark "
               "reads); the server's operator has it")
_REFUSAL = re.compile(r"StatusCode\.(UNAUTHENTICATED|PERMISSION_DENIED)")
_DETAILS = re.compile(r'details = "([^"]*)"')


def check_connect_url(url: str) -> None:
    """Raise ConfigError, the URL's secrets hidden, when `url` (LAKEMIRROR_CONNECT_URL's) is not
    one pyspark can use: its own error quotes the URL's port with what follows it, a token
    included, and dbt would print it."""
    from pyspark.errors import PySparkException
    from pyspark.sql.connect.client import DefaultChannelBuilder

    try:
        DefaultChannelBuilder(url).endpoint
    except (PySparkException, ValueError) as error:
        raise ConfigError(f"{CONNECT_URL}={redact(url)} is not a Spark Connect URL: "
                          f"{redact(str(error))}",
                          hint=f"give {CONNECT_URL} as sc://host:port, with parameters after "
                               "a slash: sc://host:port/;token=<token>;use_ssl=true") from None


def check_server_access(session: Any, url: str, address: EngineAddress) -> None:
    """Raise EngineError when the Spark Connect server at `address` (LAKEMIRROR_CONNECT_URL's
    `url`) cannot be spoken to as `session` would: TLS that the server does not answer, or a
    token it refuses (one call, its Spark version)."""
    from pyspark.errors import PySparkException

    where = f"{address.host}:{address.port}"
    if (why := _tls_expected_but_absent(url, address)) is not None:
        raise EngineError(
            f"the Spark Connect server at {where} does not answer TLS ({why}), which pyspark "
            f"speaks to it: {CONNECT_URL} has `;use_ssl=true`, or a token (its own or "
            "SPARK_CONNECT_AUTHENTICATE_TOKEN) goes to a host not named `localhost` (pyspark "
            "sends a token in clear text only there)",
            hint="put TLS in front of the server (docs/pages/spark-cluster.md, \"Protecting "
                 "the server\"), or, when the server runs on this machine, name it "
                 "sc://localhost:PORT")
    try:
        session.version
    except PySparkException as error:
        refusal = _REFUSAL.search(str(error))
        if refusal is None:
            return  # not about access: dbt's own statements meet it and name it
        details = _DETAILS.search(str(error))
        said = details.group(1) if details else refusal.group(1)
        raise EngineError(f"the Spark Connect server at {where} refused the connection: "
                          f"{said} ({CONNECT_URL}, the server's token)", hint=_GIVE_TOKEN
                          ) from None


def _tls_expected_but_absent(url: str, address: EngineAddress) -> str | None:
    """Why the server at `address` fails a TLS handshake when pyspark speaks TLS to `url`;
    None when pyspark does not, or the handshake succeeds (whether its certificate is
    trusted is gRPC's to judge), or the server cannot be reached at all."""
    from pyspark.sql.connect.client import DefaultChannelBuilder

    channel = DefaultChannelBuilder(url)
    if not channel.use_ssl and (channel.token is None or channel.host == "localhost"):
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection((address.host, address.port),
                                      timeout=_HANDSHAKE_SECONDS) as raw, \
                context.wrap_socket(raw, server_hostname=address.host):
            return None
    except ssl.SSLError as error:
        return str(error.reason or error)
    except OSError:
        return None  # unreachable: the server check before waits for it and names it

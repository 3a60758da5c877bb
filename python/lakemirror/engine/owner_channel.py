"""The Spark Connect channel of the embedded engine's owner: to its loopback address by number
(never by resolving `localhost`, which another user could answer on ::1), with its token as
bearer metadata over gRPC's local credentials (no TLS on loopback)."""

from __future__ import annotations

from typing import Any

import grpc
from pyspark.sql.connect.client import DefaultChannelBuilder


class OwnerChannelBuilder(DefaultChannelBuilder):
    def __init__(self, host: str, port: int, token: str) -> None:
        address = "127.0.0.1" if host == "localhost" else host
        super().__init__(f"sc://{address}:{port}")
        self._owner_token = token

    def toChannel(self) -> Any:  # noqa: N802 - pyspark's name
        credentials = grpc.composite_channel_credentials(
            grpc.local_channel_credentials(),
            grpc.access_token_call_credentials(self._owner_token))
        return self._secure_channel(self.endpoint, credentials)

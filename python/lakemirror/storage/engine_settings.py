"""A location's storage settings in the forms other programs take them: the flat
`storage_options` of delta-rs, and the environment variables of an engine process.

The embedded engine (Sail) reads object-store settings only from its process environment
(`AZURE_STORAGE_*`, `AWS_*`, `GOOGLE_*`, the names `object_store` reads with `from_env`), so
an engine for a warehouse in object storage starts with that warehouse's options written as
those variables; two warehouses with different settings need two engines. object_store reads
no retry settings from the environment: the engine retries as its defaults say (10 times
within 3 minutes, backing off from 0.1 s to 15 s).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from lakemirror.storage.location import RETRY_OPTIONS, Location, ObjectLocation, open_store

_PREFIXES = {"azure": "AZURE_", "s3": "AWS_", "gcs": "GOOGLE_"}
# Azure's keys that object_store reads as AZURE_STORAGE_<KEY>; its others as AZURE_<KEY>.
_AZURE_STORAGE_KEYS = frozenset((
    "account_name", "account_key", "client_id", "client_secret", "tenant_id", "authority_id",
    "authority_host", "sas_key", "token", "use_emulator", "endpoint"))
# Set by the store's own name in the URL, not by a variable.
_FROM_URL = frozenset(("bucket", "container_name"))
# Emulators' endpoints, read by object_store from the environment only.
_EMULATOR_VARIABLES = ("AZURITE_BLOB_STORAGE_URL",)


def delta_storage_options(location: ObjectLocation) -> dict[str, str]:
    """The location's storage options as delta-rs takes them (store and client settings, and
    the retries lakemirror's own requests make: delta-rs would retry 10 times in 3 minutes)."""
    store = open_store(location)
    retry = store.retry_config or {}
    settings = {**store.config, **(store.client_options or {}), **{
        name: f"{int(value.total_seconds())}s" if isinstance(value, timedelta) else value
        for name, value in retry.items() if name in RETRY_OPTIONS}}
    return {name: str(value) for name, value in settings.items() if name not in _FROM_URL}


def engine_environment(location: Location,
                       storage_variables: Mapping[str, str]) -> dict[str, str]:
    """The environment variables that give an engine process this location's settings: the
    store's options under object_store's variable names, and the emulator endpoints among
    `storage_variables` (the environment's, as read at the edge); none for a local folder."""
    if not isinstance(location, ObjectLocation):
        return {}
    prefix = _PREFIXES[location.kind]
    variables = {name: storage_variables[name] for name in _EMULATOR_VARIABLES
                 if name in storage_variables}
    for name, value in delta_storage_options(location).items():
        if name in RETRY_OPTIONS:
            continue  # object_store reads no retry settings from the environment
        if location.kind == "azure" and name in _AZURE_STORAGE_KEYS:
            variables[f"AZURE_STORAGE_{name.upper()}"] = value
        else:
            variables[f"{prefix}{name.upper()}"] = value
    return variables

"""The dbt vars (`--vars`) through which lakemirror hands a run's data to dbt, never the process
environment: two runs in one process each give dbt their own. Plain dbt, run without them, reads
the environment variable of the same meaning instead (profiles.yml, the generated models' yml)."""

from __future__ import annotations

WAREHOUSE_VAR = "lakemirror_warehouse"  # else LAKEMIRROR_WAREHOUSE
WAREHOUSE_NAME_VAR = "lakemirror_warehouse_name"  # else LAKEMIRROR_WAREHOUSE_NAME
ENGINE_HOST_VAR = "lakemirror_engine_host"  # else LAKEMIRROR_ENGINE_HOST
ENGINE_PORT_VAR = "lakemirror_engine_port"  # else LAKEMIRROR_ENGINE_PORT
ENGINE_HOME_VAR = "lakemirror_engine_home"  # else LAKEMIRROR_HOME: where its token is

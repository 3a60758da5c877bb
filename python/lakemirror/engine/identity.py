"""Which engine a dbt target runs on, known by what the target is, never by its name: the
marker in its server_side_parameters (`spark.lakemirror.engine`), else its parameters."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

from lakemirror.errors import ConfigError

# embedded: Sail behind Spark Connect; spark: Apache Spark in this process (session method);
# connect: any Spark Connect server; server: a SQL server dbt-spark reaches by its thrift,
# http or odbc method (Spark Thrift Server, Databricks).
Engine: TypeAlias = Literal["embedded", "spark", "connect", "server"]
ENGINE_MARK = "spark.lakemirror.engine"
MARKS: tuple[Engine, ...] = ("embedded", "spark", "connect")


def target_engine(target: Mapping[str, Any]) -> Engine:
    """The engine of a profile's `target` (its output, as written): its marker, a literal one
    of MARKS; without one, inferred: `spark.remote` → connect, the session method without it →
    spark, any other method → server. A Sail cluster is `connect`: the macros' var
    lakemirror_engine tells them it is Sail."""
    parameters = target.get("server_side_parameters") or {}
    mark = parameters.get(ENGINE_MARK)
    if mark is not None:
        if mark not in MARKS:
            raise ConfigError(f"the target's {ENGINE_MARK} is {mark!r}",
                              hint=f"mark it one of {', '.join(MARKS)}, as a literal value")
        return cast(Engine, mark)
    if target.get("method", "session") != "session":
        return "server"
    return "connect" if "spark.remote" in parameters else "spark"


def project_engine(project_dir: Path, target: str, profiles_folder: Path) -> Engine:
    """The engine of the dbt target named `target` in the profile of the project at
    `project_dir`, from the profiles.yml in `profiles_folder` (where dbt finds it:
    lakemirror.project.profiles_dir)."""
    import yaml

    project = yaml.safe_load((project_dir / "dbt_project.yml").read_text(encoding="utf-8"))
    profile_name = (project or {}).get("profile")
    path = profiles_folder / "profiles.yml"
    profiles = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}
                if path.is_file() else {})
    outputs = (profiles.get(profile_name) or {}).get("outputs") or {}
    if not isinstance(outputs.get(target), Mapping):
        raise ConfigError(f"no target {target!r} in the profile {profile_name!r} of {path}",
                          hint="pass --target with one of its targets "
                               f"({', '.join(map(str, outputs)) or 'none'}), or add it")
    return target_engine(outputs[target])

"""What a mirror run is given, as plain frozen data built once (by the CLI): where the landing
zone, the warehouse and the dbt project are, the target and its engine, and the run's limits
and flags."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeAlias

from lakemirror.codegen import checked_name
from lakemirror.conflicts import Backoff
from lakemirror.engine import DEFAULT_ENGINE_TIMEOUT
from lakemirror.engine.identity import Engine, project_engine
from lakemirror.errors import ConfigError
from lakemirror.project import profiles_dir
from lakemirror.landing.zone import open_zone
from lakemirror.landing.zone_door import ZoneDoor
from lakemirror.recovery import DEFAULT_MAX_DROP_SHARE
from lakemirror.environment import DEFAULT_WAREHOUSE_NAME, Settings, read_settings
from lakemirror.staging import Warehouse
from lakemirror.staging.lock import DEFAULT_LOCK_TIMEOUT
from lakemirror.staging.retention import DEFAULT_RETENTION_DAYS
from lakemirror.storage.hadoop import refuse_unreachable_warehouse
from lakemirror.storage.location import ObjectLocation
from lakemirror.storage.warehouse import warehouse_location

ZoneLocation: TypeAlias = Path | ObjectLocation  # where the landing zone is
WarehouseLocation: TypeAlias = Path | ObjectLocation  # where the warehouse is


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """One landing zone mirrored into one warehouse with one dbt project, and how."""

    landing_zone: ZoneLocation  # links resolved, once: the zone every phase reads
    warehouse: WarehouseLocation  # links resolved
    project_dir: Path  # links resolved
    given_zone: ZoneLocation  # as given: the zone's identity (see `binding`) and messages
    target: str = "embedded"  # the dbt target's name in the project's profile
    engine: Engine  # what the target runs on, from its profile (see `given`), never its name
    dbt_vars: Mapping[str, object] = field(default_factory=dict)
    quiet: bool = False  # dbt logs nothing
    warm: bool = False  # one process runs again and again (`run --watch`)
    retention_days: float = DEFAULT_RETENTION_DAYS
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    engine_timeout: float = DEFAULT_ENGINE_TIMEOUT
    backoff: Backoff = field(default_factory=Backoff)
    warehouse_name: str = DEFAULT_WAREHOUSE_NAME  # generated models know it by
    rebind_landing_zone: bool = False  # mirror this zone even if the warehouse mirrors another
    confirm_drops: bool = False  # drop however many tables' folders are gone
    max_drop_share: float = DEFAULT_MAX_DROP_SHARE
    env: Settings = field(default_factory=Settings)  # the LAKEMIRROR_* variables, as read

    def __post_init__(self) -> None:
        checked_name(self.warehouse_name)  # before any table
        if isinstance(self.warehouse, ObjectLocation) and self.engine != "embedded":
            refuse_unreachable_warehouse(self.warehouse, self.engine, self.env.delta_jars)
        check_project(self.project_dir)

    @classmethod
    def given(cls, landing_zone: ZoneLocation, warehouse: WarehouseLocation,
              project_dir: Path | None = None, **options: Any) -> RunSettings:
        """The settings for locations as given, their links resolved once; the project is the
        one in the current directory by default, as for dbt. `options` are the other fields;
        `env` is read from the environment and the warehouse's name taken from it unless
        given; the engine is the target's, read from the project's profile unless given."""
        zone = landing_zone.resolve() if isinstance(landing_zone, Path) else landing_zone
        env = options["env"] = options.get("env") or read_settings()
        checked_name(options.setdefault("warehouse_name", env.warehouse_name))  # before files
        project = (project_dir or Path.cwd()).resolve()
        if "engine" not in options:
            options["engine"] = project_engine(
                check_project(project), options.get("target", "embedded"),
                profiles_dir(project, env.dbt_profiles_dir))
        return cls(landing_zone=zone,
                   warehouse=warehouse_location(warehouse, storage=env.storage),
                   project_dir=project, given_zone=landing_zone, **options)

    @cached_property
    def zone(self) -> ZoneDoor:
        """The only door to the landing zone (a local folder's or an object store's)."""
        return open_zone(self.landing_zone)

    @cached_property
    def layout(self) -> Warehouse:
        """Where the warehouse keeps each of its tables, and its storage, opened once."""
        return Warehouse(self.warehouse)


def check_project(project_dir: Path) -> Path:
    """`project_dir`, or ConfigError when it holds no dbt project."""
    if not (project_dir / "dbt_project.yml").is_file():
        raise ConfigError(f"no dbt_project.yml in {project_dir}",
                          hint="run lakemirror in your dbt project's folder, or pass "
                               "--project-dir (LAKEMIRROR_PROJECT_DIR); `lakemirror init DIR` "
                               "creates a project")
    return project_dir

"""lakemirror's dbt plugin (dbt-core imports each installed `dbt_*` module and sets up its
`plugins`): plain `dbt` stops at once, naming the fix, when the embedded engine is not running
(lakemirror.engine.plain_dbt)."""

from lakemirror.engine.plain_dbt import EngineCheck

plugins = [EngineCheck]

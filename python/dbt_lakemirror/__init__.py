"""lakemirror's dbt plugins (dbt-core imports each installed `dbt_*` module and sets up its
`plugins`): the project's link to lakemirror's dbt package is made or mended and dbt's jinja
reuses the code of strings it compiled before (lakemirror.project.dbt_plugin), and plain `dbt`
stops at once, naming the fix, when the embedded engine is not running
(lakemirror.engine.plain_dbt)."""

from lakemirror.engine.plain_dbt import EngineCheck
from lakemirror.project.dbt_plugin import CompiledTemplates, PackageLink

plugins = [PackageLink, CompiledTemplates, EngineCheck]

"""The user's dbt project: where lakemirror's dbt package and a project's profiles are, and
`lakemirror init`, which makes a project ready for lakemirror."""

from lakemirror.project.locate import dbt_package_dir, profiles_dir
from lakemirror.project.scaffold import init_project, project_name
from lakemirror.project.templates import forwarding_macros, lakemirror_block

__all__ = ["dbt_package_dir", "forwarding_macros", "init_project", "lakemirror_block",
           "profiles_dir", "project_name"]

"""Stand-ins for the lakemirror dbt package when sqlfluff renders models without an engine."""


def staged_changes(*args, **kwargs):
    """A mirror model's body compiles to a select of the staged changes."""
    return "select * from staged_changes"


def staged_history(*args, **kwargs):
    """A history model's body compiles to a select of the versions."""
    return "select * from staged_history"

"""Code generation: dbt models for mirrored tables."""

from lakemirror.codegen.history import (
    HISTORY_SUFFIX,
    HISTORY_VARIABLE,
    history_relation,
    retire_history_model,
    without_history_clashes,
    write_history_model,
)
from lakemirror.codegen.generated import MIRROR_FOLDER, Outcome
from lakemirror.codegen.models import MirrorModel, ModelConflictError, retire_model, write_model
from lakemirror.codegen.warehouses import (
    checked_name,
    read_warehouses,
)

__all__ = ["HISTORY_SUFFIX", "HISTORY_VARIABLE", "MIRROR_FOLDER", "MirrorModel",
           "ModelConflictError", "Outcome", "checked_name", "history_relation",
           "read_warehouses", "retire_history_model", "retire_model", "without_history_clashes",
           "write_history_model", "write_model"]

"""Code generation: dbt models for mirrored tables."""

from lakemirror.codegen.models import (
    MIRROR_FOLDER,
    MirrorModel,
    ModelConflictError,
    Outcome,
    retire_model,
    write_model,
)
from lakemirror.codegen.warehouses import read_warehouses, warehouse_names

__all__ = ["MIRROR_FOLDER", "MirrorModel", "ModelConflictError", "Outcome", "read_warehouses",
           "retire_model", "warehouse_names", "write_model"]

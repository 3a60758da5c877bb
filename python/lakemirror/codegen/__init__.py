"""Code generation: dbt models for mirrored tables."""

from lakemirror.codegen.models import MIRROR_FOLDER, MirrorModel, Outcome, retire_model, write_model

__all__ = ["MIRROR_FOLDER", "MirrorModel", "Outcome", "retire_model", "write_model"]

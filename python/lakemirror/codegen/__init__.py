"""Code generation: dbt models for mirrored tables."""

from lakemirror.codegen.models import MIRROR_FOLDER, MirrorModel, Outcome, write_model

__all__ = ["MIRROR_FOLDER", "MirrorModel", "Outcome", "write_model"]

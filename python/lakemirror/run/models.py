"""Generate the models of a run's staged tables from the metadata their ingest accepted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lakemirror.codegen import MirrorModel, write_history_model, write_model
from lakemirror.errors import CorruptTableError
from lakemirror.run.ingest import is_staged
from lakemirror.staging import IngestResult, StagingTable
from lakemirror.table_outcome import failed_ingest

if TYPE_CHECKING:
    from lakemirror.service import MirrorService


def generate_models(service: MirrorService, ingested: list[IngestResult]
                    ) -> list[IngestResult]:
    """Write or update the model of every staged table whose staged files are applied."""
    return [_generate_model(service, result)
            if is_staged(service, result.table.schema, result.table.name) and _applies(result)
            else result for result in ingested]


def _applies(result: IngestResult) -> bool:
    """Whether the table's staged files are applied: a failed table's too (it stops at its
    bad file, not before), unless its Delta log is damaged or its folder is never touched
    (a `problem` of the folder itself)."""
    return result.status != "failed" or (result.error_type != CorruptTableError.__name__
                                         and result.table.problem is None)


def _generate_model(service: MirrorService, result: IngestResult) -> IngestResult:
    """Write the table's model from metadata its ingest accepted (a failed table's from
    the metadata its staged files were staged with, never from a changed
    `_metadata.json`); a failure to write it fails this table alone, and a failed table
    keeps its first error."""
    project_dir = service.project_dir
    staging = StagingTable(service.layout.staging_path(result.table.schema, result.table.name))
    try:
        metadata = (result.metadata if result.status != "failed"
                    else staging.accepted_metadata())
        if metadata is None:
            return result
        model = MirrorModel(result.table.schema, result.table.name,
                            metadata.key_columns, metadata.conditional_column)
        outcomes = write_model(project_dir, model, warehouse=service.warehouse_names)
        for path, outcome in (outcomes | write_history_model(project_dir, model)).items():
            if outcome != "unchanged":
                service.progress(f"model {path.relative_to(project_dir)}: {outcome}")
    except Exception as error:  # one table's failure stays its own
        return (result if result.status == "failed"
                else failed_ingest(result.table, error, service.warehouse, result))
    return result

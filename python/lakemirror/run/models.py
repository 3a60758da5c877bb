"""Generate the models of a run's staged tables from the metadata their ingest accepted."""

from __future__ import annotations

from lakemirror.codegen import MirrorModel, write_history_model, write_model
from lakemirror.run.log import RunLog
from lakemirror.run.settings import RunSettings
from lakemirror.staging import IngestResult
from lakemirror.staging.opened import StagingTables
from lakemirror.table_outcome import failed_ingest


def generate_models(settings: RunSettings, log: RunLog, ingested: list[IngestResult],
                    opened: StagingTables) -> list[IngestResult]:
    """Write or update the model of every staged table (`opened`: the run's) whose staged
    files are applied."""
    return [_generate_model(settings, log, result, opened)
            if opened.is_staged(result.table.schema, result.table.name)
            and _applies(result) else result for result in ingested]


def _applies(result: IngestResult) -> bool:
    """Whether the table's staged files are applied: a failed table's too (it stops at its
    bad file, not before), unless its Delta log is damaged or its folder is never touched
    (a `problem` of the folder itself)."""
    return result.status != "failed" or (not result.damaged and result.table.problem is None)


def _generate_model(settings: RunSettings, log: RunLog, result: IngestResult,
                    opened: StagingTables) -> IngestResult:
    """Write the table's model from metadata its ingest accepted (a failed table's from
    the metadata its staged files were staged with, never from a changed
    `_metadata.json`); a failure to write it fails this table alone, and a failed table
    keeps its first error."""
    project_dir = settings.project_dir
    staging = opened.of(result.table.schema, result.table.name)
    try:
        metadata = (result.metadata if result.status != "failed"
                    else staging.accepted_metadata())
        if metadata is None:
            return result
        model = MirrorModel(result.table.schema, result.table.name,
                            metadata.key_columns, metadata.conditional_column)
        outcomes = write_model(project_dir, model, warehouse=settings.warehouse_name)
        for path, outcome in (outcomes | write_history_model(project_dir, model)).items():
            if outcome != "unchanged":
                log.progress(f"model {path.relative_to(project_dir)}: {outcome}")
    except Exception as error:  # one table's failure stays its own
        return (result if result.status == "failed"
                else failed_ingest(result.table, error, settings.warehouse, result,
                                   debug=settings.env.debug))
    return result

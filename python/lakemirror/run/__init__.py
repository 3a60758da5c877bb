"""A mirror run as its phases, read top to bottom in `MirrorService.run`: resolve the scope and
lock it (`scope`), retire dropped tables and heal returned ones (`retire`), ingest (`ingest`),
generate models (`models`), build with dbt (`build`), record the outcome and maintain the
tables (`record`)."""

"""A mirror run as its phases, read top to bottom in `MirrorService.run`: resolve the scope and
lock it (`scope`), retire dropped tables and heal returned ones (`retire`), ingest (`ingest`),
generate models (`models`), build with dbt (`build`), record the outcome (`record`) and
maintain the tables (`maintain`). Each phase takes the run's frozen `settings`, its `log`
(progress and warnings), plain data in and out, and the phases that run dbt take how to run
it (`dbt`)."""

"""Storage options a user configures beyond the standard environment variables: a JSON object in
LAKEMIRROR_STORAGE_OPTIONS, or in the file LAKEMIRROR_STORAGE_OPTIONS_FILE names (both may be
set: the variable's names win), read and checked at the edge into `StorageSettings.options`.
Its string values apply to every URL; a key that is a URL prefix (`"s3://bucket"`,
`"https://onelake.dfs.fabric.microsoft.com/Sales"`) holds an object of options for the locations
under it only, the longest prefix last, so a landing zone and a warehouse in different accounts
each get their own credentials.

Option names are object_store's, as delta-rs and obstore take them (`account_key`,
`aws_endpoint`, `allow_http`, `timeout`, ...)."""

from __future__ import annotations

from lakemirror.environment import StorageSettings


def configured_options(storage: StorageSettings, *urls: str) -> dict[str, str]:
    """The storage options `storage` configures for a location written as any of `urls`."""
    options = {name: value for name, value in storage.options.items() if isinstance(value, str)}
    scoped = sorted(((prefix, value) for prefix, value in storage.options.items()
                     if not isinstance(value, str)), key=lambda item: len(item[0]))
    for prefix, scoped_options in scoped:
        if any(_under(url, prefix) for url in urls):
            options.update(scoped_options)
    return options


def _under(url: str, prefix: str) -> bool:
    url, prefix = url.rstrip("/"), prefix.rstrip("/")
    return url == prefix or url.startswith(prefix + "/")

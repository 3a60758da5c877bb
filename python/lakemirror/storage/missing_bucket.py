"""A bucket or container that does not exist is a configuration error, not lakemirror's: the
stores answer every request in it with a code of their own (S3 and GCS `NoSuchBucket`, Azure
`ContainerNotFound`, ADLS Gen2 `FilesystemNotFound`), which obstore and delta-rs pass on in
their error's text."""

from __future__ import annotations

from lakemirror.errors import ConfigError

_CODES = ("NoSuchBucket", "ContainerNotFound", "FilesystemNotFound",
          "The specified bucket does not exist")


def is_missing_bucket(error: BaseException) -> bool:
    """Whether `error`, or an error it was raised from, says the bucket or container is absent."""
    seen: BaseException | None = error
    while seen is not None:
        if any(code in str(seen) for code in _CODES):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def missing_bucket_error(url: str, role: str) -> ConfigError:
    """The error for a request in `url` (the `role`'s location, or a place in it) answered
    with 'no such bucket or container'."""
    setting = {"warehouse": "--warehouse / LAKEMIRROR_WAREHOUSE",
               "landing zone": "--landing-zone / LAKEMIRROR_LANDING_ZONE"}[role]
    return ConfigError(
        f"the {role}'s bucket or container does not exist: {url}",
        hint=f"create the bucket or container, or correct its name in the {role}'s URL "
             f"({setting})")

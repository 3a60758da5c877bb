"""A bucket or container that does not exist is a configuration error, not lakemirror's: the
stores answer every request in it with a code of their own (S3 and GCS `NoSuchBucket`, Azure
`ContainerNotFound`, ADLS Gen2 `FilesystemNotFound`), which obstore and delta-rs pass on in
their error's text. It is read from the first request that fails, so a run whose bucket exists
makes no request to check it."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from lakemirror.errors import MissingBucketError

_CODES = ("NoSuchBucket", "ContainerNotFound", "FilesystemNotFound",
          "The specified bucket does not exist")
_SETTINGS = {"warehouse": "--warehouse / LAKEMIRROR_WAREHOUSE",
             "landing zone": "--landing-zone / LAKEMIRROR_LANDING_ZONE"}


def is_missing_bucket(error: BaseException) -> bool:
    """Whether `error`, or an error it was raised from, says the bucket or container is absent."""
    seen: BaseException | None = error
    while seen is not None:
        if any(code in str(seen) for code in _CODES):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def missing_bucket_error(url: str, role: str) -> MissingBucketError:
    """The error for a request in `url` (the `role`'s location, or a place in it, as a
    location's canonical URL) answered with 'no such bucket or container'."""
    noun, bucket, command = _bucket_and_fix(url)
    return MissingBucketError(
        f"{noun} {bucket} does not exist (the {role} {url})",
        url=url, noun=noun, bucket=bucket, role=role,
        hint=f"create the {noun} ({command}; lakemirror never creates one), or correct its "
             f"name in the {role}'s URL ({_SETTINGS[role]})")


def _bucket_and_fix(url: str) -> tuple[str, str, str]:
    """What holds `url` ("bucket", "container" or "workspace"), its name, and the usual
    command that creates it."""
    parts = urlsplit(url)
    if parts.scheme == "s3":
        return ("bucket", parts.netloc, f"e.g. `aws s3 mb s3://{parts.netloc}`, with "
                "`--endpoint-url` for an S3-compatible store")
    if parts.scheme == "gs":
        return "bucket", parts.netloc, f"e.g. `gcloud storage buckets create gs://{parts.netloc}`"
    if parts.scheme == "https":  # OneLake: the workspace, then the item
        return ("workspace", unquote(parts.path.split("/")[1]),
                "in Microsoft Fabric, with the item that holds the landing zone")
    container, _, host = parts.netloc.partition("@")
    account = host.split(".")[0] if host else "<account>"
    return ("container", container, f"e.g. `az storage container create --name {container} "
            f"--account-name {account}`")

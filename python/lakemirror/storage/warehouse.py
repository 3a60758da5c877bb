"""Where the warehouse is and how to touch it.

The warehouse is a local folder today. A URL (`s3://…`, `az://…`, `abfss://…`) is refused before
anything is written: taken for a relative path, it would become a local folder named `s3:`.
"""

from __future__ import annotations

import re
from pathlib import Path

from lakemirror.errors import ConfigError

SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")  # `s3:`; one letter would be a drive


def local_warehouse(given: str | Path) -> Path:
    """The warehouse folder `given` names; a URL, also one a Path has folded into `s3:/b/w`
    (a first part `scheme:`), is a ConfigError naming what works instead."""
    text = str(given)
    if SCHEME.fullmatch(Path(text).parts[0] if text else ""):
        raise ConfigError(
            f"the warehouse {text} is a URL: lakemirror keeps its warehouse in a local folder "
            "(object-store warehouses are not supported yet); nothing was written",
            hint="pass a local folder as --warehouse (LAKEMIRROR_WAREHOUSE), for example "
                 "--warehouse ./warehouse, or a folder where the bucket is mounted")
    return Path(text)

"""Storage outside the local disk: where a landing zone or warehouse lives (a folder or a URL),
the obstore store for a URL, its configured options, and keeping their secrets out of messages."""

from typing import TYPE_CHECKING

from lakemirror.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lakemirror.storage.location import Location, ObjectLocation, open_store, parse_location
    from lakemirror.storage.options import configured_options
    from lakemirror.storage.secrets import redact

__getattr__ = lazy_exports(__name__, {
    "location": ("Location", "ObjectLocation", "open_store", "parse_location"),
    "options": ("configured_options",),
    "secrets": ("redact",),
})
__all__ = ["Location", "ObjectLocation", "configured_options", "open_store", "parse_location",
           "redact"]

"""The object-store servers the tests run against accept what lakemirror asks of a store: put,
list under a prefix, get, and a conditional put that refuses to overwrite."""

from __future__ import annotations

import obstore
import pytest
from obstore.exceptions import AlreadyExistsError


def test_server_puts_lists_and_gets_under_a_fresh_prefix(object_store_server):
    prefix = object_store_server.fresh_prefix()
    store = object_store_server.store(prefix)
    obstore.put(store, "Orders/_metadata.json", b'{"keyColumns": ["id"]}', mode="create")
    listed = [entry["path"] for batch in obstore.list(store) for entry in batch]
    assert listed == ["Orders/_metadata.json"]
    assert obstore.get(store, "Orders/_metadata.json").bytes() == b'{"keyColumns": ["id"]}'
    with pytest.raises(AlreadyExistsError):
        obstore.put(store, "Orders/_metadata.json", b"{}", mode="create")
    assert object_store_server.url(prefix).endswith(f"://lakemirror/{prefix}")
    assert prefix != object_store_server.fresh_prefix()

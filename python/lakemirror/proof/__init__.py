"""Proving a mirror (`lakemirror verify`: its tables against a replay of their staged changes)
and repairing one (`lakemirror resync`: a source snapshot applied as one batch of changes)."""

"""Preloaded by the kill matrix's fork server: one small chat and import on mongomock, so every process forked from
it starts with the offline model's data already loaded (a child then takes ~1 s, not ~15 s)."""

from _kill_scenarios import reference_chat, reference_import

reference_chat(0, True)
reference_import(0)

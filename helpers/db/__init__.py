"""Plumbing: where memory lives: sessions, logs and memories collections, and the local database server.

You can skip this package. `store.py` opens your MongoDB (`MONGODB_URI`), a local SecantusDB server started by
`server.py` (with `instance.py` and `processes.py`), or mongomock with a warning; its log primitives are `logs.py`, the checks
every query passes `checks.py`; `redact.py` shows a URI without its secrets;
`consistency.py` checks a session document against its logs.
"""

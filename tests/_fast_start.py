"""A pytest plugin run.py loads first (`-p tests._fast_start`, before nbval): import `jsonschema` without its optional IRI
format checker, as helpers.offline.rules_forms.jsonschema_module does for the stand-in. nbval imports nbformat, which
imports jsonschema, whose checker package (rfc3987_syntax, installed for Jupyter) builds a lark grammar at import:
1.4 s in the controller and in every worker, for a format no notebook schema uses. A later `import rfc3987_syntax`
works as usual."""

from __future__ import annotations

from helpers.offline.rules_forms import jsonschema_module

jsonschema_module()

"""What a process pays to import the package: the offline model loads nothing heavy it may never use.

Every notebook kernel and every terminal-chat process imports helpers.llm; the suite starts dozens of them. `jsonschema`
is imported only when a request carries a schema, and then without the optional IRI checker whose package builds a
grammar for over a second at import (helpers.offline.rules_forms.jsonschema_module)."""

import os
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent(
    """
    import sys
    import anthropic
    import helpers.llm
    from helpers.llm import get_client

    assert "jsonschema" not in sys.modules, "importing helpers.llm imported jsonschema"
    client = get_client()
    bad = {"name": "t", "description": "d", "input_schema": {"type": "object", "properties": {"n": {"type": 7}}}}
    try:
        client.messages.create(model="claude-haiku-4-5", max_tokens=20, tools=[bad],
                               messages=[{"role": "user", "content": "hi"}])
        raise SystemExit("an invalid input_schema was served")
    except anthropic.BadRequestError as err:
        assert "JSON schema is invalid" in err.message, err.message
    assert "jsonschema" in sys.modules and "rfc3987_syntax" not in sys.modules
    import rfc3987_syntax  # still importable by anyone else in the process
    print("ok")
    """
)


@pytest.mark.slow  # a fresh interpreter (seconds): the full set runs it
def test_helpers_llm_imports_no_jsonschema_and_a_schema_check_skips_the_iri_grammar():
    env = {**os.environ, "ANTHROPIC_API_KEY": ""}  # the offline model
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]

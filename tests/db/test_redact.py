"""helpers.db.redact: connection strings shown without any part of a secret (issue 11, item 6)."""

from __future__ import annotations

from urllib.parse import quote_plus

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from helpers.config import describe, load_settings
from helpers.db.redact import redact_uri
from helpers.db.store import StoreUnavailable, open_store


def fragments(secret: str, size: int = 4) -> list[str]:
    """Every `size`-character piece of `secret` (a leak of any of them is a leak)."""
    return [secret[i : i + size] for i in range(max(1, len(secret) - size + 1))]


def assert_hidden(shown: str, *secrets: str) -> None:
    for secret in secrets:
        for piece in fragments(secret):
            assert piece not in shown, f"{piece!r} of a secret shows in {shown!r}"


def test_plain_credentials_are_hidden_and_hosts_kept():
    shown = redact_uri("mongodb://bob:hunter2secret@db1.example.com:27017,db2.example.com/app?replicaSet=rs0")
    assert_hidden(shown, "hunter2secret")
    assert "bob" not in shown and "db1.example.com:27017" in shown and "db2.example.com" in shown
    assert "replicaSet=rs0" in shown


def test_a_password_with_an_unescaped_at_leaks_nothing():
    """The old split at the first '@' printed the password's tail: mongodb://***@tPASS@host."""
    for uri in (
        "mongodb://bob:s3cr@tPASSWORD@db.example.com:27017/app",
        "mongodb://bob:pa@ss@w0rdXYZ@db.example.com",
        "mongodb+srv://bob:s3cr@tPASSWORD@cluster0.example.net/?retryWrites=true",
    ):
        shown = redact_uri(uri)
        assert_hidden(shown, "s3cr@tPASSWORD", "pa@ss@w0rdXYZ", "bob:")
        assert shown.startswith(uri.split("://")[0] + "://")


def test_a_password_with_a_slash_or_question_mark_leaks_nothing():
    for uri in (
        "mongodb://bob:12/secretTail@db.example.com",
        "mongodb://bob:12?x=secretTail@db.example.com",
        "mongodb://bob:pa/secretTail@db.example.com:27017",
    ):
        assert_hidden(redact_uri(uri), "secretTail", "bob:12", "bob:pa")


@pytest.mark.parametrize(
    "option, secret",
    [
        ("authMechanismProperties=AWS_SESSION_TOKEN:", "FQoGZXIvYXdzEJr1TOKEN"),
        ("tlsCertificateKeyFilePassword=", "zq8Wv2mNp"),
        ("authmechanismproperties=AWS_SESSION_TOKEN:", "lowerCaseTOKEN99"),
        ("password=", "optionS3cretVal"),
    ],
)
def test_secrets_in_the_query_string_are_hidden(option, secret):
    uri = f"mongodb://db.example.com:27017/?authMechanism=MONGODB-AWS&{option}{secret}&tls=true"
    shown = redact_uri(uri)
    assert_hidden(shown, secret)
    assert "authMechanism=MONGODB-AWS" in shown and "tls=true" in shown and "db.example.com:27017" in shown


def test_an_escaped_password_is_hidden_in_every_spelling():
    password = "p@ss:w/rd?x=1"
    uri = f"mongodb://{quote_plus('bob')}:{quote_plus(password)}@db.example.com/"
    shown = redact_uri(uri)
    assert_hidden(shown, quote_plus(password), password)


def test_not_a_mongodb_uri_shows_nothing_of_it():
    assert_hidden(redact_uri("postgres://bob:topsecret@db"), "topsecret")
    assert_hidden(redact_uri("bob:topsecret@db"), "topsecret")


@hsettings(max_examples=200, deadline=None)
@given(
    user=st.text(min_size=1, max_size=12),
    password=st.text(min_size=4, max_size=24),
    host=st.from_regex(r"[a-z][a-z0-9]{0,10}(\.[a-z]{2,5})?", fullmatch=True),
    escape=st.booleans(),
    tail=st.sampled_from(["", "/", "/app", "/?tls=true", "/app?replicaSet=rs0&w=majority"]),
)
def test_no_four_character_piece_of_a_password_is_ever_shown(user, password, host, escape, tail):
    userinfo = f"{quote_plus(user)}:{quote_plus(password)}" if escape else f"{user}:{password}"
    shown = redact_uri(f"mongodb://{userinfo}@{host}{tail}")
    safe = {piece for piece in fragments(password) if piece in f"mongodb://{host}{tail}"}  # also in the host part
    for piece in set(fragments(password)) | set(fragments(quote_plus(password))):
        if piece not in safe and not any(piece in s for s in (f"{host}{tail}", "mongodb://", "***")):
            assert piece not in shown, (piece, shown)


def test_describe_and_store_errors_use_the_redaction():
    uri = "mongodb://bob:s3cr@tPASSWORD@127.0.0.1:1/?authMechanismProperties=AWS_SESSION_TOKEN:tok3nVALUE"
    line = describe(load_settings({"MONGODB_URI": uri}))
    assert_hidden(line, "s3cr@tPASSWORD", "tok3nVALUE")
    with pytest.raises(StoreUnavailable) as err:
        open_store(load_settings({"MONGODB_URI": uri}))
    assert "MONGODB_URI" in str(err.value)
    assert_hidden(str(err.value), "s3cr@tPASSWORD", "tok3nVALUE")


@pytest.mark.parametrize(
    "uri, secret",
    [
        ("mongodb://alice:pa@ss/w0rdTAIL@db.example.com:27017/app", "pa@ss/w0rdTAIL"),
        ("mongodb://alice:s3cr@tHOSTISH/x@127.0.0.1:1/?serverSelectionTimeoutMS=200", "s3cr@tHOSTISH/x"),
        ("mongodb+srv://alice:pw@evil.example/zz@cluster0.example.net/", "pw@evil.example/zz"),
    ],
)
def test_the_drivers_error_text_never_shows_the_password_either(uri, secret, monkeypatch):
    """Issue 20: a password with '@' and '/' was redacted in our message but the driver's appended text (and its
    DNS lookup of the password's tail as a host) still showed part of it; such a URI never reaches the driver."""
    import pymongo

    import helpers.db.store as store_mod

    looked_up = []
    monkeypatch.setattr(store_mod, "MongoClient", lambda *a, **k: looked_up.append(a) or pymongo.MongoClient(*a, **k))
    settings = load_settings({}).with_(mongodb_uri=uri)
    with pytest.raises(StoreUnavailable) as info:
        open_store(settings)
    assert_hidden(str(info.value), secret, "alice:")
    assert looked_up == [] and "percent-encode" in str(info.value)


def test_a_drivers_message_is_scrubbed_of_every_credential_piece():
    from helpers.db.redact import scrub_secrets

    uri = "mongodb://alice:s3cr3tPW@db.example.com/"
    text = "auth failed for alice with s3cr3tPW at db.example.com"
    assert_hidden(scrub_secrets(text, uri), "s3cr3tPW") and "db.example.com" in scrub_secrets(text, uri)

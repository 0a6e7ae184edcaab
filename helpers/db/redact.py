"""Plumbing: show a MongoDB connection string without any part of its secrets, parsed by the driver's own URI parser."""

from __future__ import annotations

import re

from pymongo import uri_parser

__all__ = ["redact_uri", "scrub_secrets", "HIDDEN"]

HIDDEN = "***"
_SCHEMES = ("mongodb", "mongodb+srv")
# Options whose values are never secret and help a reader see what is configured; every other value is hidden
# (passwords, authMechanismProperties such as AWS_SESSION_TOKEN, key-file passwords, file paths, unknown options).
_SHOWN_OPTIONS = frozenset(
    name.lower()
    for name in (
        "appName",
        "authMechanism",
        "authSource",
        "compressors",
        "connectTimeoutMS",
        "directConnection",
        "heartbeatFrequencyMS",
        "journal",
        "loadBalanced",
        "localThresholdMS",
        "maxConnecting",
        "maxIdleTimeMS",
        "maxPoolSize",
        "maxStalenessSeconds",
        "minPoolSize",
        "readConcernLevel",
        "readPreference",
        "replicaSet",
        "retryReads",
        "retryWrites",
        "serverSelectionTimeoutMS",
        "socketTimeoutMS",
        "srvMaxHosts",
        "srvServiceName",
        "ssl",
        "timeoutMS",
        "tls",
        "tlsAllowInvalidCertificates",
        "tlsAllowInvalidHostnames",
        "tlsInsecure",
        "uuidRepresentation",
        "w",
        "waitQueueTimeoutMS",
        "wTimeoutMS",
        "zlibCompressionLevel",
    )
)


def _host(host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
    return shown if port is None else f"{shown}:{port}"


def _options(opts: str) -> str:
    """The query string again (names as written), with every value not in `_SHOWN_OPTIONS` replaced by ***."""
    uri_parser.split_options(opts, validate=False, warn=False, normalize=False)  # raises if the driver would
    parts = []
    for pair in re.split("[&;]", opts):  # the driver's two separators
        name, _, value = pair.partition("=")
        parts.append(f"{name}={value if name.lower() in _SHOWN_OPTIONS else HIDDEN}")
    return "&".join(parts)


def redact_uri(uri: str) -> str:
    """`uri` with user, password and secret options hidden: `mongodb://***@host:27017/db?tls=true&x=***`.

    The string is split exactly as pymongo splits it (its `parse_userinfo`, `split_hosts`, `split_options`; no
    DNS lookup for mongodb+srv). Anything the driver would reject, e.g. a password with an unescaped "@", "/"
    or "?", shows only the scheme: where such a password ends cannot be known, so no part of it is printed.
    """
    scheme, sep, rest = uri.strip().partition("://")
    if not sep or scheme.lower() not in _SCHEMES:
        return HIDDEN
    unusable = f"{scheme}://{HIDDEN}"
    host_and_db, _, opts = rest.partition("?")
    host_part, slash, database = host_and_db.partition("/")
    credentials = "@" in host_part
    try:
        if credentials:
            userinfo, _, hosts = host_part.rpartition("@")
            uri_parser.parse_userinfo(userinfo)  # raises for an unescaped "@", ":" or "%" in user or password
        else:
            hosts = host_part
        if "@" in database or "@" in opts:
            return unusable  # a credential cut at a "/" or "?" it should have escaped: its tail is here
        nodes = uri_parser.split_hosts(hosts, default_port=None)
        options = _options(opts) if opts else ""
    except Exception:  # noqa: BLE001 - any parser error means the string cannot be shown safely
        return unusable
    shown = f"{scheme}://{HIDDEN + '@' if credentials else ''}{','.join(_host(h, p) for h, p in nodes)}"
    if slash:
        shown += f"/{database}"
    return f"{shown}?{options}" if options else shown


def scrub_secrets(text: str, uri: str) -> str:
    """`text` (e.g. a driver's error message) with every piece of `uri`'s credentials hidden: the whole text before
    the authority's last "@" and each of its pieces split at ":", "@", "/", "?" (a password with an unescaped "@"
    makes the driver read part of it as a host name, which it then prints)."""
    _, sep, rest = uri.strip().partition("://")
    authority = rest if sep else uri
    secret = authority[: authority.rfind("@")] if "@" in authority else ""
    pieces = {secret, *re.split(r"[:@/?&=;,]", secret)}
    if not sep:  # not a connection string at all (a bare password?): none of it may be shown, in any case
        pieces.add(uri.strip())
    for piece in sorted((p for p in pieces if len(p) >= 3), key=len, reverse=True):
        text = re.sub(re.escape(piece), HIDDEN, text, flags=re.IGNORECASE)  # the driver lower-cases host names
    return text

"""``postgresql://`` locations: what crewpoint shows and stores of one, and what it connects with.

A location is a libpq URL, ``postgresql://user@host:port/database`` (``postgres://`` too), with one parameter of
crewpoint's own: ``?schema=NAME`` picks the PostgreSQL schema that holds the store (default ``crewpoint``), so
one database can hold several stores. Every other parameter goes to libpq as it is (``sslmode``, ``host`` for a
unix socket, ``service`` for a service file, ...).

The password is not part of a store's name. It comes from the environment libpq reads (``PGPASSWORD``,
``~/.pgpass``, a service file); a password written into the URL is used to connect from this process but is
dropped from the store's name, so it never reaches a checkpoint, a run record, a log line or the screen.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from crewpoint.providers import is_postgres_location
from crewpoint.providers.masking import mask_location

DEFAULT_SCHEMA = "crewpoint"
SCHEMA_RE = re.compile(r"[a-z_][a-z0-9_]{0,47}")
_SECRET_PARAMS = ("password",)


@dataclass(frozen=True, slots=True)
class PgLocation:
    """A parsed location. ``name`` is the store's name (no password); ``conninfo`` connects (maybe with one)."""

    name: str
    server: str
    conninfo: str
    schema: str
    password: str | None

    @property
    def channel(self) -> str:
        """The LISTEN/NOTIFY channel of the store (notifications are per database already)."""
        return f"crewpoint.{self.schema}"

    @property
    def lock_key(self) -> int:
        """The advisory-lock key of the store: writers share it, deletes and prunes hold it alone."""
        digest = hashlib.sha256(f"crewpoint:{self.schema}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def scrub(self, text: str) -> str:
        """``text`` with the password (if any) masked, for messages that quote a driver's error."""
        return text.replace(self.password, "***") if self.password else text


class BadLocation(ValueError):
    pass


def parse(location: str) -> PgLocation:
    """Split a ``postgresql://`` location (a ``#id`` already cut off) into its parts.

    A location that does not parse is a :class:`BadLocation` quoting it with its credentials masked."""
    try:
        return _parse(location)
    except BadLocation:
        raise
    except ValueError:
        raise BadLocation(
            f"{mask_location(location)} is not a postgresql:// URL that parses: percent-encode '/', '#', '?' and '@'"
            " in a password (%2F, %23, %3F, %40) or give it through PGPASSWORD"
        ) from None


def _parse(location: str) -> PgLocation:
    if not is_postgres_location(location):
        raise BadLocation(f"{location!r} is not a postgresql:// location")
    parts = urlsplit(location)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = DEFAULT_SCHEMA
    kept: list[tuple[str, str]] = []
    password = unquote(parts.password) if parts.password is not None else None
    for key, value in query:
        if key == "schema":
            schema = value
        elif key in _SECRET_PARAMS:
            password = value
        else:
            kept.append((key, value))
    if not SCHEMA_RE.fullmatch(schema):
        raise BadLocation(
            f"invalid schema {schema!r} in a postgresql:// location: use lower-case letters, digits and '_'"
            " (at most 48, not starting with a digit)"
        )
    user = f"{quote(unquote(parts.username), safe='')}@" if parts.username else ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address
    netloc = user + quote(unquote(host), safe="[]:") + (f":{parts.port}" if parts.port else "")
    path = parts.path or ""
    server = f"postgresql://{netloc}{path}" + (f"?{urlencode(kept)}" if kept else "")
    named = [*kept, ("schema", schema)] if schema != DEFAULT_SCHEMA else kept
    name = f"postgresql://{netloc}{path}" + (f"?{urlencode(named)}" if named else "")
    conninfo = server
    if password is not None:
        secret_netloc = (
            (f"{quote(unquote(parts.username or ''), safe='')}:{quote(password, safe='')}@") + netloc.partition("@")[2]
            if parts.username
            else f":{quote(password, safe='')}@{netloc}"
        )
        conninfo = f"postgresql://{secret_netloc}{path}" + (f"?{urlencode(kept)}" if kept else "")
    return PgLocation(name, server, conninfo, schema, password)


def masked(location: str) -> str:
    """``location`` as it may be shown: a postgresql:// URL without its password, anything else as it is."""
    if not is_postgres_location(location):
        return location
    base, sep, fragment = location.partition("#")
    try:
        return parse(base).name + sep + fragment
    except (BadLocation, ValueError):
        return "postgresql://***"

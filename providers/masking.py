"""Showing a location without its credentials, also when it does not parse.

A URL's password can hold characters that end its part of the URL (``/``, ``#``, ``?``, ``@``) when it is not
percent-encoded; a parser then takes part of the password for a host, a port or a path and quotes it in its error.
:func:`mask_location` does not parse: everything between ``://`` and the last ``@`` after the user name is
credentials, and so is the value of a ``password=`` parameter. Every message that quotes a location that failed to
parse goes through it.
"""

from __future__ import annotations

import re

MASK = "***"
_PASSWORD_PARAM = re.compile(r"(?i)((?:^|[?&;\s])password=)[^&;\s]*")


def mask_location(location: str) -> str:
    """``location`` with its credentials replaced by ``***``: ``scheme://user:***@rest`` for a URL with a password
    (or ``scheme://***@rest`` when even the user name is unclear), a ``password=`` value masked; a path as it is."""
    scheme, sep, rest = location.partition("://")
    if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.\-]*", scheme):
        return location
    userinfo, at, after = rest.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        if any(c in user for c in "/?#"):
            rest = f"{MASK}@{after}"
        elif colon:
            rest = f"{user}:{MASK}@{after}"
    return f"{scheme}://{_PASSWORD_PARAM.sub(lambda m: m.group(1) + MASK, rest)}"


def mask_in(text: str, location: str) -> str:
    """``text`` (a message) with ``location`` and every piece of its password replaced by the masked location."""
    masked = mask_location(location)
    if masked == location:
        return text
    text = text.replace(location, masked)
    rest = location.partition("://")[2]
    userinfo = rest.rpartition("@")[0]
    secret = userinfo.partition(":")[2] if ":" in userinfo else ""
    pieces = sorted({p for p in re.split(r"[/#?@]", secret) if len(p) >= 2} | ({secret} if secret else set()), key=len)
    for piece in reversed(pieces):
        text = text.replace(piece, MASK)
    return text

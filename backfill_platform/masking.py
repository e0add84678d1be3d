"""Secrets out of every message: the one function that masks a text before it is printed, logged or stored.

An error's text reaches the terminal and, in a run, Dagster's event log (a failed step's exception is
stored with its causes). Whatever may hold a URL, a header or a setting goes through `mask` before it is
raised, not only before it is printed:

- a URL's userinfo (`scheme://user:password@host`, `scheme://token@host`) becomes `scheme://***@host`;
- an `Authorization` header's value and a `Bearer`/`Basic` credential become `***`, and so does the value
  of a `password=`, `token=`, `credential=` or `secret=` pair (a JDBC URL's query, a Spark setting);
- the value of every environment variable whose name says it holds a secret (`…_TOKEN`, `…_PASSWORD`,
  `…_CREDENTIAL`, `…SECRET…`: the catalog's, the named archive catalogs', AWS's) is masked wherever it
  appears, also in pieces (a value holding a line break is shown by Python as two pieces around `\\n`),
  and so is each secret the caller names.

`control_characters_refused` checks a secret setting before it is used: one holding a line break or another
control character (a secret file read as is) would otherwise be echoed by `Invalid header value b'…'`; the
refusal names the variable, never the value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from contextlib import suppress

MASK = "***"

# `scheme://userinfo@`: everything between `//` and the last `@` before the host (no `/`, `?`, `#`, space).
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s@'\"]*(?:@[^/?#\s@'\"]*)*@")
# An Authorization header's value, as a dict, JSON or an HTTP line shows it (quoted or not).
_AUTHORIZATION = re.compile(
    r"(?P<key>(?i:proxy-)?(?i:authorization)['\"]?\s*[:=]\s*)(?P<quote>b?['\"]?)[^'\"\r\n]*"
)
_SCHEME_CREDENTIAL = re.compile(r"(?P<key>\b(?:Bearer|Basic|BEARER|BASIC)\s+)[^\s'\",;}\]]+")
# `password=…`, `token=…`, `credential=…`, `secret=…` (a URL query, a JDBC or Spark setting).
_SECRET_PAIR = re.compile(
    r"(?P<key>(?i:\w*(?:password|passwd|pwd|token|credential|secret)\w*)['\"]?\s*=\s*)[^&\s'\",;)]+"
)
# Environment variables whose values are secrets, by name.
_SECRET_NAME = re.compile(r"(?i).*(?:TOKEN|PASSWORD|PASSWD|SECRET|CREDENTIAL|API_KEY|PRIVATE_KEY).*")
# Shorter pieces of a secret are left alone: masking every "true" or "lake" in a message would hide it.
MIN_PIECE = 6
_PIECES = re.compile(r"[\x00-\x20\x7f:]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the environment variables whose names say they hold a secret."""
    environ = os.environ if environ is None else environ
    return [value for name, value in environ.items() if value and _SECRET_NAME.fullmatch(name)]


def _pieces(secrets: Iterable[str]) -> list[str]:
    """Each secret whole, stripped and cut at control characters, spaces and `:` (a `client_id:secret`),
    longest first so that a piece inside another is masked as part of it."""
    found: set[str] = set()
    for secret in secrets:
        if not secret:
            continue
        for piece in (secret, secret.strip(), *_PIECES.split(secret)):
            if len(piece) >= MIN_PIECE:
                found.add(piece)
                found.add(repr(piece)[1:-1])  # as Python shows it inside a repr (`\n`, `\\`)
    return sorted(found, key=len, reverse=True)


def mask(text: object, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret it may hold replaced by `***` (see the module docstring)."""
    masked = str(text)
    for piece in _pieces([*secrets, *secret_values()]):
        masked = masked.replace(piece, MASK)
    masked = _USERINFO.sub(rf"\g<scheme>{MASK}@", masked)
    masked = _AUTHORIZATION.sub(rf"\g<key>\g<quote>{MASK}", masked)
    masked = _SCHEME_CREDENTIAL.sub(rf"\g<key>{MASK}", masked)
    return _SECRET_PAIR.sub(rf"\g<key>{MASK}", masked)


def has_userinfo(url: str) -> bool:
    """Whether `url` carries credentials before its host (`scheme://user:password@host`)."""
    return _USERINFO.match(url.strip()) is not None


def control_characters_refused(variable: str, value: str | None) -> str | None:
    """The refusal of a setting holding a control character (a line break, a tab…), naming `variable` and
    never the value; None when it holds none."""
    if value is None or not _CONTROL.search(value):
        return None
    return (
        f"{variable} holds a control character (a line break, say, as in a secret file read as is): "
        "remove it (its value is not shown)"
    )


def mask_exception(error: BaseException) -> BaseException:
    """`error`, its causes and contexts with their messages masked in place (their tracebacks kept: a
    traceback shows source lines, not values), for an error re-raised where it may be printed or stored."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current)
        masked = mask(text)
        if masked != text:
            with suppress(AttributeError, TypeError):  # a type that will not take new arguments
                current.args = (masked,)
            if str(current) != masked and hasattr(current, "message"):
                with suppress(AttributeError, TypeError):
                    current.message = masked  # some types print `message`, not `args`
        current = current.__cause__ or current.__context__
    return error

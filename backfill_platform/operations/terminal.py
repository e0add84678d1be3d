"""Text from data, made safe to show on a terminal.

File names, spec values and error messages come from the archive and the specs, not from the platform:
a name holding an ANSI escape would recolour (or rewrite) the terminal, one holding `[bold red]` would be
read as rich markup and shown under another name. Every such piece is passed through `shown` before it
is printed: control characters become visible escapes, markup is escaped.
"""

from __future__ import annotations

import unicodedata

from rich.markup import escape

_KEPT = "\n\t"


def visible(text: object) -> str:
    """`text` with control and format characters (ESC, CR, BEL, bidi overrides…) as `\\x..`/`\\u....`."""
    out = []
    for char in str(text):
        if char in _KEPT or unicodedata.category(char) not in ("Cc", "Cf", "Zl", "Zp"):
            out.append(char)
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def shown(text: object) -> str:
    """`text` for a rich console: control characters visible and rich markup escaped."""
    return escape(visible(text))

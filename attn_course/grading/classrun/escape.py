"""Learner text made safe for where the grader writes it: a terminal, a CSV cell, an HTML page.

Everything a learner controls (student and file names, exception messages, hints that quote
them, cell sources) passes through one of these before it is printed or written:

* ``clean(text)``: control characters (escape sequences, carriage returns, backspaces, the
  bidirectional overrides that reorder a line, a file name's undecodable bytes) become
  visible ``\\x1b``-style escapes, so a name or message cannot move the cursor, recolour or
  redraw the instructor's terminal; newlines and tabs are kept only with ``lines=True``;
* ``csv_cell(value)``: ``clean``, then OWASP's rule against formula injection: a text cell
  that starts with ``= + - @``, a tab or a carriage return gets a leading ``'``;
* ``html_text(text)``: ``clean(lines=True)``, then HTML-escaped, quotes included.
"""

from __future__ import annotations

import html
import unicodedata

__all__ = ["clean", "csv_cell", "html_text"]

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# control, format (bidirectional overrides), line/paragraph separators, and the surrogates
# that stand for a file name's undecodable bytes (they cannot be written as UTF-8)
_HIDDEN = ("Cc", "Cf", "Zl", "Zp", "Cs")


def _visible(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object, lines: bool = False) -> str:
    """``text`` with every control or format character shown as an escape, e.g. ``\\x1b``.

    ``lines=True`` keeps newlines and tabs (a cell's source, a multi-line message).
    """
    kept = "\n\t" if lines else ""
    return "".join(
        _visible(char) if char not in kept and unicodedata.category(char) in _HIDDEN else char
        for char in str(text)
    )


def csv_cell(value: object) -> object:
    """A CSV cell: numbers as they are, text cleaned and defused against formula injection."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    text = str(value)
    text = "'" + text if text.startswith(_FORMULA_START) else text  # OWASP: before clean()
    return clean(text)


def html_text(text: object) -> str:
    """Text for an HTML page: cleaned (newlines kept) and escaped, quotes included."""
    return html.escape(clean(text, lines=True), quote=True)

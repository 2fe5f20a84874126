"""Long tokens (e-mail addresses, URLs, IP addresses) that may wrap only where a reader expects a break,
and short references that may not wrap at all."""
from __future__ import annotations

import re

from markupsafe import Markup, escape

from . import dashboard

_PARTS = re.compile(r"([@./:_])")


@dashboard.app_template_filter("wrap_at_parts")
def wrap_at_parts(text: str | None) -> Markup:
    """The text escaped, with a line-break opportunity (<wbr>) before each @ and after each . / :
    and _: a narrow cell wraps "ada.lovelace@example.com" or a URL at its parts, never inside a
    word (cells use overflow-wrap: break-word, which breaks a word only when nothing else fits)."""
    if not text:
        return Markup("")
    out = []
    for part in _PARTS.split(str(text)):
        if part == "@":
            out.append(Markup("<wbr>@"))
        elif part and _PARTS.fullmatch(part):
            out.append(escape(part) + Markup("<wbr>"))
        else:
            out.append(escape(part))
    return Markup("").join(out)


# A reference up to this long is shown in one piece: "ORDER-1005" broken at its hyphen reads as two
# references. A longer one wraps anywhere, as its cell (td.ref) lets it.
WHOLE_REFERENCE = 16


@dashboard.app_template_filter("reference")
def reference(text: str | None) -> Markup:
    """A merchant's reference for a table cell: in one piece when short, as it is otherwise."""
    if text and len(text) <= WHOLE_REFERENCE:
        return Markup('<span class="nowrap">') + escape(text) + Markup("</span>")
    return escape(text or "")

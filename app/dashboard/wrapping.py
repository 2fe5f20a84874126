"""Long tokens (e-mail addresses, hosts) that may wrap only where a reader expects a break."""
from __future__ import annotations

import re

from markupsafe import Markup, escape

from . import dashboard

_BREAKS = re.compile(r"([@.])")


@dashboard.app_template_filter("wrap_email")
def wrap_email(text: str | None) -> Markup:
    """The text escaped, with a line-break opportunity (<wbr>) before each @ and after each dot:
    a narrow cell wraps "ada.lovelace@example.com" at its parts, never inside a word."""
    if not text:
        return Markup("")
    parts = _BREAKS.split(str(text))
    out = []
    for part in parts:
        if part == "@":
            out.append(Markup("<wbr>@"))
        elif part == ".":
            out.append(Markup(".<wbr>"))
        else:
            out.append(escape(part))
    return Markup("").join(out)

"""Lists and alerts in the templates carry only classes the stylesheets define: a class with no
rule left the batch page's and an API request's facts as an unstyled, indented definition list,
and the receiver check's failure (alert-danger, where the stylesheet has alert-error) as plain
text with no colour."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIST_CLASSES = re.compile(r'<(?:dl|ul|ol)\b[^>]*?class="([^"{}]+)"')
# A variant of a styled family (alert-error, badge-captured); a computed one ({{ ... }}) is skipped.
VARIANTS = re.compile(r'\bclass="[^"]*?\b((?:alert|badge|button)-[\w-]+)')


def _stylesheets() -> str:
    return "".join(path.read_text() for path in (ROOT / "static" / "css").glob("*.css"))


def test_every_class_of_a_list_in_a_template_has_a_rule():
    css = _stylesheets()
    missing = sorted({f"{path.relative_to(ROOT)}: .{name}"
                      for path in (ROOT / "templates").rglob("*.html")
                      for classes in LIST_CLASSES.findall(path.read_text())
                      for name in classes.split()
                      if not re.search(rf"\.{re.escape(name)}(?![\w-])", css)})
    assert missing == []


def test_every_alert_badge_or_button_variant_in_a_template_has_a_rule():
    css = _stylesheets()
    missing = sorted({f"{path.relative_to(ROOT)}: .{name}"
                      for path in (ROOT / "templates").rglob("*.html")
                      for name in VARIANTS.findall(path.read_text())
                      if not re.search(rf"\.{re.escape(name)}(?![\w-])", css)})
    assert missing == []

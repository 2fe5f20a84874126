"""Every action the code base writes to the audit log has words for the audit page, and the page's
other texts read as words too (detail labels, e-mails that wrap only at their parts)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.dashboard.audit import ACTION_WORDS, action_words, detail_label
from app.dashboard.wrapping import wrap_at_parts

APP = Path(__file__).resolve().parents[2] / "app"


def written_actions() -> dict[str, str]:
    """Every action code passed to an `audit(...)` call in app/, with where it is written. An
    action that is not a literal (an f-string, a variable) is reported as such, so it cannot hide."""
    found = {}
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "audit"):
                continue
            action = next((k.value for k in node.keywords if k.arg == "action"),
                          node.args[1] if len(node.args) > 1 else None)
            where = f"{path.relative_to(APP.parent)}:{node.lineno}"
            if action is None:
                continue  # a call that names no action is not an audit write (audit views)
            texts = [n for n in ast.walk(action) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            if isinstance(action, ast.JoinedStr) or not texts:
                found[f"<not a literal at {where}>"] = where
            for text in texts:
                found[text.value] = where
    return found


def test_every_action_written_in_app_has_words():
    written = written_actions()
    assert len(written) >= 40  # the scan finds the audit writes (refunds, users, providers, ...)
    assert {action: where for action, where in written.items() if action not in ACTION_WORDS} == {}


def test_the_words_name_no_action_that_is_not_written():
    assert set(ACTION_WORDS) - set(written_actions()) == set()


@pytest.mark.parametrize("action, words", [
    ("user.two_factor_enable", "Two-factor sign-in turned on"),
    ("refund.create", "Refund issued"),
    ("payment.cancel.requested", "Cancel asked of the provider"),
    ("something.new", "something.new"),  # a code this version does not know is shown as it is
])
def test_actions_read_as_words(action, words):
    assert action_words(action) == words


@pytest.mark.parametrize("key, label", [
    ("originalTxNo", "Original TxNo"), ("approvalId", "Approval"), ("sessions_ended", "Sessions ended"),
    ("other_sessions_ended", "Other sessions ended"), ("reason", "Reason"), ("keyHint", "Key"),
])
def test_detail_keys_read_as_labels(key, label):
    assert detail_label(key) == label


def test_e_mails_urls_and_addresses_wrap_at_their_parts_and_stay_escaped():
    assert str(wrap_at_parts("ada.lovelace@example.com")) == "ada.<wbr>lovelace<wbr>@example.<wbr>com"
    assert str(wrap_at_parts("https://a.example/x-y")) == "https:<wbr>/<wbr>/<wbr>a.<wbr>example/<wbr>x-y"
    assert str(wrap_at_parts("2001:db8::1")) == "2001:<wbr>db8:<wbr>:<wbr>1"
    assert str(wrap_at_parts("<b>@x")) == "&lt;b&gt;<wbr>@x"
    assert str(wrap_at_parts(None)) == ""

"""E-mail notifications: chosen on the Account page, recorded with the event that causes them,
handed out and mailed by the worker's pass at once or in the daily digest, never twice."""
from __future__ import annotations

from datetime import timedelta
from email import message_from_string, policy

import pytest
from sqlalchemy import func, select

from app.auth.notifications import digest_cut, hand_out_events, send_due
from app.store import notifications as notification_store
from app.store.tables import audit_log, notification_events, notifications, users
from app.util import utcnow

from .conftest import SANDBOX, Browserless, add_user
from .test_accounts import smtp  # noqa: F401 - the local SMTP server fixture
from .test_approvals import _threshold, _htmx_post


def _signed_in(server, merchant, role) -> Browserless:
    client = Browserless(server.url)
    client.email = add_user(server.app, merchant.merchant_id, role)
    assert client.login(client.email).status_code == 303
    return client


def _choose(client, **chosen) -> None:
    """Save the Account page's notifications: kind -> "immediate"/"digest" (+ " sandbox")."""
    client.get("/account")
    form = {}
    for kind, value in chosen.items():
        delivery, _, sandbox = value.partition(" ")
        form[f"delivery-{kind}"] = delivery
        if sandbox:
            form[f"sandbox-{kind}"] = "1"
    response = client.post("/account/notifications", form)
    assert (response.status_code, response.headers["Location"]) == (303, "/account#notifications")


def _deps(app):
    return app.extensions["paydesk"]


def _pass(app, now=None, **config) -> int:
    """One notification pass of the worker (hand out, then mail what is due)."""
    hand_out_events(_deps(app))
    return send_due(_deps(app), {**app.config, **config}, now)


def _mails_to(smtp, email: str) -> list[str]:
    """The mails to this address: "Subject: ..." and the decoded text."""
    mails = [message_from_string(raw, policy=policy.default)
             for recipients, raw in smtp.messages if recipients == [email]]
    return [f"Subject: {mail['subject']}\n{mail.get_content()}" for mail in mails]


def _request_refund_approval(server, merchant, captured_payment, asker) -> str:
    admin = _signed_in(server, merchant, "admin")
    admin.prefix = asker.prefix = SANDBOX
    _threshold(admin, "EUR", "50")
    tx_no = captured_payment(100)
    review = _htmx_post(asker, f"/transactions/{tx_no}/refund/review", {"amount": "70.00"})
    key = review.text.split('name="request_key" value="')[1].split('"')[0]
    done = _htmx_post(asker, f"/transactions/{tx_no}/refund", {"amount": "70.00", "request_key": key})
    assert "awaits another user&#39;s approval" in done.text
    return tx_no


def test_the_account_page_offers_each_kind_the_role_may_receive_and_saves_the_choice(server, merchant, app):
    support = _signed_in(server, merchant, "support")
    page = support.get("/account").text
    assert "A refund or payout failed" in page and "Webhook delivery keeps failing" in page
    assert "An approval waits for me" not in page  # support approves nothing
    finance = _signed_in(server, merchant, "finance")
    _choose(finance, approval_waiting="immediate sandbox", money_failed="digest")
    page = finance.get("/account").text
    assert '<option value="immediate" selected>At once</option>' in page
    assert '<option value="digest" selected>In the daily digest</option>' in page
    assert 'id="sandbox-approval_waiting" name="sandbox-approval_waiting" value="1" checked' in page
    assert "Your e-mail notifications are saved." in page
    with _deps(app).uow(write=False) as uow:
        user_id = uow.conn.execute(select(users.c.id).where(users.c.email == finance.email)).scalar_one()
        assert notification_store.choices_of(uow.conn, user_id) == {
            "approval_waiting": notification_store.Choice("approval_waiting", "immediate", True),
            "money_failed": notification_store.Choice("money_failed", "digest", False)}
        detail = uow.conn.execute(select(audit_log.c.detail).where(
            audit_log.c.action == "user.notifications", audit_log.c.target == finance.email)).scalar_one()
    assert detail == '{"approval_waiting": "immediate +sandbox", "money_failed": "digest"}'
    # A kind the role may not receive is not saved, whatever the form says.
    support.post("/account/notifications", {"delivery-approval_waiting": "immediate"})
    with _deps(app).uow(write=False) as uow:
        support_id = uow.conn.execute(select(users.c.id).where(users.c.email == support.email)).scalar_one()
        assert notification_store.choices_of(uow.conn, support_id) == {}


def test_an_approval_request_mails_the_approvers_who_chose_it_once(server, merchant, app, smtp,
                                                                   captured_payment):
    asker = _signed_in(server, merchant, "finance")
    approver, live_only, support = (_signed_in(server, merchant, role) for role in ("finance", "finance", "support"))
    for client in (asker, approver):
        _choose(client, approval_waiting="immediate sandbox")
    _choose(live_only, approval_waiting="immediate")  # sandbox requests are not for them
    _choose(support, money_failed="immediate sandbox")
    tx_no = _request_refund_approval(server, merchant, captured_payment, asker)
    with _deps(app).uow(write=False) as uow:  # recorded with the request, not mailed by it
        event = uow.conn.execute(select(notification_events).where(
            notification_events.c.merchant_id == merchant.merchant_id)).one()
    assert (event.kind, event.mode, event.not_for, event.handed_out_at) == (
        "approval_waiting", "sandbox", asker.email, None)
    assert smtp.messages == []
    _pass(app)
    mail, = _mails_to(smtp, approver.email)
    assert "Subject: Paydesk: [Sandbox] Approval waits: refund of 70.00 EUR" in mail
    assert f"{asker.email} asked for a refund of 70.00 EUR of payment {tx_no}." in mail
    assert f"Open it: {app.config['BASE_URL']}/test/approvals" in mail
    for other in (asker, live_only, support):
        assert _mails_to(smtp, other.email) == []
    _pass(app)
    assert len(_mails_to(smtp, approver.email)) == 1  # never twice


def test_a_declined_refund_waits_for_the_daily_digest(server, merchant, app, smtp, sandbox):
    finance = _signed_in(server, merchant, "finance")
    _choose(finance, money_failed="digest sandbox")
    for tx_no in ("SBX-REFUND-DECLINED", "SBX-REFUND-FAILED"):
        refused = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10})
        assert refused.status_code == 200, refused.text
    now = utcnow()
    hour = (now.hour + 1) % 24  # the next digest is within the hour: not yet
    assert _pass(app, now, NOTIFICATION_DIGEST_HOUR=hour) >= 0
    assert _mails_to(smtp, finance.email) == []
    at_digest = digest_cut(now + timedelta(days=1), hour) + timedelta(minutes=1)
    _pass(app, at_digest, NOTIFICATION_DIGEST_HOUR=hour)
    mail, = _mails_to(smtp, finance.email)
    assert "Subject: Paydesk daily digest: 2 notifications" in mail
    assert "[Sandbox] Refund declined: 10.00 EUR" in mail and "[Sandbox] Refund failed: 10.00 EUR" in mail
    assert "of payment SBX-REFUND-DECLINED of 10.00 EUR is Declined" in mail
    _pass(app, at_digest + timedelta(hours=1), NOTIFICATION_DIGEST_HOUR=hour)
    assert len(_mails_to(smtp, finance.email)) == 1


def test_a_refused_mail_is_tried_again_and_a_claimed_one_is_never_sent_twice(server, merchant, app, smtp,
                                                                            sandbox):
    finance = _signed_in(server, merchant, "finance")
    _choose(finance, money_failed="immediate sandbox")
    assert sandbox.post("/transactions/refund", {"txNo": "SBX-REFUND-FAILED", "amount": 5}).status_code == 200
    now = utcnow() + timedelta(seconds=1)  # after the pass hands the event out
    closed_port = {"SMTP_PORT": 9, "SMTP_TIMEOUT": 1}  # nothing listens: the mail is refused
    _pass(app, now, **closed_port)
    assert _mails_to(smtp, finance.email) == []
    with _deps(app).uow(write=False) as uow:
        copy = uow.conn.execute(select(notifications).join(users, users.c.id == notifications.c.user_id)
                                .where(users.c.email == finance.email)).one()
    assert (copy.sent_at, copy.attempts, copy.error) == (None, 1, "the mail server refused it")
    _pass(app, now + timedelta(seconds=30))  # not due again yet
    assert _mails_to(smtp, finance.email) == []
    _pass(app, now + timedelta(minutes=2))
    assert len(_mails_to(smtp, finance.email)) == 1

    # A worker that dies after its claim (before mailing): the copy counts as sent.
    assert sandbox.post("/transactions/refund", {"txNo": "SBX-REFUND-FAILED", "amount": 5}).status_code == 200
    hand_out_events(_deps(app))
    later = utcnow() + timedelta(seconds=1)
    with _deps(app).uow() as uow:
        user_id = uow.conn.execute(select(users.c.id).where(users.c.email == finance.email)).scalar_one()
        claimed = notification_store.claim_due(uow.conn, user_id, later, digest_cut(later, 7))
        uow.commit()
    assert len(claimed) == 1
    _pass(app, later + timedelta(minutes=5))
    assert len(_mails_to(smtp, finance.email)) == 1


def test_an_event_is_handed_out_once_whatever_the_number_of_workers(server, merchant, app, sandbox):
    finance = _signed_in(server, merchant, "finance")
    _choose(finance, money_failed="immediate sandbox")
    assert sandbox.post("/transactions/refund", {"txNo": "SBX-REFUND-DECLINED", "amount": 1}).status_code == 200
    with _deps(app).uow(write=False) as uow:
        waiting = notification_store.waiting_events(uow.conn)
    mine = [event for event in waiting if event.merchant_id == merchant.merchant_id]
    assert len(mine) == 1
    made = []
    for _ in range(2):  # a second worker with the same list hands out nothing
        with _deps(app).uow() as uow:
            made.append(notification_store.hand_out(uow.conn, mine[0], None, utcnow()))
            uow.commit()
    assert made == [1, 0]
    with _deps(app).uow(write=False) as uow:
        assert uow.conn.execute(select(func.count()).select_from(notifications).where(
            notifications.c.event_id == mine[0].id)).scalar_one() == 1


@pytest.mark.parametrize("hour, now, cut", [
    (7, "2026-11-28T06:59:00+00:00", "2026-11-27T07:00:00+00:00"),
    (7, "2026-11-28T07:00:00+00:00", "2026-11-28T07:00:00+00:00"),
    (0, "2026-11-28T23:59:00+00:00", "2026-11-28T00:00:00+00:00"),
])
def test_the_digest_takes_what_came_before_its_latest_time(hour, now, cut):
    from datetime import datetime
    assert digest_cut(datetime.fromisoformat(now), hour) == datetime.fromisoformat(cut)


def test_a_webhook_given_up_on_tells_who_chose_to_know(server, merchant, app, smtp, sandbox):
    """An endpoint answering 410 Gone ends the event's retries: the event is Failed, and the
    users who chose "webhook delivery keeps failing" are told in the unit that says so."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from app.webhooks.dispatcher import deliver_due
    from app.webhooks.settings import DeliverySettings
    from tests.conftest import payment_body

    class Gone(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the standard library's name
            self.send_response(410)
            self.end_headers()

        def log_message(self, *args):
            pass

    endpoint = HTTPServer(("127.0.0.1", 0), Gone)
    threading.Thread(target=endpoint.serve_forever, daemon=True).start()
    try:
        support = _signed_in(server, merchant, "support")
        _choose(support, webhook_failing="immediate sandbox")
        url = f"http://127.0.0.1:{endpoint.server_port}/gone"
        tx_no = sandbox.post("/transactions", payment_body(callbackUrl=url)).json()["transactionId"]
        assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
        deliver_due(_deps(app), DeliverySettings.from_config(app.config), merchant.merchant_id)
    finally:
        endpoint.shutdown()
        endpoint.server_close()
    _pass(app, utcnow() + timedelta(seconds=1))
    mail, = _mails_to(smtp, support.email)
    assert f"Subject: Paydesk: [Sandbox] Webhook delivery failed: {tx_no}" in mail
    assert f"The webhook of {tx_no} to {url} failed all 1 attempts." in mail


def test_a_dispute_opened_mails_who_may_answer_it_with_its_deadline(server, merchant, app, smtp, sandbox,
                                                                    captured_payment):
    finance, support = _signed_in(server, merchant, "finance"), _signed_in(server, merchant, "support")
    assert "A customer disputed a payment" in finance.get("/account").text
    assert "A customer disputed a payment" not in support.get("/account").text  # answers no dispute
    _choose(finance, dispute_opened="immediate sandbox")
    tx_no = captured_payment(80)
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"}).status_code == 200
    [dispute] = [d for d in sandbox.get("/disputes?limit=200").json()["disputes"] if d["txNo"] == tx_no]

    _pass(app)

    mail, = _mails_to(smtp, finance.email)
    due = dispute["dueBy"][:16].replace("T", " ")
    assert f"Subject: Paydesk: [Sandbox] Dispute opened: 80.00 EUR, answer by {due[:10]}\n" in mail
    assert (f"The customer disputed payment {tx_no} of 80.00 EUR (Fraudulent). Answer with evidence, "
            f"or accept it, by {due} UTC.") in mail
    assert f"Open it: {app.config['BASE_URL']}/test/disputes/{dispute['disputeId']}" in mail
    # its later moves (won, lost) tell nobody: they are the provider's answer, not work to do
    assert sandbox.post(f"/sandbox/disputes/{dispute['disputeId']}/outcome", {"outcome": "won"}).status_code == 200
    _pass(app)
    assert len(_mails_to(smtp, finance.email)) == 1


def test_a_dispute_still_unanswered_near_its_deadline_is_a_reminder_once(server, merchant, app, smtp, sandbox,
                                                                         captured_payment):
    from sqlalchemy import update

    from app.payments.dispute_reminders import REMIND_BEFORE, remind_due_disputes
    from app.store.tables import disputes

    finance = _signed_in(server, merchant, "finance")
    _choose(finance, dispute_due="immediate sandbox")
    ids = {}
    for name in ("due soon", "due later", "answered", "won"):
        tx_no = captured_payment(60)
        assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"}).status_code == 200
        [found] = [d for d in sandbox.get("/disputes?limit=200").json()["disputes"] if d["txNo"] == tx_no]
        ids[name] = found["disputeId"]
    soon = utcnow() + REMIND_BEFORE - timedelta(hours=1)
    with _deps(app).uow() as uow:
        uow.conn.execute(update(disputes).where(disputes.c.dispute_no.in_([ids["due soon"], ids["answered"],
                                                                            ids["won"]])).values(due_by=soon))
        uow.conn.execute(update(disputes).where(disputes.c.dispute_no == ids["answered"])
                         .values(action="submit_evidence"))
        uow.commit()
    assert sandbox.post(f"/sandbox/disputes/{ids['won']}/outcome", {"outcome": "won"}).status_code == 200
    _pass(app)
    opened = len(_mails_to(smtp, finance.email))  # none: the opening mails are another kind

    assert remind_due_disputes(_deps(app)) == 1
    assert remind_due_disputes(_deps(app)) == 0  # never twice
    _pass(app)

    mails = _mails_to(smtp, finance.email)[opened:]
    assert len(mails) == 1
    mail = mails[0]
    assert f"Subject: Paydesk: [Sandbox] Dispute due {soon:%Y-%m-%d}: 60.00 EUR unanswered\n" in mail
    assert (f"Dispute {ids['due soon']} of payment ") in mail
    assert f"still needs a response by {soon:%Y-%m-%d %H:%M} UTC" in mail
    assert f"Open it: {app.config['BASE_URL']}/test/disputes/{ids['due soon']}" in mail


def test_a_deadline_the_provider_moves_gets_a_reminder_of_its_own(server, merchant, app, smtp, sandbox,
                                                                   captured_payment):
    from sqlalchemy import update

    from app.payments.dispute_reminders import REMIND_BEFORE, remind_due_disputes
    from app.store.tables import disputes

    finance = _signed_in(server, merchant, "finance")
    _choose(finance, dispute_due="immediate sandbox")
    tx_no = captured_payment(60)
    assert sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"}).status_code == 200
    [found] = [d for d in sandbox.get("/disputes?limit=200").json()["disputes"] if d["txNo"] == tx_no]
    first = utcnow() + REMIND_BEFORE - timedelta(hours=2)
    with _deps(app).uow() as uow:
        uow.conn.execute(update(disputes).where(disputes.c.dispute_no == found["disputeId"]).values(due_by=first))
        dispute_id = uow.conn.execute(select(disputes.c.id).where(
            disputes.c.dispute_no == found["disputeId"])).scalar_one()
        uow.commit()
    assert remind_due_disputes(_deps(app)) == 1
    _pass(app)

    def provider_says(due_by):
        """What a provider's update does to the dispute: read it, change it, save it."""
        with _deps(app).uow() as uow:
            dispute = uow.disputes.by_id_for_worker(dispute_id, for_update=True)
            dispute.due_by = due_by
            dispute.provider_status = "needs_response"
            uow.disputes.save(dispute)
            uow.commit()

    provider_says(first)  # the same deadline, told again
    assert remind_due_disputes(_deps(app)) == 0
    moved = first + timedelta(hours=1)
    provider_says(moved)
    assert remind_due_disputes(_deps(app)) == 1
    assert remind_due_disputes(_deps(app)) == 0
    _pass(app)

    reminders = [mail for mail in _mails_to(smtp, finance.email) if "Dispute due" in mail.splitlines()[0]]
    assert len(reminders) == 2
    assert f"still needs a response by {first:%Y-%m-%d %H:%M} UTC" in reminders[0]
    assert f"still needs a response by {moved:%Y-%m-%d %H:%M} UTC" in reminders[1]


def test_the_worker_s_dispute_pass_sends_the_reminders(app, monkeypatch):
    from app import worker
    from app.payments import dispute_calls, dispute_reminders

    ran = []
    monkeypatch.setattr(dispute_calls, "run_due_dispute_calls", lambda deps: ran.append("calls"))
    monkeypatch.setattr(dispute_calls, "check_open_disputes", lambda deps: ran.append("checks"))
    monkeypatch.setattr(dispute_reminders, "remind_due_disputes", lambda deps: ran.append("reminders"))

    worker.dispute_pass(_deps(app), None).run()

    assert ran == ["calls", "checks", "reminders"]

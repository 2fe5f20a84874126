"""The webhook log: a refund's delivery and its attempts, Resend, and the inbox verifying it."""
from __future__ import annotations

from playwright.sync_api import Page, expect
from sqlalchemy import select

from app.payments.events import SENT_EVENT_TYPES
from app.store.tables import transactions, webhook_events
from app.webhooks.dispatcher import deliver_due
from app.webhooks.settings import DeliverySettings
from tests.conftest import payment_body
from tests.dashboard.conftest import add_user

from .conftest import sign_in, to_sandbox, to_webhooks


def _deliver(app, merchant) -> None:
    """One run of the worker's delivery job for the test's merchant: its due webhooks are sent
    (other tests' events on the shared database are not this test's to deliver)."""
    deliver_due(app.extensions["paydesk"], DeliverySettings.from_config(app.config), merchant.merchant_id)


def test_refund_delivery_attempts_resend_and_the_verified_inbox(page: Page, server, merchant, sandbox):
    app = server.app
    created = sandbox.post("/transactions", payment_body(callbackUrl=merchant.inbox_url))
    tx_no = created.json()["transactionId"]
    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
    refund = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 25}).json()["refundTxNo"]
    _deliver(app, merchant)  # the worker's job: the payment's and the refund's webhooks go to the merchant's inbox

    sign_in(page, server.url, add_user(app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    to_webhooks(page)
    delivery = page.locator("article.delivery", has_text="refund.captured")
    expect(delivery).to_have_count(1)
    expect(delivery).to_contain_text(refund)
    expect(delivery).to_contain_text("Delivered")
    delivery.get_by_text("Request body and 1 attempt").click()
    expect(delivery.locator(".attempt")).to_have_count(1)
    expect(delivery.locator(".attempt").first).to_contain_text("HTTP 204")

    delivery.get_by_role("button", name="Resend").click()
    expect(delivery).to_contain_text("Queued: the worker sends it again within seconds.")
    _deliver(app, merchant)
    page.reload()
    delivery = page.locator("article.delivery", has_text="refund.captured")
    delivery.get_by_text("Request body and 2 attempts").click()
    expect(delivery.locator(".attempt")).to_have_count(2)
    expect(delivery.locator(".attempt").first).to_contain_text("resent by hand")
    expect(delivery.locator(".attempt").first).to_contain_text("HTTP 204")

    page.get_by_role("link", name="Received (inbox)").click()
    received = page.locator("article.delivery", has_text=refund)
    expect(received).to_have_count(2)  # the delivery and its resend
    expect(received.first).to_contain_text("Signature verified")
    expect(received.first).to_contain_text("Duplicate")  # the resend keeps the webhook-id
    expect(received.last).not_to_contain_text("Duplicate")


def test_the_logs_show_the_bytes_sent_and_name_each_received_event(page: Page, server, merchant, sandbox):
    app = server.app
    created = sandbox.post("/transactions", payment_body(amount=1500, callbackUrl=merchant.inbox_url))
    tx_no = created.json()["transactionId"]
    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
    _deliver(app, merchant)
    with app.extensions["paydesk"].uow(write=False) as uow:
        sent = uow.conn.execute(
            select(webhook_events.c.payload).join(transactions, transactions.c.id == webhook_events.c.transaction_id)
            .where(transactions.c.tx_no == tx_no)).scalar_one()
    assert '"amount": 1500.00' in sent

    sign_in(page, server.url, add_user(app, merchant.merchant_id, "support"))
    to_sandbox(page)
    to_webhooks(page)
    delivery = page.locator("article.delivery", has_text=tx_no)
    delivery.get_by_text("Request body and 1 attempt").click()
    assert delivery.get_by_label("Request body").inner_text() == sent  # byte for byte: 1500.00

    page.get_by_role("link", name="Received (inbox)").click()
    received = page.locator("article.delivery", has_text=tx_no)
    expect(received.locator(".delivery-summary")).to_contain_text(f"payment.captured {tx_no}")
    received.get_by_text("Headers and body").click()
    assert received.get_by_label("Body").inner_text() == sent


def test_a_resent_webhook_shows_its_new_attempt_without_a_reload(page: Page, server, merchant, sandbox):
    app = server.app
    created = sandbox.post("/transactions", payment_body(callbackUrl=merchant.inbox_url))
    tx_no = created.json()["transactionId"]
    sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"})
    _deliver(app, merchant)

    sign_in(page, server.url, add_user(app, merchant.merchant_id, "finance"))
    to_sandbox(page)
    to_webhooks(page)
    delivery = page.locator("article.delivery", has_text=tx_no)
    expect(delivery).to_contain_text("Delivered")
    delivery.get_by_role("button", name="Resend").click()
    queued = delivery.get_by_role("status")
    expect(queued).to_have_text("Queued: the worker sends it again within seconds.")
    expect(queued).to_be_focused()  # the result of the click, not the top of the page
    expect(page.locator("#announcer")).to_have_text("Queued: the worker sends it again within seconds.")
    page.evaluate("window.notReloaded = true")

    _deliver(app, merchant)  # the worker's job

    expect(delivery.get_by_role("status")).to_have_text("Attempt 2: HTTP 204; the delivery is delivered.",
                                                        timeout=10_000)
    expect(delivery.locator(".attempt")).to_have_count(2)  # shown open, newest first
    expect(delivery.locator(".attempt").first).to_contain_text("resent by hand")
    expect(delivery.get_by_role("status")).to_be_focused()  # focus was in what the answer replaced
    expect(page.locator("#announcer")).to_have_text("Attempt 2: HTTP 204; the delivery is delivered.")
    assert page.evaluate("window.notReloaded") is True
    expect(delivery).not_to_have_attribute("hx-trigger", "every 2s")  # polling stopped


def test_the_endpoint_form_groups_event_types_by_kind_each_box_beside_its_name(page: Page, server, merchant):
    """27 event types ran as one paragraph of boxes and names, a box at one line's end and its
    name on the next: an admin could tick the type beside the one meant. Each kind is a group of
    its own now, each box on its name's line, at desktop and phone widths."""
    sign_in(page, server.url, add_user(server.app, merchant.merchant_id, "admin"))
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{server.url}/settings/webhook-endpoints")
        form = page.locator("#new-endpoint")
        for legend, first in (("Payments", "payment.captured"), ("Payouts", "payout.captured"),
                              ("Refunds", "refund.captured"), ("Disputes", "dispute.needs_response")):
            group = form.get_by_role("group", name=legend)
            expect(group).to_be_visible()
            expect(group.get_by_role("checkbox").first).to_have_accessible_name(first)
        boxes = form.locator("fieldset label.checkbox")
        assert boxes.count() == 1 + len(SENT_EVENT_TYPES)  # "*" and every type Paydesk sends
        for index in range(boxes.count()):
            label = boxes.nth(index)
            box, name = label.locator("input").bounding_box(), label.locator("span").bounding_box()
            assert abs((box["y"] + box["height"] / 2) - (name["y"] + name["height"] / 2)) < 8, \
                f"{label.inner_text()} at {width} px: its box is not on its name's line"
            assert box["x"] < name["x"], f"{label.inner_text()} at {width} px"
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")

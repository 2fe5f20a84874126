"""Evidence and acceptances reach the provider through the worker, never on the request's thread:
the stripe package against the fake Stripe (POST /v1/disputes/{id}, /close), Paystack's
POST /dispute/{id}/evidence against the fake Paystack; refusals, outages, and a worker killed
mid-call (nothing lost, nothing done twice at Stripe). Both databases."""
from __future__ import annotations

import pytest

from app.payments import dispute_calls

from . import bodies
from .conftest import later, provider_events
from .test_disputes import (
    DISPUTE_ID,
    disputes_of,
    dispute_moves,
    dispute_webhooks,
    paystack_captured,
    paystack_dispute_event,
    stripe_captured,
    stripe_dispute_event,
)


@pytest.fixture
def stripe_dispute(sandbox, deps, stripe_fake, stripe_account, receiver) -> tuple[str, str]:
    """A Stripe payment with a dispute that needs a response: (txNo, disputeId)."""
    tx_no = stripe_captured(sandbox, deps, stripe_fake, stripe_account, receiver)
    assert stripe_dispute_event(stripe_account, "charge.dispute.created", 10050, "needs_response",
                                f"evt_open_{tx_no}").status_code == 200
    return tx_no, disputes_of(deps, tx_no)[0]["dispute_no"]


def stripe_answers(stripe_fake, path: str, status: str) -> None:
    stripe_fake.on("POST", path, {**bodies.dispute(10050, status), "evidence_details": {"due_by": None}})


def test_evidence_is_submitted_by_the_worker_with_the_stripe_package(sandbox, deps, stripe_fake, stripe_dispute):
    tx_no, dispute_no = stripe_dispute
    stripe_answers(stripe_fake, f"/v1/disputes/{DISPUTE_ID}", "under_review")
    answer = sandbox.post(f"/disputes/{dispute_no}/evidence", {
        "productDescription": "Two ceramic cups", "customerPhone": "+234 801 234 5678", "submit": True})
    assert answer.status_code == 202
    assert (answer.json()["status"], answer.json()["pendingAction"]) == ("needs_response", "submit_evidence")
    assert stripe_fake.requests_to("POST", f"/v1/disputes/{DISPUTE_ID}") == []  # not on the request's thread

    assert dispute_calls.run_due_dispute_calls(deps) == 1
    [sent] = stripe_fake.requests_to("POST", f"/v1/disputes/{DISPUTE_ID}")
    assert sent.form == {
        "evidence[customer_name]": "Ada Obi", "evidence[customer_email_address]": "ada@example.com",
        "evidence[product_description]": "Two ceramic cups",
        "evidence[uncategorized_text]": "Customer phone: +234 801 234 5678\n" + sent.form[
            "evidence[uncategorized_text]"].split("\n", 1)[1],
        "submit": "true"}
    assert sent.header("Idempotency-Key") == dispute_calls.idempotency_key(
        next(d for d in _disputes(deps, tx_no)))
    shown = sandbox.get(f"/disputes/{dispute_no}").json()
    assert (shown["status"], shown["pendingAction"], shown["providerStatus"]) == (
        "under_review", None, "under_review")
    assert shown["evidenceSubmittedBy"].startswith("api:")
    assert [h["to"] for h in shown["history"]] == ["needs_response", "under_review"]
    assert [p["status"] for p in dispute_webhooks(deps, tx_no)] == ["needs_response", "under_review"]
    assert dispute_calls.run_due_dispute_calls(deps) == 0  # nothing left owed


def _disputes(deps, tx_no):
    with deps.uow(write=False) as uow:
        payment = uow.transactions.get_for_worker(disputes_of(deps, tx_no)[0]["payment_id"])
        return uow.disputes.of_payment(payment.id)


def test_a_worker_killed_after_the_call_loses_nothing_and_stripe_acts_once(
        sandbox, deps, stripe_fake, stripe_account, stripe_dispute, monkeypatch):
    tx_no, dispute_no = stripe_dispute
    stripe_answers(stripe_fake, f"/v1/disputes/{DISPUTE_ID}/close", "lost")
    assert sandbox.post(f"/disputes/{dispute_no}/accept").status_code == 202

    def killed(*_args, **_kwargs):
        raise KeyboardInterrupt("worker killed after Stripe answered")

    with monkeypatch.context() as patch:
        patch.setattr(dispute_calls, "record_action_done", killed)
        with pytest.raises(KeyboardInterrupt):
            dispute_calls.run_due_dispute_calls(deps)
    # Its claim holds the action for a while: another worker does not repeat the call at once.
    assert dispute_calls.run_due_dispute_calls(deps) == 0
    assert sandbox.get(f"/disputes/{dispute_no}").json()["pendingAction"] == "accept"
    # Once the claim lapses, the call is made again under the same idempotency key.
    assert dispute_calls.run_due_dispute_calls(later(deps, 61)) == 1
    first, second = stripe_fake.requests_to("POST", f"/v1/disputes/{DISPUTE_ID}/close")
    assert first.header("Idempotency-Key") == second.header("Idempotency-Key") == f"{dispute_no}-accept"
    shown = sandbox.get(f"/disputes/{dispute_no}").json()
    assert (shown["status"], shown["pendingAction"], shown["providerStatus"]) == ("accepted", None, "lost")
    assert [(h["from"], h["to"]) for h in shown["history"]] == [(None, "needs_response"),
                                                              ("needs_response", "accepted")]
    assert sandbox.status(tx_no)["Status"] == "Chargeback"
    # Stripe's own charge.dispute.closed (lost) afterwards changes nothing: accepted stays.
    stripe_dispute_event(stripe_account, "charge.dispute.closed", 10050, "lost", f"evt_closed_{tx_no}")
    assert provider_events(deps, stripe_account)[-1]["result"] == "no change"
    assert sandbox.get(f"/disputes/{dispute_no}").json()["status"] == "accepted"


def test_a_refusal_is_kept_for_the_merchant_and_an_outage_is_retried(sandbox, deps, stripe_fake, stripe_dispute):
    _tx_no, dispute_no = stripe_dispute
    path = f"/v1/disputes/{DISPUTE_ID}"
    stripe_fake.on("POST", path, bodies.stripe_error(500, "Something went wrong", "api_error", "api_error"),
                   bodies.stripe_error(400, "This dispute is past its due date", "dispute_past_due"))
    assert sandbox.post(f"/disputes/{dispute_no}/evidence", {"submit": True}).status_code == 202

    assert dispute_calls.run_due_dispute_calls(deps) == 1  # 500: asked again later
    shown = sandbox.get(f"/disputes/{dispute_no}").json()
    assert shown["pendingAction"] == "submit_evidence"
    assert shown["lastError"].startswith("Stripe answered HTTP 500")
    assert dispute_calls.run_due_dispute_calls(deps) == 0  # not due yet
    assert dispute_calls.run_due_dispute_calls(later(deps, 120)) == 1  # 400: refused
    shown = sandbox.get(f"/disputes/{dispute_no}").json()
    assert (shown["status"], shown["pendingAction"], shown["lastError"]) == (
        "needs_response", None, "Stripe refused: This dispute is past its due date")
    assert shown["history"][-1]["note"] == "Stripe refused: This dispute is past its due date"


def test_paystack_evidence_goes_to_its_evidence_endpoint_and_acceptance_is_refused(
        live, server, deps, paystack_fake, paystack_account, receiver):
    tx_no = paystack_captured(live, server, deps, paystack_fake, paystack_account, receiver)
    paystack_dispute_event(paystack_account, "charge.dispute.create", tx_no, "awaiting-merchant-feedback")
    dispute_no = disputes_of(deps, tx_no)[0]["dispute_no"]

    refused = live.post(f"/disputes/{dispute_no}/accept")
    assert (refused.status_code, refused.json()) == (409, {
        "error": "Paystack accepts a dispute only with a refund receipt: add a file of kind receipt "
                 "(POST /disputes/{id}/files) first"})
    missing = live.post(f"/disputes/{dispute_no}/evidence", {"submit": True})
    assert (missing.status_code, missing.json()) == (409, {
        "error": "Paystack needs customerPhone, productDescription in the evidence"})

    paystack_fake.on("POST", "/dispute/2867/evidence", {"status": True, "message": "Evidence created", "data": {
        "customer_email": "ada@example.com", "customer_name": "Ada Obi", "customer_phone": "08012345678",
        "service_details": "cups", "dispute": 2867, "id": 21}})
    sent = live.post(f"/disputes/{dispute_no}/evidence", {
        "customerPhone": "08012345678", "productDescription": "Two cups", "shippingAddress": "1 Marina, Lagos",
        "serviceDate": "2026-11-20", "submit": True})
    assert sent.status_code == 202
    assert dispute_calls.run_due_dispute_calls(deps) == 1
    [request] = paystack_fake.requests_to("POST", "/dispute/2867/evidence")
    assert request.json["customer_phone"] == "08012345678"
    assert request.json["delivery_address"] == "1 Marina, Lagos"
    assert request.json["delivery_date"] == "2026-11-20T00:00:00.000Z"
    assert request.json["service_details"].startswith("Two cups\n\nPayment ")
    assert (request.json["customer_name"], request.json["customer_email"]) == ("Ada Obi", "ada@example.com")
    shown = live.get(f"/disputes/{dispute_no}").json()
    assert (shown["status"], shown["providerStatus"]) == ("under_review", "awaiting-bank-feedback")
    assert [e["result"] for e in provider_events(deps, paystack_account)][-1] == "applied"
    assert dispute_moves(deps, disputes_of(deps, tx_no)[0]["id"])[-1] == ("needs_response", "under_review", "worker")


def test_the_worker_asks_where_an_open_dispute_stands_when_no_webhook_came(
        sandbox, deps, stripe_fake, stripe_dispute):
    tx_no, dispute_no = stripe_dispute
    stripe_fake.on("GET", f"/v1/disputes/{DISPUTE_ID}", {**bodies.dispute(10050, "won"),
                                                          "evidence_details": {"due_by": None}})
    assert dispute_calls.check_open_disputes(deps) == 1  # never asked yet
    assert dispute_calls.check_open_disputes(deps) == 0  # asked just now
    shown = sandbox.get(f"/disputes/{dispute_no}").json()
    assert shown["status"] == "won"
    assert shown["history"][-1]["source"] == "worker"
    assert sandbox.status(tx_no)["Status"] == "Captured"
    assert dispute_calls.check_open_disputes(later(deps, 7 * 3600)) == 0  # closed: not asked again
    assert len(stripe_fake.requests_to("GET", f"/v1/disputes/{DISPUTE_ID}")) == 1


PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 32


def stripe_file(file_id: str, filename: str, size: int) -> dict:
    """A File object as Stripe answers POST /v1/files."""
    return {"id": file_id, "object": "file", "purpose": "dispute_evidence", "filename": filename,
            "size": size, "type": "pdf", "created": 1795430000, "url": None, "links": None, "title": None,
            "expires_at": None}


def add_file(api, dispute_no: str, kind: str, name: str, data: bytes):
    return api.session.post(f"{api.base_url}/api/v1/disputes/{dispute_no}/files", data={"kind": kind},
                            files={"file": (name, data)}, timeout=30)


def test_evidence_files_are_uploaded_to_stripe_files_then_named_in_the_evidence(
        sandbox, deps, stripe_fake, stripe_dispute):
    _tx_no, dispute_no = stripe_dispute
    assert add_file(sandbox, dispute_no, "receipt", "receipt.pdf", PDF).status_code == 201
    assert add_file(sandbox, dispute_no, "shipping_documentation", "delivery.jpg", JPEG).status_code == 201
    stripe_fake.on("POST", "/v1/files", stripe_file("file_receipt1", "receipt.pdf", len(PDF)),
                   stripe_file("file_delivery1", "delivery.jpg", len(JPEG)))
    stripe_answers(stripe_fake, f"/v1/disputes/{DISPUTE_ID}", "under_review")
    assert sandbox.post(f"/disputes/{dispute_no}/evidence", {"submit": True}).status_code == 202
    assert stripe_fake.requests_to("POST", "/v1/files") == []  # not on the request's thread

    assert dispute_calls.run_due_dispute_calls(deps) == 1
    receipt, delivery = stripe_fake.requests_to("POST", "/v1/files")
    assert receipt.header("Content-Type").startswith("multipart/form-data; boundary=")
    assert b'name="purpose"\r\n\r\ndispute_evidence' in receipt.body
    assert b'filename="receipt.pdf"' in receipt.body and PDF in receipt.body
    assert JPEG in delivery.body
    [sent] = stripe_fake.requests_to("POST", f"/v1/disputes/{DISPUTE_ID}")
    assert (sent.form["evidence[receipt]"], sent.form["evidence[shipping_documentation]"]) == (
        "file_receipt1", "file_delivery1")
    shown = sandbox.get(f"/disputes/{dispute_no}").json()
    assert shown["status"] == "under_review"
    assert [(f["kind"], f["uploaded"], f["providerFileId"]) for f in shown["files"]] == [
        ("receipt", True, "file_receipt1"), ("shipping_documentation", True, "file_delivery1")]


def test_a_retried_submission_does_not_upload_a_file_twice(sandbox, deps, stripe_fake, stripe_dispute):
    _tx_no, dispute_no = stripe_dispute
    assert add_file(sandbox, dispute_no, "receipt", "receipt.pdf", PDF).status_code == 201
    stripe_fake.on("POST", "/v1/files", stripe_file("file_receipt1", "receipt.pdf", len(PDF)))
    stripe_fake.on("POST", f"/v1/disputes/{DISPUTE_ID}",
                   bodies.stripe_error(500, "Something went wrong", "api_error", "api_error"),
                   {**bodies.dispute(10050, "under_review"), "evidence_details": {"due_by": None}})
    assert sandbox.post(f"/disputes/{dispute_no}/evidence", {"submit": True}).status_code == 202

    assert dispute_calls.run_due_dispute_calls(deps) == 1  # the file went up; the evidence got a 500
    shown = sandbox.get(f"/disputes/{dispute_no}").json()
    assert (shown["pendingAction"], shown["files"][0]["uploaded"]) == ("submit_evidence", True)
    assert dispute_calls.run_due_dispute_calls(later(deps, 120)) == 1
    assert len(stripe_fake.requests_to("POST", "/v1/files")) == 1
    first, second = stripe_fake.requests_to("POST", f"/v1/disputes/{DISPUTE_ID}")
    assert first.form["evidence[receipt]"] == second.form["evidence[receipt]"] == "file_receipt1"
    assert first.header("Idempotency-Key") == second.header("Idempotency-Key")
    assert sandbox.get(f"/disputes/{dispute_no}").json()["status"] == "under_review"


def test_a_file_stripe_refuses_keeps_the_evidence_back_with_its_words(sandbox, deps, stripe_fake, stripe_dispute):
    _tx_no, dispute_no = stripe_dispute
    assert add_file(sandbox, dispute_no, "receipt", "receipt.pdf", PDF).status_code == 201
    stripe_fake.on("POST", "/v1/files", bodies.stripe_error(400, "The file is unreadable", "file_invalid"))
    assert sandbox.post(f"/disputes/{dispute_no}/evidence", {"submit": True}).status_code == 202
    assert dispute_calls.run_due_dispute_calls(deps) == 1
    assert stripe_fake.requests_to("POST", f"/v1/disputes/{DISPUTE_ID}") == []
    shown = sandbox.get(f"/disputes/{dispute_no}").json()
    assert (shown["pendingAction"], shown["lastError"], shown["files"][0]["uploaded"]) == (
        None, "Stripe refused the file receipt.pdf: The file is unreadable", False)


def test_a_paystack_acceptance_uploads_the_receipt_then_resolves(
        live, server, deps, paystack_fake, paystack_account, receiver):
    tx_no = paystack_captured(live, server, deps, paystack_fake, paystack_account, receiver)
    paystack_dispute_event(paystack_account, "charge.dispute.create", tx_no, "awaiting-merchant-feedback")
    dispute_no = disputes_of(deps, tx_no)[0]["dispute_no"]
    assert add_file(live, dispute_no, "receipt", "refund.pdf", PDF).status_code == 201
    paystack_fake.on("GET", "/dispute/2867/upload_url", {"status": True, "message": "Upload url generated",
                     "data": {"signedUrl": f"{paystack_fake.url}/storage/qesp8a4df1xejihd9x5q?sig=abc",
                              "fileName": "qesp8a4df1xejihd9x5q"}})
    paystack_fake.on("PUT", "/storage/qesp8a4df1xejihd9x5q", {})
    paystack_fake.on("PUT", "/dispute/2867/resolve", {"status": True, "message": "Dispute successfully resolved",
                                                      "data": {"id": 2867, "status": "resolved"}})
    accepted = live.post(f"/disputes/{dispute_no}/accept")
    assert (accepted.status_code, accepted.json()["pendingAction"]) == (202, "accept")
    assert paystack_fake.requests_to("GET", "/dispute/2867/upload_url") == []  # not on the request's thread

    assert dispute_calls.run_due_dispute_calls(deps) == 1
    [stored] = paystack_fake.requests_to("PUT", "/storage/qesp8a4df1xejihd9x5q")
    assert stored.body == PDF and stored.header("Content-Type") == "application/pdf"
    assert stored.header("Authorization") is None  # the secret key stays with Paystack's API
    [resolve] = paystack_fake.requests_to("PUT", "/dispute/2867/resolve")
    assert resolve.json == {"resolution": "merchant-accepted", "message": "Merchant accepted",
                            "refund_amount": 1050050, "uploaded_filename": "qesp8a4df1xejihd9x5q"}
    shown = live.get(f"/disputes/{dispute_no}").json()
    assert (shown["status"], shown["pendingAction"]) == ("accepted", None)
    assert [(f["uploaded"], f["providerFileId"]) for f in shown["files"]] == [(True, "qesp8a4df1xejihd9x5q")]

"""The dispute API on sandbox disputes (the simulator answers in process): list, read, evidence,
accept, the sandbox outcome helper, and the refund rule after each outcome. Both databases."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import select

from app.store.tables import audit_log, webhook_events
from app.util import utcnow
from tests.conftest import Api


@pytest.fixture
def disputed(sandbox, captured_payment):
    """Factory: a captured sandbox payment charged back (the helper's Chargeback); (txNo, disputeId)."""

    def make(amount=100) -> tuple[str, str]:
        tx_no = captured_payment(amount)
        moved = sandbox.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Chargeback"})
        assert moved.status_code == 200 and moved.json()["Status"] == "Chargeback", moved.text
        [dispute] = [d for d in sandbox.get("/disputes?limit=200").json()["disputes"] if d["txNo"] == tx_no]
        return tx_no, dispute["disputeId"]

    return make


def test_a_sandbox_chargeback_opens_a_dispute_the_api_shows(sandbox, disputed):
    before = utcnow()
    tx_no, dispute_no = disputed(100)
    shown = sandbox.get(f"/disputes/{dispute_no}")
    assert shown.status_code == 200
    body = shown.json()
    assert body == {
        "disputeId": dispute_no, "txNo": tx_no, "status": "needs_response", "amount": 100, "currency": "EUR",
        "reason": "fraudulent", "dueBy": body["dueBy"], "provider": "simulator",
        "providerDisputeId": f"sim_{tx_no}", "providerStatus": "needs_response",
        "evidence": {"customerName": "Ada Lovelace", "customerEmail": "ada@example.com",
                     "uncategorizedText": body["evidence"]["uncategorizedText"]},
        "evidenceSubmittedAt": None, "evidenceSubmittedBy": None, "pendingAction": None, "lastError": None,
        "createdAt": body["createdAt"], "updatedAt": body["updatedAt"], "files": [],
        "history": [{"from": None, "to": "needs_response", "source": "sandbox", "note": None,
                     "at": body["history"][0]["at"]}]}
    assert body["evidence"]["uncategorizedText"].startswith(f"Payment {tx_no} (reference ")
    assert body["dueBy"] > (before + timedelta(days=6)).isoformat()[:10]


def test_evidence_is_drafted_then_submitted_once(sandbox, disputed, app):
    _tx_no, dispute_no = disputed()
    draft = sandbox.post(f"/disputes/{dispute_no}/evidence", {
        "productDescription": "Two ceramic cups", "customerEmail": "", "serviceDate": "2026-11-20"})
    assert draft.status_code == 200
    assert draft.json()["evidence"] == {"customerName": "Ada Lovelace", "productDescription": "Two ceramic cups",
                                        "serviceDate": "2026-11-20",
                                        "uncategorizedText": draft.json()["evidence"]["uncategorizedText"]}
    assert (draft.json()["status"], draft.json()["pendingAction"]) == ("needs_response", None)

    submitted = sandbox.post(f"/disputes/{dispute_no}/evidence", {"submit": True})
    assert submitted.status_code == 200  # the simulator answers at once
    body = submitted.json()
    assert (body["status"], body["pendingAction"], body["evidenceSubmittedBy"]) == (
        "under_review", None, body["evidenceSubmittedBy"])
    assert body["evidenceSubmittedBy"].startswith("api:") and body["evidenceSubmittedAt"]

    again = sandbox.post(f"/disputes/{dispute_no}/evidence", {"submit": True})
    assert (again.status_code, again.json()) == (409, {
        "error": f"Cannot send evidence for dispute {dispute_no}: its status is under_review"})
    with app.extensions["paydesk"].uow(write=False) as uow:
        actions = [row.action for row in uow.conn.execute(
            select(audit_log.c.action).where(audit_log.c.target == dispute_no).order_by(audit_log.c.id))]
    assert actions == ["dispute.evidence.draft", "dispute.evidence.submit"]


def test_accepting_gives_up_the_amount_for_good(sandbox, disputed, app):
    tx_no, dispute_no = disputed(100)
    accepted = sandbox.post(f"/disputes/{dispute_no}/accept")
    assert accepted.status_code == 200
    assert accepted.json()["status"] == "accepted"
    assert sandbox.status(tx_no)["Status"] == "Chargeback"  # nothing left to refund
    refused = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 1})
    assert refused.status_code == 400
    again = sandbox.post(f"/disputes/{dispute_no}/accept", {})
    assert (again.status_code, again.json()) == (409, {
        "error": f"Cannot accept dispute {dispute_no}: its status is accepted"})
    with app.extensions["paydesk"].uow(write=False) as uow:
        events = [row.event_type for row in uow.conn.execute(
            select(webhook_events.c.event_type).where(webhook_events.c.payload.contains(dispute_no))
            .order_by(webhook_events.c.id))]
    assert events == ["dispute.needs_response", "dispute.accepted"]


@pytest.mark.parametrize("outcome, payment_status, refund_status", [("won", "Captured", 200),
                                                                     ("lost", "Chargeback", 400)])
def test_the_sandbox_outcome_closes_a_dispute(sandbox, disputed, outcome, payment_status, refund_status):
    tx_no, dispute_no = disputed(100)
    closed = sandbox.post(f"/sandbox/disputes/{dispute_no}/outcome", {"outcome": outcome})
    assert (closed.status_code, closed.json()["status"]) == (200, outcome)
    assert sandbox.status(tx_no)["Status"] == payment_status
    assert sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 100}).status_code == refund_status
    again = sandbox.post(f"/sandbox/disputes/{dispute_no}/outcome", {"outcome": "lost"})
    assert (again.status_code, again.json()) == (409, {
        "error": f"Dispute {dispute_no} cannot move from {outcome} to lost"})


def test_the_sandbox_outcome_takes_only_won_or_lost_and_sandbox_tokens(sandbox, live, disputed):
    _tx_no, dispute_no = disputed()
    bad = sandbox.post(f"/sandbox/disputes/{dispute_no}/outcome", {"outcome": "accepted"})
    assert (bad.status_code, bad.json()) == (400, {"errors": {"Outcome": ["Outcome must be won or lost"]}})
    bad = sandbox.post(f"/sandbox/disputes/{dispute_no}/outcome", {"outcome": "won", "note": "x"})
    assert (bad.status_code, bad.json()) == (400, {"errors": {"note": ["Unknown field"]}})
    refused = live.post(f"/sandbox/disputes/{dispute_no}/outcome", {"outcome": "won"})
    assert (refused.status_code, refused.json()) == (403, {"error": "Sandbox only"})


def test_the_list_filters_and_pages_with_a_cursor(sandbox, disputed):
    made = [disputed()[1] for _ in range(3)]
    assert sandbox.post(f"/sandbox/disputes/{made[0]}/outcome", {"outcome": "won"}).status_code == 200
    first = sandbox.get("/disputes?limit=2").json()
    assert [d["disputeId"] for d in first["disputes"]] == [made[2], made[1]]
    second = sandbox.get(f"/disputes?limit=2&cursor={first['nextCursor']}").json()
    assert second["disputes"][0]["disputeId"] == made[0]
    assert [d["disputeId"] for d in sandbox.get("/disputes?status=won&limit=200").json()["disputes"]
            if d["disputeId"] in made] == [made[0]]
    assert [d["disputeId"] for d in sandbox.get("/disputes?status=needs_response,under_review&limit=200")
            .json()["disputes"] if d["disputeId"] in made] == [made[2], made[1]]
    assert sandbox.get("/disputes?dueBefore=2020-01-01").json() == {"disputes": [], "nextCursor": None}
    in_a_month = (utcnow() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert len(sandbox.get(f"/disputes?dueBefore={in_a_month}&limit=3").json()["disputes"]) == 3


@pytest.mark.parametrize("query, errors", [
    ("status=open", {"Status": ["Status must be one or more of accepted, lost, needs_response, under_review, "
                                "won, comma-separated"]}),
    ("dueBefore=tomorrow", {"DueBefore": ["DueBefore must be a date (2026-11-30) or a UTC time "
                                          "(2026-11-30T12:00:00Z)"]}),
    ("dueBefore=2026-11-30T12:00:00", {"DueBefore": ["DueBefore must be a date (2026-11-30) or a UTC time "
                                                     "(2026-11-30T12:00:00Z)"]}),
    ("limit=201", {"Limit": ["Limit must be a whole number from 1 to 200"]}),
    ("limit=0", {"Limit": ["Limit must be a whole number from 1 to 200"]}),
    ("cursor=bm9wZQ", {"Cursor": ["Cursor is not one this API gave"]}),
    ("cursor=%25%25", {"Cursor": ["Cursor is not one this API gave"]}),
])
def test_the_list_refuses_bad_queries(sandbox, query, errors):
    answer = sandbox.get(f"/disputes?{query}")
    assert (answer.status_code, answer.json()) == (400, {"errors": errors})


@pytest.mark.parametrize("body, errors", [
    ({"colour": "red"}, {"colour": ["Unknown field"]}),  # echoed as sent, as elsewhere
    ({"submit": "yes"}, {"Submit": ["Submit must be true or false"]}),
    ({"refundPolicy": 3}, {"RefundPolicy": ["RefundPolicy must be a text of at most 5000 characters"]}),
    ({"refundPolicy": "x" * 5001}, {"RefundPolicy": ["RefundPolicy must be a text of at most 5000 characters"]}),
    ([], {"Body": ["Request body must be a JSON object"]}),
    ({"serviceDate": "20 Nov"}, {"ServiceDate": ["ServiceDate must be a date, YYYY-MM-DD"]}),
])
def test_evidence_refuses_bad_fields(sandbox, disputed, body, errors):
    _tx_no, dispute_no = disputed()
    answer = sandbox.post(f"/disputes/{dispute_no}/evidence", body)
    assert (answer.status_code, answer.json()) == (400, {"errors": errors})


def test_another_merchants_or_modes_dispute_is_unknown(sandbox, live, disputed, server, app):
    _tx_no, dispute_no = disputed()
    from app.store.merchants import create_merchant
    with app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, "Other disputes merchant", app.config["BASE_URL"])
        uow.commit()
    stranger = Api(server.url, other.sandbox_token)
    for client in (stranger, live):
        for answer in (client.get(f"/disputes/{dispute_no}"), client.post(f"/disputes/{dispute_no}/accept"),
                       client.post(f"/disputes/{dispute_no}/evidence", {"submit": True})):
            assert (answer.status_code, answer.json()) == (404, {"error": f"Dispute {dispute_no} not found"})
    assert stranger.get("/disputes").json() == {"disputes": [], "nextCursor": None}
    assert sandbox.get("/disputes/DSP-NOPE").json() == {"error": "Dispute DSP-NOPE not found"}
    assert json.loads(Api(server.url, "wrong").get("/disputes").text)["error"] == "Authentication Error"


def test_a_sandbox_reset_removes_the_disputes_of_its_test_payments(sandbox):
    """A Chargeback on a test transaction opens a dispute; the reset installs the test
    transactions anew, and their disputes go with the old ones (the reset used to fail on them)."""
    moved = sandbox.post("/sandbox/transactions/SBX-CAPTURED/outcome", {"status": "Chargeback"})
    assert moved.status_code == 200, moved.text
    assert [d["txNo"] for d in sandbox.get("/disputes?limit=200").json()["disputes"]].count("SBX-CAPTURED") == 1

    assert sandbox.post("/sandbox/reset").status_code == 200

    assert "SBX-CAPTURED" not in [d["txNo"] for d in sandbox.get("/disputes?limit=200").json()["disputes"]]
    assert sandbox.status("SBX-CAPTURED")["Status"] == "Captured"


PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40


def upload(api: Api, dispute_no: str, kind: str, name: str, data: bytes, content_type="application/pdf"):
    return api.session.post(f"{api.base_url}/api/v1/disputes/{dispute_no}/files", data={"kind": kind},
                            files={"file": (name, data, content_type)}, timeout=30)


def stored_files(app) -> list[dict]:
    from app.store.tables import dispute_files
    with app.extensions["paydesk"].uow(write=False) as uow:
        return [dict(r) for r in uow.conn.execute(select(dispute_files).order_by(dispute_files.c.id)).mappings()]


def test_a_file_is_kept_for_the_evidence_and_shown_on_the_dispute(sandbox, disputed, app):
    _tx_no, dispute_no = disputed()
    kept = upload(sandbox, dispute_no, "receipt", "../scans/receipt 42.pdf", PDF)
    assert kept.status_code == 201, kept.text
    body = kept.json()
    assert body == {"fileId": body["fileId"], "kind": "receipt", "filename": "receipt 42.pdf",
                    "contentType": "application/pdf", "size": len(PDF),
                    "sha256": __import__("hashlib").sha256(PDF).hexdigest(), "uploaded": False,
                    "providerFileId": None, "createdAt": body["createdAt"], "createdBy": body["createdBy"]}
    assert body["createdBy"].startswith("api:")
    # A PNG sent as "photo.pdf" is a PNG: its type is told by its content.
    photo = upload(sandbox, dispute_no, "shipping_documentation", "photo.pdf", PNG)
    assert (photo.status_code, photo.json()["contentType"]) == (201, "image/png")
    # One file per kind: a new receipt replaces the old.
    again = upload(sandbox, dispute_no, "receipt", "receipt-2.pdf", PDF + b"%2")
    assert again.status_code == 201
    shown = sandbox.get(f"/disputes/{dispute_no}").json()["files"]
    assert [(f["kind"], f["filename"], f["size"], f["uploaded"]) for f in shown] == [
        ("shipping_documentation", "photo.pdf", len(PNG), False), ("receipt", "receipt-2.pdf", len(PDF) + 2, False)]
    ours = [f for f in stored_files(app) if f["id"] in {s["fileId"] for s in shown}]
    assert sorted(f["data"] for f in ours) == sorted([PNG, PDF + b"%2"])


def test_a_file_of_another_type_or_too_large_is_refused_and_nothing_kept(sandbox, disputed, app):
    _tx_no, dispute_no = disputed()
    before = len(stored_files(app))
    html = upload(sandbox, dispute_no, "receipt", "receipt.pdf", b"<html><body>not a pdf</body></html>")
    assert (html.status_code, html.json()) == (400, {"errors": {"File": ["File must be a PDF, PNG or JPEG"]}})
    large = upload(sandbox, dispute_no, "receipt", "big.pdf", PDF + b"0" * (4 * 1024 * 1024))
    assert (large.status_code, large.json()) == (400, {"errors": {"File": ["File must be at most 4 MB"]}})
    huge = upload(sandbox, dispute_no, "receipt", "huge.pdf", PDF + b"0" * (5 * 1024 * 1024))
    assert (huge.status_code, huge.json()) == (413, {"errors": {"Body": ["Request body is too large"]}})
    kind = upload(sandbox, dispute_no, "selfie", "r.pdf", PDF)
    assert (kind.status_code, kind.json()) == (400, {"errors": {"Kind": [
        "Kind must be one of receipt, customer_communication, shipping_documentation, uncategorized_file"]}})
    missing = sandbox.session.post(f"{sandbox.base_url}/api/v1/disputes/{dispute_no}/files",
                                   data={"kind": "receipt"}, files={"other": ("x", b"y")}, timeout=30)
    assert (missing.status_code, missing.json()) == (400, {"errors": {"other": ["Unknown field"]}})
    as_json = sandbox.post(f"/disputes/{dispute_no}/files", {"kind": "receipt"})
    assert (as_json.status_code, as_json.json()) == (400, {"errors": {"Body": [
        "The body must be multipart/form-data with a file and its kind"]}})
    assert len(stored_files(app)) == before
    assert sandbox.get(f"/disputes/{dispute_no}").json()["files"] == []


def test_no_file_once_the_evidence_is_submitted(sandbox, disputed):
    _tx_no, dispute_no = disputed()
    assert sandbox.post(f"/disputes/{dispute_no}/evidence", {"submit": True}).status_code == 200
    late = upload(sandbox, dispute_no, "receipt", "r.pdf", PDF)
    assert (late.status_code, late.json()) == (409, {
        "error": f"Cannot send evidence for dispute {dispute_no}: its status is under_review"})

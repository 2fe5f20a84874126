"""GET /api/v1/settlements and /settlements/{id}, and the sandbox's daily settlements
(POST /api/v1/sandbox/settlements/run): exact bodies and codes, scoping, pagination. Both databases."""
from __future__ import annotations

from app.util import utcnow
from tests.conftest import Api

AUTH_ERROR = {"error": "Authentication Error", "message": "Invalid client credentials"}


def settlement_id_for(sandbox, tx_no: str) -> str:
    listed = sandbox.get("/settlements?limit=200").json()["settlements"]
    for settlement in listed:
        lines = sandbox.get(f"/settlements/{settlement['id']}").json()["lines"]
        if any(line["txNo"] == tx_no for line in lines):
            return settlement["id"]
    raise AssertionError(f"{tx_no} is in no settlement")


def test_the_sandbox_run_settles_captured_payments_less_the_documented_fee(sandbox, captured_payment):
    tx_no = captured_payment(amount=200)

    ran = sandbox.post("/sandbox/settlements/run")

    assert ran.status_code == 200, ran.text
    assert ran.json()["fee"] == "1.5% + 0.10 per payment, none on refunds"
    today = utcnow().date()
    [settlement] = [s for s in ran.json()["settlements"]
                    if s["providerSettlementId"] == f"SIM-{today:%Y%m%d}-EUR"]
    detail = sandbox.get(f"/settlements/{settlement['id']}")
    assert detail.status_code == 200
    body = detail.json()
    [line] = [line for line in body["lines"] if line["txNo"] == tx_no]
    assert line == {"providerTransactionId": line["providerTransactionId"], "reference": tx_no,
                    "type": "payment", "gross": 200.00, "fee": 3.10, "net": 196.90, "currency": "EUR",
                    "txNo": tx_no, "result": "matched"}
    # The sandbox's fixtures (five Captured 100.00 EUR payments) are settled the same day.
    # Paid out tomorrow: not paid yet ("pending"), as a provider would say of it.
    assert body["provider"] == "simulator" and body["currency"] == "EUR" and body["status"] == "pending"
    # 1.5% + 0.10: 1.60 on each fixture, 3.10 on 200.00.
    assert (body["gross"], body["fees"], body["net"]) == (700.00, 11.10, 688.90)
    assert body["lineCount"] == 6 and body["exceptionCount"] == 0
    assert body["settledOn"] == (today.fromordinal(today.toordinal() + 1)).isoformat()
    assert set(body) == {"id", "provider", "providerSettlementId", "settledOn", "currency", "gross", "fees",
                         "net", "status", "lineCount", "exceptionCount", "fetchedAt", "lines"}


def _lines_of(sandbox, tx_no: str) -> list[tuple]:
    """(type, gross, fee, result) of every line naming the transaction, in every settlement."""
    found = []
    for settlement in sandbox.get("/settlements?limit=200").json()["settlements"]:
        found += [(line["type"], line["gross"], line["fee"], line["result"])
                  for line in sandbox.get(f"/settlements/{settlement['id']}").json()["lines"]
                  if line["txNo"] == tx_no]
    return found


def test_a_charged_back_payment_is_settled_and_a_lost_dispute_is_taken_back(sandbox, captured_payment):
    """A payment captured and then charged back was paid out like any other; the money goes back
    only when its dispute is lost or accepted, as a negative dispute line naming the payment.
    Before, the run settled Captured and Refunded payments only: a charged-back payment's refund
    was taken back with no payment ever paid out, and a lost dispute never."""
    tx_no, still_open, won = captured_payment(80), captured_payment(30), captured_payment(40)
    refund_no = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 10}).json()["refundTxNo"]
    disputes = {}
    for payment in (tx_no, still_open, won):
        assert sandbox.post(f"/sandbox/transactions/{payment}/outcome", {"status": "Chargeback"}).status_code == 200
        [disputes[payment]] = [d["disputeId"] for d in sandbox.get("/disputes?limit=200").json()["disputes"]
                               if d["txNo"] == payment]
    sandbox.post(f"/sandbox/disputes/{disputes[won]}/outcome", {"outcome": "won"})

    assert sandbox.post("/sandbox/settlements/run").status_code == 200
    assert _lines_of(sandbox, tx_no) == [("payment", 80.00, 1.30, "matched")]
    assert _lines_of(sandbox, refund_no) == [("refund", -10.00, 0.00, "matched")]
    assert _lines_of(sandbox, still_open) == [("payment", 30.00, 0.55, "matched")]  # nothing taken yet
    assert _lines_of(sandbox, won) == [("payment", 40.00, 0.70, "matched")]  # the merchant kept it

    assert sandbox.post(f"/sandbox/disputes/{disputes[tx_no]}/outcome", {"outcome": "lost"}).status_code == 200
    assert sandbox.post("/sandbox/settlements/run").status_code == 200
    dispute_amount = sandbox.get(f"/disputes/{disputes[tx_no]}").json()["amount"]
    assert _lines_of(sandbox, tx_no) == [("payment", 80.00, 1.30, "matched"),
                                         ("dispute", -dispute_amount, 0.00, "matched")]
    body = sandbox.get(f"/settlements/{settlement_id_for(sandbox, tx_no)}").json()
    assert body["gross"] == sum(line["gross"] for line in body["lines"])  # the day's total takes it


def test_the_sandbox_run_can_settle_one_payment_short_to_show_an_exception(sandbox, captured_payment):
    tx_no = captured_payment(amount=50)

    ran = sandbox.post("/sandbox/settlements/run", {"amountDiffersFor": tx_no})

    assert ran.status_code == 200, ran.text
    body = sandbox.get(f"/settlements/{settlement_id_for(sandbox, tx_no)}").json()
    [line] = [line for line in body["lines"] if line["txNo"] == tx_no]
    assert (line["gross"], line["result"]) == (49.00, "amount_differs")
    assert body["exceptionCount"] == 1
    sandbox.post("/sandbox/settlements/run")  # settled again, in full: the exception is gone
    body = sandbox.get(f"/settlements/{settlement_id_for(sandbox, tx_no)}").json()
    assert body["exceptionCount"] == 0


def test_the_sandbox_run_refuses_unknown_fields_and_live_tokens(sandbox, live):
    refused = sandbox.post("/sandbox/settlements/run", {"differ": "PAY-1"})
    assert (refused.status_code, refused.json()) == (400, {"errors": {"Differ": ["Unknown field"]}})
    wrong = sandbox.post("/sandbox/settlements/run", {"amountDiffersFor": 12})
    assert (wrong.status_code, wrong.json()) == (400, {"errors": {"AmountDiffersFor": [
        "AmountDiffersFor must be a txNo"]}})
    live_answer = live.post("/sandbox/settlements/run")
    assert (live_answer.status_code, live_answer.json()) == (403, {"error": "Sandbox only"})


def test_settlements_are_paged_with_an_opaque_cursor(sandbox, captured_payment, app):
    captured_payment(amount=10, currency="USD")
    captured_payment(amount=10, currency="GBP")
    sandbox.post("/sandbox/settlements/run")  # EUR, USD and GBP: three settlements

    first = sandbox.get("/settlements?limit=2").json()
    assert len(first["settlements"]) == 2 and first["nextCursor"]
    second = sandbox.get(f"/settlements?limit=2&cursor={first['nextCursor']}").json()
    assert len(second["settlements"]) == 1 and second["nextCursor"] is None
    ids = [s["id"] for s in first["settlements"] + second["settlements"]]
    assert len(set(ids)) == 3 and ids == sorted(ids, key=lambda i: -int(i.removeprefix("stl_")))
    assert sandbox.get("/settlements").json()["nextCursor"] is None  # default limit 50


def test_bad_limits_and_cursors_are_field_errors(sandbox):
    for limit in ("0", "201", "x", "-1"):
        answer = sandbox.get(f"/settlements?limit={limit}")
        assert (answer.status_code, answer.json()) == (400, {"errors": {"Limit": [
            "Limit must be a whole number from 1 to 200"]}})
    answer = sandbox.get("/settlements?cursor=not-ours")
    assert (answer.status_code, answer.json()) == (400, {"errors": {"Cursor": [
        "Cursor is not one this API gave; start again without it"]}})


def test_another_merchant_s_or_mode_s_settlement_is_not_found(sandbox, live, captured_payment, server, app):
    captured_payment(amount=10)
    sandbox.post("/sandbox/settlements/run")
    settlement_id = sandbox.get("/settlements").json()["settlements"][0]["id"]
    from app.store.merchants import create_merchant

    with app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, f"Other {settlement_id}-{utcnow().timestamp()}", app.config["BASE_URL"])
        uow.commit()
    stranger = Api(server.url, other.sandbox_token)

    for api in (live, stranger):
        answer = api.get(f"/settlements/{settlement_id}")
        assert (answer.status_code, answer.json()) == (404, {"error": f"Settlement {settlement_id} not found"})
    assert stranger.get("/settlements").json() == {"settlements": [], "nextCursor": None}
    assert live.get("/settlements").json() == {"settlements": [], "nextCursor": None}
    unknown = sandbox.get("/settlements/stl_x")
    assert (unknown.status_code, unknown.json()) == (404, {"error": "Settlement stl_x not found"})


def test_settlements_need_a_token(server):
    for path in ("/settlements", "/settlements/stl_1"):
        answer = Api(server.url, "wrong").get(path)
        assert (answer.status_code, answer.json()) == (401, AUTH_ERROR)


def test_a_sandbox_reset_after_a_settlement_run_keeps_the_lines_and_rematches_them(sandbox, captured_payment):
    """The reset installs the test transactions anew: a line that matched one is unknown until the
    next run matches it to the new one by its txNo (the reset used to fail on the line's link)."""
    sandbox.post("/sandbox/settlements/run")
    assert sandbox.post("/sandbox/reset").status_code == 200

    today = utcnow().date()
    listed = sandbox.get("/settlements").json()["settlements"]
    [settlement] = [s for s in listed if s["providerSettlementId"] == f"SIM-{today:%Y%m%d}-EUR"]
    lines = sandbox.get(f"/settlements/{settlement['id']}").json()["lines"]
    assert {line["result"] for line in lines if line["reference"] == "SBX-CAPTURED"} == {"unknown_to_paydesk"}

    rerun = sandbox.post("/sandbox/settlements/run")
    assert rerun.status_code == 200
    lines = sandbox.get(f"/settlements/{settlement['id']}").json()["lines"]
    assert {line["result"] for line in lines if line["reference"] == "SBX-CAPTURED"} == {"matched"}

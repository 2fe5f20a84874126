"""Stored settlements: each reconciliation outcome, an idempotent re-fetch, and a store cut off
midway that loses and doubles nothing. Both databases."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from app.payments.model import Caller, Mode
from app.payments.reconcile import DEFAULT_SETTLEMENT_DELAY, FetchedLine, FetchedSettlement, LineType, Outcome
from app.store import settlements as store
from app.store.tables import settlement_lines, settlements, transactions
from app.util import utcnow


def sandbox_caller(merchant) -> Caller:
    return Caller(merchant.merchant_id, Mode.SANDBOX, "tests")


def line(provider_id: str, gross: int, *, reference: str | None = None, fee: int = 160,
         type_: LineType = LineType.PAYMENT, currency: str = "EUR") -> FetchedLine:
    return FetchedLine(provider_id, type_, gross, fee, gross - fee, currency, reference)


def settlement_of(*lines: FetchedLine, provider_id: str = "SIM-1", status: str = "success") -> FetchedSettlement:
    gross = sum(item.gross_minor for item in lines)
    fees = sum(item.fee_minor for item in lines)
    return FetchedSettlement(provider_id, utcnow().date(), "EUR", gross, fees, gross - fees, status, list(lines))


def save(app, merchant, fetched: FetchedSettlement) -> int:
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        settlement_id = store.save_settlement(uow.conn, merchant_id=merchant.merchant_id, mode="sandbox",
                                              provider="simulator", provider_account_id=None,
                                              fetched=fetched, fetched_at=utcnow())
        uow.commit()
    return settlement_id


def lines_of(app, merchant, settlement_id: int) -> list[store.StoredLine]:
    with app.extensions["paydesk"].uow(write=False) as uow:
        assert store.get_settlement(uow.conn, sandbox_caller(merchant), settlement_id) is not None
        return store.lines_of(uow.conn, settlement_id)


def test_a_line_with_the_payment_s_amount_is_matched(app, merchant, captured_payment):
    tx_no = captured_payment(amount=100)

    found = lines_of(app, merchant, save(app, merchant, settlement_of(line("sim_1", 10000, reference=tx_no))))

    assert [(item.tx_no, item.outcome, item.fee_minor) for item in found] == [(tx_no, Outcome.MATCHED, 160)]


def test_a_line_with_another_amount_differs(app, merchant, captured_payment):
    tx_no = captured_payment(amount=100)

    found = lines_of(app, merchant, save(app, merchant, settlement_of(line("sim_1", 9900, reference=tx_no))))

    assert [(item.tx_no, item.outcome) for item in found] == [(tx_no, Outcome.AMOUNT_DIFFERS)]


def test_a_line_in_another_currency_differs(app, merchant, captured_payment):
    tx_no = captured_payment(amount=100)

    found = lines_of(app, merchant, save(app, merchant, settlement_of(
        line("sim_1", 10000, reference=tx_no, currency="USD"))))

    assert [item.outcome for item in found] == [Outcome.AMOUNT_DIFFERS]


def test_a_line_naming_nothing_of_paydesk_is_unknown(app, merchant, captured_payment):
    found = lines_of(app, merchant, save(app, merchant, settlement_of(line("sim_404", 5000, reference="PAY-NOPE"))))

    assert [(item.tx_no, item.outcome) for item in found] == [(None, Outcome.UNKNOWN_TO_PAYDESK)]


def test_another_merchant_s_payment_is_unknown_to_this_one(app, merchant, other_merchant_payment):
    found = lines_of(app, merchant, save(app, merchant, settlement_of(
        line("sim_1", 10000, reference=other_merchant_payment))))

    assert [item.outcome for item in found] == [Outcome.UNKNOWN_TO_PAYDESK]


def test_a_line_is_matched_by_the_provider_s_id(app, merchant, captured_payment):
    tx_no = captured_payment(amount=100)
    with app.extensions["paydesk"].uow(write=False) as uow:
        provider_id = uow.conn.execute(select(transactions.c.provider_transaction_id).where(
            transactions.c.tx_no == tx_no)).scalar_one()
    assert provider_id

    found = lines_of(app, merchant, save(app, merchant, settlement_of(line(provider_id, 10000))))

    assert [(item.tx_no, item.outcome) for item in found] == [(tx_no, Outcome.MATCHED)]


def test_a_refund_line_is_matched_to_the_refund(app, merchant, captured_payment, sandbox):
    tx_no = captured_payment(amount=100)
    refund = sandbox.post("/transactions/refund", {"txNo": tx_no, "amount": 30}).json()["refundTxNo"]

    found = lines_of(app, merchant, save(app, merchant, settlement_of(
        line("sim_1", 10000, reference=tx_no), line("sim_2", -3000, reference=refund, fee=0,
                                                    type_=LineType.REFUND))))

    assert [(item.tx_no, item.outcome) for item in found] == [(tx_no, Outcome.MATCHED),
                                                             (refund, Outcome.MATCHED)]


def test_a_captured_payment_past_the_delay_that_no_settlement_carries_is_missing(app, merchant,
                                                                                 captured_payment):
    settled, unsettled = captured_payment(amount=100), captured_payment(amount=20)
    save(app, merchant, settlement_of(line("sim_1", 10000, reference=settled)))
    caller = sandbox_caller(merchant)

    with app.extensions["paydesk"].uow(write=False) as uow:
        before_delay = store.missing_from_settlement(uow.conn, utcnow() + timedelta(days=1),
                                                     DEFAULT_SETTLEMENT_DELAY, caller)
        after_delay = store.missing_from_settlement(uow.conn, utcnow() + timedelta(days=3),
                                                    DEFAULT_SETTLEMENT_DELAY, caller)

    missing_now = {item.tx_no for item in after_delay}
    assert {item.tx_no for item in before_delay} & {settled, unsettled} == set()
    assert unsettled in missing_now and settled not in missing_now
    missing = next(item for item in after_delay if item.tx_no == unsettled)
    assert (missing.amount_minor, missing.currency, missing.provider) == (2000, "EUR", "simulator")


def test_payments_of_a_provider_without_settlements_are_never_missing(app, merchant, captured_payment):
    captured_payment(amount=100)  # the merchant has no settlement at all

    with app.extensions["paydesk"].uow(write=False) as uow:
        assert store.missing_from_settlement(uow.conn, utcnow() + timedelta(days=30), DEFAULT_SETTLEMENT_DELAY,
                                             sandbox_caller(merchant)) == []


def test_fetching_a_settlement_again_changes_nothing(app, merchant, captured_payment):
    tx_no = captured_payment(amount=100)
    fetched = settlement_of(line("sim_1", 10000, reference=tx_no), line("sim_2", 5000, reference="PAY-X"))

    first = save(app, merchant, fetched)
    again = save(app, merchant, fetched)

    assert again == first
    assert counts(app, first) == (1, 2)
    assert [item.outcome for item in lines_of(app, merchant, first)] == [Outcome.MATCHED,
                                                                        Outcome.UNKNOWN_TO_PAYDESK]


def test_a_changed_settlement_replaces_its_lines(app, merchant, captured_payment):
    tx_no = captured_payment(amount=100)
    first = save(app, merchant, settlement_of(line("sim_1", 9000, reference=tx_no), status="pending"))

    again = save(app, merchant, settlement_of(line("sim_1", 10000, reference=tx_no), status="success"))

    assert again == first and counts(app, first) == (1, 1)
    with app.extensions["paydesk"].uow(write=False) as uow:
        summary = store.get_settlement(uow.conn, sandbox_caller(merchant), first)
    assert (summary.status, summary.gross_minor, summary.exception_count) == ("success", 10000, 0)


class Killed(BaseException):
    """The worker dies (SIGKILL) between storing the settlement and its lines."""


def test_a_worker_killed_while_storing_a_settlement_loses_and_doubles_nothing(app, merchant, captured_payment,
                                                                             monkeypatch):
    tx_no = captured_payment(amount=100)
    fetched = settlement_of(line("sim_1", 10000, reference=tx_no), line("sim_2", 5000))
    real_match = store.match

    def dies_after_the_settlement_row(*args):
        raise Killed

    monkeypatch.setattr(store, "match", dies_after_the_settlement_row)
    with pytest.raises(Killed):
        save(app, merchant, fetched)
    monkeypatch.setattr(store, "match", real_match)
    with app.extensions["paydesk"].uow(write=False) as uow:
        assert store.list_settlements(uow.conn, sandbox_caller(merchant)) == []

    settlement_id = save(app, merchant, fetched)  # the next worker fetches it again
    save(app, merchant, fetched)

    assert counts(app, settlement_id) == (1, 2)


def counts(app, settlement_id: int) -> tuple[int, int]:
    """How many settlement rows share this one's provider id, and how many lines it has."""
    with app.extensions["paydesk"].uow(write=False) as uow:
        provider_id, merchant_id = uow.conn.execute(select(
            settlements.c.provider_settlement_id, settlements.c.merchant_id)
            .where(settlements.c.id == settlement_id)).one()
        rows = uow.conn.execute(select(func.count()).select_from(settlements).where(
            settlements.c.provider_settlement_id == provider_id,
            settlements.c.merchant_id == merchant_id)).scalar_one()
        lines = uow.conn.execute(select(func.count()).select_from(settlement_lines).where(
            settlement_lines.c.settlement_id == settlement_id)).scalar_one()
    return rows, lines


@pytest.fixture
def other_merchant_payment(app):
    """A captured sandbox payment of another merchant: its txNo."""
    import uuid

    from app.store.merchants import create_merchant
    from tests.conftest import Api, payment_body

    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        created = create_merchant(uow, f"Other {uuid.uuid4().hex[:8]}", app.config["BASE_URL"])
        uow.commit()
    api = Api(app.config["BASE_URL"], created.sandbox_token)
    tx_no = api.post("/transactions", payment_body(amount=100)).json()["transactionId"]
    assert api.post(f"/sandbox/transactions/{tx_no}/outcome", {"status": "Captured"}).status_code == 200
    return tx_no

"""Payout and refund batches on both databases: each row checked by the create's (or refund's)
own rules and messages, nothing created while in review, one approval for the batch, the worker
creating each row once."""
from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from app.payments import approvals, batches, recipients
from app.payments.approvals import ApprovalKind, ApprovalState
from app.payments.batches import BatchFileError, BatchKind, BatchState, PayoutDefaults, RowState
from app.payments.model import Caller, Mode
from app.store import approvals as approval_store
from app.store.tables import transactions
from tests.api.test_create_and_status import nuban

ACCOUNT = nuban("058", "012345678")
DEFAULTS = PayoutDefaults("SHOP", "https://merchant.example/webhooks")


@pytest.fixture
def deps(app):
    return app.extensions["paydesk"]


@pytest.fixture
def alice(merchant):
    return Caller(merchant.merchant_id, Mode.SANDBOX, "alice@shop.test", "127.0.0.1")


@pytest.fixture
def bob(merchant):
    return Caller(merchant.merchant_id, Mode.SANDBOX, "bob@shop.test", "127.0.0.1")


def csv_file(*rows: str, header="method,amount,currency,bank,holder,account,reference,email") -> bytes:
    return ("\ufeff" + header + "\r\n" + "\r\n".join(rows) + "\r\n").encode()


def row(reference: str, amount="100.00", bank="058", account=ACCOUNT, method="ng-bank-payout") -> str:
    return f"{method},{amount},NGN,{bank},Ada Obi,{account},{reference},ada@example.com"


def upload(deps, caller, data: bytes, key=None):
    return batches.create_batch(deps, caller, BatchKind.PAYOUT, batches.read_csv(data, BatchKind.PAYOUT),
                                source="dashboard", file_name="payouts.csv", request_key=key,
                                defaults=DEFAULTS)


def payouts_with(deps, merchant, prefix: str) -> int:
    with deps.uow(write=False) as uow:
        return uow.conn.execute(select(func.count()).select_from(transactions).where(
            transactions.c.merchant_id == merchant.merchant_id,
            transactions.c.reference.like(f"{prefix}%"))).scalar_one()


def run_worker(deps):
    return batches.run_due_batches(deps)


def test_the_file_must_name_its_columns():
    with pytest.raises(BatchFileError) as refused:
        batches.read_csv(b"method,amount\r\nx,1\r\n", BatchKind.PAYOUT)
    assert str(refused.value) == "The header has no column currency"
    with pytest.raises(BatchFileError) as refused:
        batches.read_csv(b"method,amount,currency,holder,account,reference,colour\r\n", BatchKind.PAYOUT)
    assert str(refused.value).startswith("Unknown column: colour (the columns are method, amount,")
    with pytest.raises(BatchFileError) as refused:
        batches.read_csv(b"\xff\xfe", BatchKind.PAYOUT)
    assert str(refused.value) == "The file must be CSV text in UTF-8"
    with pytest.raises(BatchFileError) as refused:
        batches.read_csv(csv_file(), BatchKind.PAYOUT)
    assert str(refused.value) == "The file has no rows after its header"


def test_amounts_are_read_exactly_as_the_api_reads_json_numbers():
    read = batches.read_csv(csv_file(row("r", amount="0.1"), row("s", amount="1e2"), row("t", amount='"1,5"')),
                            BatchKind.PAYOUT)
    bodies = [batches.payout_body(r, DEFAULTS)["amount"] for r in read]
    assert bodies == [Decimal("0.1"), Decimal("1e2"), "1,5"]


def test_each_row_gets_the_single_payouts_messages(deps, alice, merchant):
    prefix = uuid.uuid4().hex[:8]
    batch = upload(deps, alice, csv_file(
        row(f"{prefix}-1"), row(f"{prefix}-2", bank="999"), row(f"{prefix}-3", account="0123456789"),
        row(f"{prefix}-1"), row(f"{prefix}-5", amount='"1,5"'), row(f"{prefix}-6", method="card"),
        row(f"{prefix}-7", amount="100.001")))
    rows = batches.rows_of(deps, batch)
    assert [r.errors for r in rows] == [
        None,
        {"Payment.Bank": ["Bank 999 is not in the bank list of payment method ng-bank-payout"],
         "Payment.AccountNumber": ["Account number is not a valid NUBAN for bank 999"]},
        {"Payment.AccountNumber": [rows[2].errors["Payment.AccountNumber"][0]]},
        {"Reference": [f"Reference {prefix}-1 is also on row 1"]},
        {"Amount": ["Amount must be a number"]},
        {"Payment.PaymentMethod": ["Payment method card is not a payout method"]},
        {"Amount": ["Amount has more decimal places than NGN allows (2)"]},
    ]
    assert batch.state is BatchState.REVIEW
    assert (batch.count(RowState.VALID), batch.count(RowState.INVALID)) == (1, 6)
    assert batch.totals == {"NGN": Decimal("100.00")}
    assert payouts_with(deps, merchant, prefix) == 0  # nothing created in review
    run_worker(deps)
    assert payouts_with(deps, merchant, prefix) == 0


RECIPIENT_HEADER = "method,amount,currency,bank,holder,account,reference,email,recipient"


def _saved_recipient(deps, caller) -> str:
    saved = recipients.save(deps, caller, recipients.RecipientDetails(
        payment_method="ng-bank-payout", currency="NGN", bank="058", holder="Chidi Eze",
        account_number=nuban("058", "111111111"), first_name="Chidi", last_name="Eze",
        email="chidi@example.com"))
    return saved.recipient.public_id


def test_a_row_naming_a_saved_recipient_pays_its_account(deps, alice, merchant):
    recipient_id = _saved_recipient(deps, alice)
    prefix = uuid.uuid4().hex[:8]
    data = csv_file(f",75.00,,,,,{prefix}-1,,{recipient_id}", header=RECIPIENT_HEADER)

    batch = upload(deps, alice, data)
    [checked] = batches.rows_of(deps, batch)
    assert checked.errors is None
    batches.run(deps, alice, batch.public_id)
    run_worker(deps)

    with deps.uow(write=False) as uow:
        payout = uow.transactions.get(alice, batches.rows_of(deps, batch)[0].tx_no)
    assert (payout.amount, payout.currency) == (Decimal("75.00"), "NGN")
    assert payout.payment_details == {"bank": "058", "holder": "Chidi Eze",
                                      "accountNumber": nuban("058", "111111111")}
    assert payout.billing["email"] == "chidi@example.com"


def test_a_row_naming_an_unknown_recipient_or_another_account_is_refused(deps, alice, bob, merchant):
    recipient_id = _saved_recipient(deps, alice)
    data = csv_file(",1.00,,,,,r-1,,rcp_nobody",
                    f"ng-bank-payout,1.00,,,,{ACCOUNT},r-2,,{recipient_id}", header=RECIPIENT_HEADER)

    batch = upload(deps, alice, data)

    assert [row.errors["Recipient"] for row in batches.rows_of(deps, batch)] == [
        ["Recipient rcp_nobody not found (or archived)"],
        [f"Recipient {recipient_id} has its own account: leave method, account empty"]]
    live = Caller(merchant.merchant_id, Mode.LIVE, "alice@shop.test", "127.0.0.1")
    other_mode = batches.create_batch(deps, live, BatchKind.PAYOUT, batches.read_csv(
        csv_file(f",1.00,,,,,r-3,,{recipient_id}", header=RECIPIENT_HEADER), BatchKind.PAYOUT),
        source="dashboard", file_name="p.csv", request_key=None, defaults=DEFAULTS)
    assert batches.rows_of(deps, other_mode)[0].errors == {
        "Recipient": [f"Recipient {recipient_id} not found (or archived)"]}


def test_running_the_valid_rows_creates_each_once_and_a_reupload_creates_nothing(deps, alice, merchant):
    prefix = uuid.uuid4().hex[:8]
    data = csv_file(row(f"{prefix}-1"), row(f"{prefix}-2", bank="999"), row(f"{prefix}-3", amount="250.50"))
    batch = upload(deps, alice, data)
    running = batches.run(deps, alice, batch.public_id)
    assert running.state is BatchState.RUNNING
    assert running.count(RowState.SKIPPED) == 1
    run_worker(deps)
    done = batches.get_batch(deps, alice, batch.public_id)
    assert done.state is BatchState.DONE
    assert (done.count(RowState.CREATED), done.count(RowState.SKIPPED)) == (2, 1)
    assert payouts_with(deps, merchant, prefix) == 2
    rows = batches.rows_of(deps, batch)
    assert [(r.number, r.state, r.tx_no is not None) for r in rows] == [
        (1, RowState.CREATED, True), (2, RowState.SKIPPED, False), (3, RowState.CREATED, True)]
    results = batches.results_csv(rows).splitlines()
    assert results[0] == "row,txNo,status,declineReason"
    assert results[2] == ("2,,skipped,Bank 999 is not in the bank list of payment method ng-bank-payout; "
                          "Account number is not a valid NUBAN for bank 999")
    assert results[1].startswith(f"1,{rows[0].tx_no},")

    again = upload(deps, alice, data)
    again_rows = batches.rows_of(deps, again)
    assert again_rows[0].errors == {"Reference": [f"Transaction with reference {prefix}-1 already exists"]}
    assert again.count(RowState.VALID) == 0
    with pytest.raises(batches.BatchRefused) as refused:
        batches.run(deps, alice, again.public_id)
    assert str(refused.value) == "This batch has no valid rows to run."
    assert payouts_with(deps, merchant, prefix) == 2


def test_the_same_upload_key_makes_one_batch(deps, alice):
    data = csv_file(row(uuid.uuid4().hex))
    first = upload(deps, alice, data, key="k-" + uuid.uuid4().hex)
    assert upload(deps, alice, data, key=first_key(deps, first)).public_id == first.public_id


def first_key(deps, batch):
    from app.store.tables import batches as batch_table
    with deps.uow(write=False) as uow:
        return uow.conn.execute(select(batch_table.c.request_key).where(
            batch_table.c.id == batch.id)).scalar_one()


def test_a_batch_above_the_threshold_waits_for_one_approval(deps, alice, bob, merchant):
    with deps.uow() as uow:
        approval_store.set_threshold(uow.conn, alice, "NGN", Decimal("150.00"), deps.clock())
        uow.commit()
    prefix = uuid.uuid4().hex[:8]
    batch = upload(deps, alice, csv_file(row(f"{prefix}-1"), row(f"{prefix}-2")))
    waiting = batches.run(deps, alice, batch.public_id)
    assert waiting.state is BatchState.AWAITING_APPROVAL
    run_worker(deps)
    assert payouts_with(deps, merchant, prefix) == 0
    with deps.uow(write=False) as uow:
        request = uow.approvals.get(alice, waiting.approval_id)
    assert (request.kind, request.amount, request.currency) == (ApprovalKind.PAYOUT_BATCH, Decimal("200.00"), "NGN")
    assert request.body == {"batch": batch.public_id, "rows": 2, "totals": {"NGN": "200.00"}}
    with pytest.raises(approvals.ApprovalRefused):
        approvals.approve(deps, alice, request.id)  # not by its requester
    approved = approvals.approve(deps, bob, request.id)
    assert approved.state is ApprovalState.APPROVED
    assert batches.get_batch(deps, alice, batch.public_id).state is BatchState.RUNNING
    run_worker(deps)
    assert payouts_with(deps, merchant, prefix) == 2


def test_a_rejected_batch_is_cancelled(deps, alice, bob, merchant):
    with deps.uow() as uow:
        approval_store.set_threshold(uow.conn, alice, "NGN", Decimal("1.00"), deps.clock())
        uow.commit()
    prefix = uuid.uuid4().hex[:8]
    batch = batches.run(deps, alice, upload(deps, alice, csv_file(row(f"{prefix}-1"))).public_id)
    approvals.reject(deps, bob, batch.approval_id, "Not this month")
    assert batches.get_batch(deps, alice, batch.public_id).state is BatchState.CANCELLED
    run_worker(deps)
    assert payouts_with(deps, merchant, prefix) == 0


def test_a_cancelled_batch_cannot_be_run(deps, alice):
    batch = upload(deps, alice, csv_file(row(uuid.uuid4().hex)))
    assert batches.cancel(deps, alice, batch.public_id).state is BatchState.CANCELLED
    with pytest.raises(batches.BatchRefused) as refused:
        batches.run(deps, alice, batch.public_id)
    assert str(refused.value) == "This batch is cancelled; only a batch in review can be run."


def test_another_merchants_batch_is_not_found(deps, alice, app):
    batch = upload(deps, alice, csv_file(row(uuid.uuid4().hex)))
    other = Caller(alice.merchant_id, Mode.LIVE, "alice@shop.test")
    with pytest.raises(batches.BatchNotFound):
        batches.get_batch(deps, other, batch.public_id)


def test_a_file_of_5000_rows_is_checked_whole(deps, alice, merchant):
    prefix = uuid.uuid4().hex[:8]
    data = csv_file(*(row(f"{prefix}-{n}") for n in range(batches.MAX_ROWS)))
    batch = upload(deps, alice, data)
    assert (batch.row_count, batch.count(RowState.VALID)) == (5000, 5000)
    assert batch.totals == {"NGN": Decimal("500000.00")}
    with pytest.raises(BatchFileError) as refused:
        batches.read_csv(csv_file(*(row(f"{prefix}-{n}") for n in range(batches.MAX_ROWS + 1))), BatchKind.PAYOUT)
    assert str(refused.value) == "A batch holds at most 5000 rows"

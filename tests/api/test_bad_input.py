"""Bad input gets a 400 with a clear field error, writes nothing, and never a 5xx."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from app.store.tables import transactions
from tests.conftest import payment_body


def count_transactions(app, merchant_id: int) -> int:
    with app.extensions["paydesk"].uow(write=False) as uow:
        return uow.conn.execute(select(func.count()).select_from(transactions)
                                .where(transactions.c.merchant_id == merchant_id)).scalar_one()


RAW_BODIES = [
    (b"not json", {"Body": ["Request body must be valid JSON"]}),
    (b"", {"Body": ["Request body must be valid JSON"]}),
    (b"[1, 2]", {"Body": ["Request body must be a JSON object"]}),
    (b'"text"', {"Body": ["Request body must be a JSON object"]}),
    (b'{"amount": NaN}', {"Body": ["Request body must be valid JSON"]}),
    (b'{"amount": Infinity}', {"Body": ["Request body must be valid JSON"]}),
    (b"\xff\xfe", {"Body": ["Request body must be valid JSON"]}),
    # Opens 100,000 arrays: refused by its depth before any parser reads it.
    (b"[" * 100000, {"Body": ["Request body must not nest arrays and objects more than 64 deep"]}),
]


@pytest.mark.parametrize("path", ["/transactions", "/transactions/refund"])
@pytest.mark.parametrize("raw,errors", RAW_BODIES)
def test_non_json_bodies(sandbox, app, merchant, path, raw, errors):
    before = count_transactions(app, merchant.merchant_id)
    response = sandbox.post(path, data=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json() == {"errors": errors}
    assert count_transactions(app, merchant.merchant_id) == before


AMOUNT_ERRORS = [
    ("100", "Amount must be a number"),
    (True, "Amount must be a number"),
    ([], "Amount must be a number"),
    ({"v": 1}, "Amount must be a number"),
    (-1, "Amount must be greater than 0"),
    (0, "Amount must be greater than 0"),
    (10**30, "Amount must be at most 1000000000"),
    ("1e400", None),  # sent as a raw JSON number below
    (1.00001, "Amount has too many decimal places"),
]


@pytest.mark.parametrize("amount,message", [a for a in AMOUNT_ERRORS if a[1]])
def test_refund_amount_errors(sandbox, app, merchant, amount, message):
    before = count_transactions(app, merchant.merchant_id)
    response = sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": amount})
    assert response.status_code == 400
    assert response.json() == {"errors": {"Amount": [message]}}
    assert count_transactions(app, merchant.merchant_id) == before


# JSON numbers past the default decimal context (28 digits, exponents to -999999), past
# Decimal's own exponents (10**18), and past int()'s 4300 digits: never rounded, never zero.
HUGE_AND_TINY_NUMBERS = [
    ("1e400", "Amount must be at most 1000000000"),
    ("-0.0", "Amount must be greater than 0"),
    ("1e-400", "Amount has too many decimal places"),
    ("123456789012345678901234567890.5", "Amount must be at most 1000000000"),
    ("1e-1000000000", "Amount has too many decimal places"),
    ("10.000000000000000000000000000001", "Amount has too many decimal places"),
    ("99.999999999999999999999999999999", "Amount has too many decimal places"),
    ("9.99999999999999999999999999999999", "Amount has too many decimal places"),
    ("1" + "0" * 5000, "Amount must be at most 1000000000"),
    ("-1" + "0" * 5000, "Amount must be greater than 0"),
    ("1e99999999999999999999", "Amount must be at most 1000000000"),
    ("-1e99999999999999999999", "Amount must be greater than 0"),
    ("1e-99999999999999999999", "Amount has too many decimal places"),
    ("0e99999999999999999999", "Amount must be greater than 0"),
    ("1e" + "9" * 5000, "Amount must be at most 1000000000"),
]


@pytest.mark.parametrize("raw_number,message", HUGE_AND_TINY_NUMBERS)
def test_huge_and_tiny_json_numbers(sandbox, app, merchant, raw_number, message):
    before = count_transactions(app, merchant.merchant_id)
    raw = ('{"txNo": "SBX-CAPTURED", "amount": %s}' % raw_number).encode()
    response = sandbox.post("/transactions/refund", data=raw)
    assert response.status_code == 400
    assert response.json() == {"errors": {"Amount": [message]}}
    create = json.dumps(payment_body(amount=0)).replace('"amount": 0', '"amount": ' + raw_number)
    response = sandbox.post("/transactions", data=create.encode())
    assert response.status_code == 400
    assert response.json() == {"errors": {"Amount": [message]}}
    assert count_transactions(app, merchant.merchant_id) == before


def test_a_refund_one_digit_short_of_the_original_is_refused_not_rounded_up(sandbox, captured_payment):
    tx_no = captured_payment(10)
    raw = ('{"txNo": "%s", "amount": 9.99999999999999999999999999999999}' % tx_no).encode()
    response = sandbox.post("/transactions/refund", data=raw)
    assert response.status_code == 400
    assert response.json() == {"errors": {"Amount": ["Amount has too many decimal places"]}}
    assert sandbox.status(tx_no)["Status"] == "Captured"


def test_a_five_thousand_digit_integer_elsewhere_is_a_field_error_too(sandbox):
    response = sandbox.post("/transactions", data=json.dumps(payment_body(reference=0)).replace(
        '"reference": 0', '"reference": ' + "7" * 5000).encode())
    assert response.status_code == 400
    assert response.json() == {"errors": {"Reference": ["Reference must be a string"]}}


def test_too_many_decimals_for_the_original_currency(sandbox):
    response = sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 10.001})
    assert response.status_code == 400
    assert response.json() == {"errors": {"Amount": ["Amount has more decimal places than EUR allows (2)"]}}


def test_unknown_currency(sandbox):
    response = sandbox.post("/transactions", payment_body(currency="XYZ"))
    assert response.json() == {"errors": {"Currency": ["Currency must be an ISO 4217 currency code, e.g. EUR"]}}


@pytest.mark.parametrize("currency", ["eur", "EURO", 978, "XAU"])
def test_currency_must_be_an_upper_case_iso_code(sandbox, currency):
    response = sandbox.post("/transactions", payment_body(currency=currency))
    assert response.status_code == 400
    assert "Currency" in response.json()["errors"]


def test_ten_kilobyte_strings_are_refused(sandbox, app, merchant):
    before = count_transactions(app, merchant.merchant_id)
    response = sandbox.post("/transactions", payment_body(reference="r" * 10240))
    assert response.status_code == 400
    assert response.json() == {"errors": {"Reference": ["Reference must be at most 100 characters"]}}
    refund = sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 1, "reason": "x" * 10240})
    assert refund.json() == {"errors": {"Reason": ["Reason must be at most 255 characters"]}}
    assert count_transactions(app, merchant.merchant_id) == before


@pytest.mark.parametrize("depth", [65, 999, 100_000])
def test_a_body_nested_too_deep_is_refused_unread(sandbox, app, merchant, depth):
    """Nothing Paydesk takes nests more than four levels; past MAX_JSON_DEPTH the body is not
    parsed at all (the parser recurses once a level), and the request log keeps it as text."""
    before = count_transactions(app, merchant.merchant_id)
    body = '{"amount": ' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}"
    response = sandbox.post("/transactions", data=body.encode(), headers={"Content-Type": "application/json"})
    assert (response.status_code, response.json()) == (400, {"errors": {"Body": [
        "Request body must not nest arrays and objects more than 64 deep"]}})
    assert count_transactions(app, merchant.merchant_id) == before


def test_a_body_nested_64_deep_is_read_and_validated(sandbox):
    body = '{"amount": ' + "[" * 63 + "1" + "]" * 63 + "}"
    response = sandbox.post("/transactions", data=body.encode(), headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["errors"]["Amount"] == ["Amount must be a number"]


def test_unknown_fields_are_refused(sandbox):
    response = sandbox.post("/transactions/refund", {"txNo": "SBX-CAPTURED", "amount": 1, "amout": 2})
    assert response.json() == {"errors": {"Amout": ["Unknown field"]}}
    nested = sandbox.post("/transactions", payment_body(billing={
        "firstName": "A", "lastName": "B", "email": "a@b.co", "customerReference": "c", "age": 3}))
    assert nested.json() == {"errors": {"Billing.Age": ["Unknown field"]}}


@pytest.mark.parametrize("field,value,message", [
    ("reference", 42, "Reference must be a string"),
    ("callbackUrl", "ftp://x.example/h", "CallbackUrl must be an http or https URL"),
    ("callbackUrl", "not a url", "CallbackUrl must be an http or https URL"),
    ("statementDescriptor", "x" * 23, "StatementDescriptor must be at most 22 characters"),
    ("reference", "bad\u0000ref", "Reference must not contain control characters"),
    ("billing", "Ada", "Billing must be an object"),
    ("payment", [], "Payment must be an object"),
])
def test_wrong_types_and_shapes(sandbox, field, value, message):
    response = sandbox.post("/transactions", payment_body(**{field: value}))
    assert response.status_code == 400
    assert response.json() == {"errors": {field[:1].upper() + field[1:]: [message]}}


def test_lone_surrogates_are_refused_not_crashing(sandbox):
    raw = b'{"txNo": "\\ud800", "amount": 1}'
    response = sandbox.post("/transactions/refund", data=raw)
    assert response.json() == {"errors": {"TxNo": ["TxNo must not contain control characters"]}}


# A "\ud800" escape is valid JSON but no UTF-8 text: an unknown field named with one is
# reported with each lone surrogate shown as U+FFFD, the replacement character.
@pytest.mark.parametrize("path,raw,errors", [
    ("/transactions/refund", b'{"\\ud800": 1}',
     {"\ufffd": ["Unknown field"], "TxNo": ["TxNo is required"], "Amount": ["Amount is required"]}),
    ("/transactions/refund", b'{"txNo": "SBX-CAPTURED", "amount": 1, "a\\udc00b": 1}',
     {"A\ufffdb": ["Unknown field"]}),
    ("/sandbox/transactions/SBX-PENDING/outcome", b'{"\\ud800": 1}', {"\ufffd": ["Unknown field"]}),
])
def test_unknown_fields_named_with_lone_surrogates(sandbox, path, raw, errors):
    response = sandbox.post(path, data=raw)
    assert response.status_code == 400
    assert response.json() == {"errors": errors}


def test_unknown_fields_named_with_lone_surrogates_on_create(sandbox):
    body = json.dumps(payment_body(billing={
        "firstName": "A", "lastName": "B", "email": "a@b.co", "customerReference": "c", "\ud800": 1},
        payment={"paymentMethod": "card", "x\udfff": 2}, **{"\udbff": 3}))
    response = sandbox.post("/transactions", data=body.encode())
    assert response.status_code == 400
    assert response.json() == {"errors": {"\ufffd": ["Unknown field"], "Billing.\ufffd": ["Unknown field"],
                                          "Payment.X\ufffd": ["Unknown field"]}}


def test_bank_list_names_an_unknown_field_with_lone_surrogates_safely(sandbox):
    raw = b'{"paymentMethod": "ng-bank-payout", "currency": "NGN", "\\ud800x": 1}'
    response = sandbox.post("/transactions/banks", data=raw)
    assert response.status_code == 400
    assert response.json() == {"error": "Validation Error", "message": "Unknown field \ufffdx"}


@pytest.mark.parametrize("path,raw,errors", [
    ("/transactions/refund", b'{"txNo": "SBX-CAPTURED", "amount": 1, "reason": "\\udc00"}',
     {"Reason": ["Reason must not contain control characters"]}),
    ("/transactions", None, {"Reference": ["Reference must not contain control characters"]}),
])
def test_lone_surrogates_with_an_idempotency_key(sandbox, app, merchant, path, raw, errors):
    """The body is fingerprinted before it is validated: the fingerprint must take any JSON."""
    raw = raw or json.dumps(payment_body(reference="\ud800")).encode()
    before = count_transactions(app, merchant.merchant_id)
    first = sandbox.post(path, data=raw, headers={"Idempotency-Key": "surrogates"})
    assert (first.status_code, first.json()) == (400, {"errors": errors})
    again = sandbox.post(path, data=raw, headers={"Idempotency-Key": "surrogates"})
    assert (again.status_code, again.text) == (400, first.text)
    assert again.headers["Idempotent-Replayed"] == "true"
    other = raw.replace(b"\\ud800", b"\\udbff").replace(b"\\udc00", b"\\udfff")
    reused = sandbox.post(path, data=other, headers={"Idempotency-Key": "surrogates"})
    assert (reused.status_code, reused.json()) == (
        422, {"error": "Idempotency-Key reused with a different request"})
    assert count_transactions(app, merchant.merchant_id) == before


def test_invalid_email(sandbox):
    response = sandbox.post("/transactions", payment_body(billing={
        "firstName": "A", "lastName": "B", "email": "not-an-email", "customerReference": "c"}))
    assert response.json() == {"errors": {"Billing.Email": ["Billing.Email must be a valid e-mail address"]}}


def test_body_over_one_megabyte_is_refused(sandbox):
    response = sandbox.post("/transactions", data=b"{" + b" " * (1024 * 1024 + 10) + b"}")
    assert response.status_code == 413
    assert response.json() == {"errors": {"Body": ["Request body is too large"]}}


@pytest.mark.parametrize("tx_no", ["%00", "x" * 5000, "%F0%9F%92%A5"])
def test_strange_path_tx_numbers_are_not_found(sandbox, tx_no):
    response = sandbox.get(f"/transactions/{tx_no}/status")
    assert response.status_code == 404


def _many_keys(count: int, **fields) -> bytes:
    """A JSON object of `fields` and `count` unknown keys "0", "1", ...: 100,000 fit in 1 MB."""
    return json.dumps({**fields, **{str(i): 0 for i in range(count)}}, separators=(",", ":")).encode()


def test_an_answer_names_at_most_50_fields_and_says_how_many_more(sandbox):
    raw = _many_keys(100_000, **payment_body())
    assert len(raw) < 1024 * 1024
    response = sandbox.post("/transactions", data=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert len(errors) == 51
    assert errors["More"] == ["99950 more fields with errors are not shown"]
    assert all(messages == ["Unknown field"] for name, messages in errors.items() if name != "More")
    assert len(response.content) < 2_000


@pytest.mark.parametrize("count,more", [(50, None), (51, "1 more field with errors is not shown"),
                                        (100_000, "99950 more fields with errors are not shown")])
def test_the_first_50_field_errors_are_answered_and_the_rest_counted(sandbox, count, more):
    response = sandbox.post("/transactions/SBX-PENDING/cancel", data=_many_keys(count),
                            headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    shown = {name: ["Unknown field"] for name in sorted(str(i) for i in range(count))[:50]}
    assert response.json() == {"errors": shown if more is None else {**shown, "More": [more]}}

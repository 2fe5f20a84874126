"""The request models: the limits the OpenAPI document states are the ones enforced, amounts stay
exact Decimals, and no body makes pydantic's own words (or anything but FieldErrors) come out."""
from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.api.openapi import openapi_document
from app.payments.model import FieldErrors
from app.payments.schemas import parse_create, parse_refund
from tests.conftest import payment_body

SCHEMAS = openapi_document("http://paydesk.test")["components"]["schemas"]
# Where each documented request object sits in a body, and which parser reads that body.
READERS = {
    "CreateTransactionRequest": ((), parse_create, payment_body),
    "Billing": (("billing",), parse_create, payment_body),
    "Payment": (("payment",), parse_create, payment_body),
    "RefundRequest": ((), parse_refund, lambda: {"txNo": "PAY-1", "amount": 5}),
}


def _documented_limits():
    for schema_name, (_path, _parse, _body) in READERS.items():
        for field, schema in SCHEMAS[schema_name]["properties"].items():
            limit = schema.get("maxLength", next((branch["maxLength"] for branch in schema.get("anyOf", ())
                                                  if "maxLength" in branch), None))
            if limit is not None:
                yield pytest.param(schema_name, field, limit, id=f"{schema_name}.{field}")


def _name(path: tuple, field: str) -> str:
    return ".".join(part[:1].upper() + part[1:] for part in (*path, field))


@pytest.mark.parametrize("schema_name,field,limit", list(_documented_limits()))
def test_every_documented_max_length_is_the_enforced_one(schema_name, field, limit):
    path, parse, valid_body = READERS[schema_name]
    body = valid_body()
    target = body
    for part in path:
        target = target[part]
    target[field] = "A" * (limit + 1)
    with pytest.raises(FieldErrors) as refused:
        parse(body)
    name = _name(path, field)
    assert refused.value.errors[name] == [f"{name} must be at most {limit} characters"]


def test_every_documented_text_field_has_its_limit_tested():
    texts = {f"{name}.{field}" for name in READERS for field, schema in SCHEMAS[name]["properties"].items()
             if "$ref" not in schema and "enum" not in schema}
    assert texts == {param.id for param in _documented_limits()}


@pytest.mark.parametrize("amount", [Decimal("100.10"), Decimal("0.01"), Decimal("999999999.99"), 100,
                                    Decimal("1E+2"), Decimal("12.300")])
def test_amounts_come_out_as_the_exact_decimals_that_went_in(amount):
    created = parse_create(payment_body(amount=amount))
    refund = parse_refund({"txNo": "PAY-1", "amount": amount})
    for parsed in (created.amount, refund.amount):
        assert type(parsed) is Decimal
        assert parsed.as_tuple() == Decimal(amount).as_tuple()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30)
    | st.decimals(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
CREATE_FIELDS = ["amount", "currency", "reference", "statementDescriptor", "callbackUrl", "billing",
                 "payment", "transactionAction", "successUrl", "userDefinedField1", "zz"]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(CREATE_FIELDS), JSON, max_size=6),
       st.dictionaries(st.sampled_from(["firstName", "email", "country", "\ud800", "x"]), JSON, max_size=3))
def test_any_body_is_read_or_refused_in_the_interface_words(overrides, billing):
    body = payment_body(**overrides)
    if isinstance(body.get("billing"), dict):
        body["billing"] = {**body["billing"], **billing}
    try:
        parse_create(body)
    except FieldErrors as refused:
        for name, messages in refused.errors.items():
            for message in messages:
                assert message == "Unknown field" or message.startswith(f"{name} "), (name, message)
                assert "Input should" not in message and "Field required" not in message

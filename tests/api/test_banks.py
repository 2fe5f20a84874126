"""The bank list endpoint: its error table, real bank data, caching headers."""
from __future__ import annotations

import pytest


def banks(client, body):
    return client.post("/transactions/banks", body)


@pytest.mark.parametrize("body,message", [
    ({"currency": "NGN"}, "Payment method is required"),
    ({"paymentMethod": "ng-bank-payout"}, "Currency is required"),
    ({"paymentMethod": "nope", "currency": "NGN"},
     "Payment method not found. Please check your payment method from request"),
    ({"paymentMethod": "mobile-money-payout", "currency": "KES"},
     "Payment method mobile-money-payout does not support bank lists"),
    ({"paymentMethod": "card", "currency": "EUR"}, "Payment method card does not support bank lists"),
    ({"paymentMethod": "ng-bank-payout", "currency": "EUR"},
     "Currency EUR is not supported by payment method ng-bank-payout"),
    ({"paymentMethod": "sepa-payout", "currency": "EUR", "country": "Atlantis"}, "Unknown country Atlantis"),
    ({"paymentMethod": "ng-bank-payout", "currency": "NGN", "country": "DE"},
     "Country DE is not supported by payment method ng-bank-payout"),
])
def test_validation_errors(sandbox, body, message):
    response = banks(sandbox, body)
    assert response.status_code == 400
    assert response.json() == {"error": "Validation Error", "message": message}


def test_nigerian_banks_are_real_cbn_codes(sandbox):
    response = banks(sandbox, {"paymentMethod": "ng-bank-payout", "currency": "NGN"})
    assert response.status_code == 200
    listed = {b["code"]: b["name"] for b in response.json()}
    assert listed["058"] == "Guaranty Trust Bank"
    assert listed["044"] == "Access Bank"
    assert all(set(b) == {"code", "name"} for b in response.json())


@pytest.mark.parametrize("country", ["DE", "deu", "germany", "Germany"])
def test_country_accepts_alpha2_alpha3_and_name(sandbox, country):
    response = banks(sandbox, {"paymentMethod": "sepa-payout", "currency": "EUR", "country": country})
    assert response.status_code == 200
    codes = {b["code"] for b in response.json()}
    assert "COBADEFF" in codes


def test_success_is_cacheable_for_an_hour_with_etag(sandbox):
    body = {"paymentMethod": "ng-bank-payout", "currency": "NGN", "country": "NG"}
    first = banks(sandbox, body)
    assert "max-age=3600" in first.headers["Cache-Control"]
    etag = first.headers["ETag"]
    again = sandbox.post("/transactions/banks", body, headers={"If-None-Match": etag})
    assert again.status_code == 304


def test_provider_failure_gives_the_interface_500(app, sandbox, monkeypatch):
    from app.providers.simulator import SimulatorProvider

    def broken(*_args, **_kwargs):
        raise ConnectionError("provider down")

    monkeypatch.setattr(SimulatorProvider, "banks", broken)
    response = banks(sandbox, {"paymentMethod": "ng-bank-payout", "currency": "NGN"})
    assert response.status_code == 500
    assert response.json() == {
        "error": "Internal Server Error",
        "message": "An error occurred while fetching the bank list. Please contact support.",
    }

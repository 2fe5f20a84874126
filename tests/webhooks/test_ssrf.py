"""The SSRF guard refuses non-public targets before connecting, on the address actually connected to."""
from __future__ import annotations

import ipaddress

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import update

from app.config import Config
from app.store.tables import webhook_events
from app.webhooks.dispatcher import deliver_due
from app.webhooks.guard import AddressGuard, parse_networks
from app.webhooks.settings import DeliverySettings

from .conftest import attempts, delivery_settings, enqueue_events, event_row
from .receiver import Receiver


@pytest.mark.parametrize("target,shown,reason", [
    ("127.0.0.1", "127.0.0.1", "loopback"),
    ("10.0.0.1", "10.0.0.1", "private"),
    ("169.254.169.254", "169.254.169.254", "link-local"),
    ("[::1]", "::1", "loopback"),
    ("[::ffff:127.0.0.1]", "::ffff:7f00:1 (127.0.0.1)", "loopback"),
    ("100.64.0.1", "100.64.0.1", "carrier-grade NAT"),
    ("224.0.0.1", "224.0.0.1", "multicast"),
    ("0.0.0.0", "0.0.0.0", "unspecified"),
])
def test_non_public_targets_are_refused_before_connecting(merchant, fake_deps, connections,
                                                          target, shown, reason):
    settings = delivery_settings(allowed="")
    [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, f"http://{target}:8080/hook")
    assert deliver_due(fake_deps, settings) == 1
    assert connections == []
    message = f"Refused: target address {shown} is {reason} and not in WEBHOOK_ALLOWED_NETWORKS"
    row = event_row(fake_deps, webhook_id)
    assert (row.state, row.attempts, row.next_attempt_at, row.last_error) == (
        "failed", 1, None, message)
    [attempt] = attempts(fake_deps, merchant, webhook_id)
    assert (attempt.http_status, attempt.error) == (None, message)


def test_a_name_resolving_to_a_private_address_is_refused(merchant, fake_deps, connections,
                                                          fake_dns):
    fake_dns["rebind.example"] = "10.1.2.3"
    [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, "https://rebind.example/hook")
    deliver_due(fake_deps, delivery_settings(allowed=""))
    assert connections == []
    assert event_row(fake_deps, webhook_id).last_error == (
        "Refused: target address 10.1.2.3 is private and not in WEBHOOK_ALLOWED_NETWORKS")


def test_localhost_by_name_is_refused_when_loopback_is_not_allowed(merchant, fake_deps,
                                                                   connections, receiver):
    url = receiver.url.replace("127.0.0.1", "localhost")
    [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, url)
    deliver_due(fake_deps, delivery_settings(allowed=""))
    assert connections == [] and receiver.received == []
    assert event_row(fake_deps, webhook_id).state == "failed"


def test_the_vetted_address_is_the_one_connected_and_host_is_kept(merchant, fake_deps,
                                                                  connections, fake_dns, receiver):
    fake_dns["hooks.merchant.example"] = "127.0.0.1"
    url = receiver.url.replace("127.0.0.1", "hooks.merchant.example")
    [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, url)
    deliver_due(fake_deps, delivery_settings(allowed="127.0.0.0/8"))
    [delivery] = receiver.wait_for(1)
    assert connections == ["127.0.0.1"]
    assert delivery.headers["Host"] == f"hooks.merchant.example:{receiver.port}"
    assert event_row(fake_deps, webhook_id).state == "delivered"


def test_an_address_that_refuses_the_connection_is_passed_for_the_next_one(merchant, fake_deps,
                                                                           connections, fake_dns, receiver):
    # Nothing listens on 127.0.0.2 at the receiver's port: refused before anything was sent.
    fake_dns["hooks.merchant.example"] = ["127.0.0.2", "127.0.0.1"]
    url = receiver.url.replace("127.0.0.1", "hooks.merchant.example")
    [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, url)
    deliver_due(fake_deps, delivery_settings(allowed="127.0.0.0/8"))
    [delivery] = receiver.wait_for(1)
    assert connections == ["127.0.0.2", "127.0.0.1"]
    assert delivery.headers["Host"] == f"hooks.merchant.example:{receiver.port}"
    assert event_row(fake_deps, webhook_id).state == "delivered"


def test_one_refused_address_among_the_names_refuses_the_target(merchant, fake_deps, connections,
                                                                fake_dns, receiver):
    fake_dns["mixed.example"] = ["127.0.0.1", "10.1.2.3"]
    url = receiver.url.replace("127.0.0.1", "mixed.example")
    [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, url)
    deliver_due(fake_deps, delivery_settings(allowed="127.0.0.0/8"))
    assert connections == [] and receiver.received == []
    assert event_row(fake_deps, webhook_id).last_error == (
        "Refused: target address 10.1.2.3 is private and not in WEBHOOK_ALLOWED_NETWORKS")


def test_by_default_no_delivery_reaches_the_host_and_no_answer_is_kept(merchant, fake_deps, connections,
                                                                       receiver, monkeypatch):
    monkeypatch.delenv("WEBHOOK_ALLOWED_NETWORKS", raising=False)
    defaults = vars(Config(SECRET_KEY="test-secret", PAYDESK_ENCRYPTION_KEY=Fernet.generate_key().decode()))
    receiver.answer = b"internal service's answer"
    [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, receiver.url)
    deliver_due(fake_deps, DeliverySettings.from_config(defaults))
    assert connections == [] and receiver.received == []
    [attempt] = attempts(fake_deps, merchant, webhook_id)
    assert (attempt.http_status, attempt.response_excerpt, attempt.error) == (
        None, None, "Refused: target address 127.0.0.1 is loopback and not in WEBHOOK_ALLOWED_NETWORKS")


def test_an_allowed_receivers_answer_is_kept_in_the_log(merchant, fake_deps, receiver):
    receiver.status, receiver.answer = 500, b"receiver's own words"
    [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, receiver.url)
    deliver_due(fake_deps, delivery_settings(allowed="127.0.0.0/8"))
    [attempt] = attempts(fake_deps, merchant, webhook_id)
    assert (attempt.http_status, attempt.response_excerpt) == (500, "receiver's own words")


def test_allowed_networks_let_loopback_through(merchant, fake_deps, receiver):
    with Receiver() as v6_mapped:
        urls = [receiver.url, v6_mapped.url.replace("127.0.0.1", "[::ffff:127.0.0.1]")]
        ids = [enqueue_events(fake_deps, merchant.merchant_id, url)[0] for url in urls]
        deliver_due(fake_deps, delivery_settings(allowed="127.0.0.0/8"))
        receiver.wait_for(1)
        v6_mapped.wait_for(1)
    assert [event_row(fake_deps, i).state for i in ids] == ["delivered", "delivered"]


@pytest.mark.parametrize("url", ["ftp://example.com/hook", "file:///etc/passwd", "http:///nohost",
                                 "gopher://127.0.0.1/"])
def test_only_http_and_https_urls_are_used_even_if_stored(merchant, fake_deps, connections, url):
    # The create request refuses such URLs already; delivery checks again (defence in depth).
    [webhook_id] = enqueue_events(fake_deps, merchant.merchant_id, "https://merchant.example/hook")
    with fake_deps.uow() as uow:
        uow.conn.execute(update(webhook_events).where(webhook_events.c.webhook_id == webhook_id)
                         .values(url=url))
        uow.commit()
    deliver_due(fake_deps, delivery_settings())
    row = event_row(fake_deps, webhook_id)
    assert connections == []
    assert row.state == "failed"
    assert row.last_error.startswith("Refused: callbackUrl")


@pytest.mark.parametrize("address,refused", [
    ("8.8.8.8", False),
    ("2001:4860:4860::8888", False),
    ("::ffff:8.8.8.8", False),
    ("192.168.1.1", True),
    ("172.16.0.1", True),
    ("fc00::1", True),
    ("fe80::1", True),
    ("ff02::1", True),
    ("::", True),
    ("2002:a00:1::1", True),  # 6to4 of 10.0.0.1
    ("64:ff9b::a9fe:a9fe", True),  # NAT64 of 169.254.169.254
    ("198.18.0.1", True),
    ("240.0.0.1", True),
])
def test_address_classification(address, refused):
    guard = AddressGuard("WEBHOOK_ALLOWED_NETWORKS", parse_networks(""))
    assert (guard.refusal(ipaddress.ip_address(address)) is not None) is refused


def test_allowed_networks_parse_and_may_be_empty():
    assert parse_networks("") == ()
    assert parse_networks(" 127.0.0.0/8 , ::1/128 ") == (
        ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))

"""HTTPS deliveries through the guard: connected to the vetted address, TLS checked on the hostname."""
from __future__ import annotations

import ssl
import subprocess

import pytest

from app.payments.model import Mode
from app.util import utcnow
from app.webhooks.outbox import ClaimedEvent
from app.webhooks.sender import send
from app.webhooks.guard import CallFailed, GuardedPool, guarded_session

from .conftest import delivery_settings
from .receiver import Receiver

HOST = "hooks.merchant.example"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for HOST (its own trust anchor) and its key."""
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", f"/CN={HOST}", "-addext", f"subjectAltName=DNS:{HOST}"],
                   check=True, capture_output=True)
    return cert, key


@pytest.fixture
def tls_receiver(certificate):
    """An HTTPS receiver presenting the certificate; notes the SNI names it is asked for."""
    cert, key = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    asked_for = []
    context.sni_callback = lambda _socket, name, _context: asked_for.append(name)
    with Receiver(tls=context) as receiver:
        receiver.sni = asked_for
        yield receiver


def attempt(url: str, certificate) -> tuple:
    settings = delivery_settings(allowed="127.0.0.0/8")
    event = ClaimedEvent(event_id=0, merchant_id=0, mode=Mode.SANDBOX, webhook_id="msg_tls",
                         url=url, payload='{"txNo": "T"}', attempt_no=1, schedule_position=1,
                         manual=False, lease_until=utcnow(), secrets=["whsec_" + "A" * 32])
    with guarded_session(settings.guard, 1) as session:
        session.verify = str(certificate[0])
        return send(session, settings, event, utcnow())


def test_https_goes_to_the_vetted_address_with_sni_and_certificate_of_the_name(
        tls_receiver, certificate, fake_dns, connections):
    fake_dns[HOST] = "127.0.0.1"
    result = attempt(f"https://{HOST}:{tls_receiver.port}/hooks", certificate)
    assert (result.delivered, result.http_status, result.error) == (True, 204, None)
    assert connections == ["127.0.0.1"]
    assert tls_receiver.sni == [HOST]
    assert tls_receiver.received[0].headers["Host"] == f"{HOST}:{tls_receiver.port}"


def test_a_certificate_for_another_name_is_refused(tls_receiver, certificate, fake_dns,
                                                   connections):
    fake_dns["other.merchant.example"] = "127.0.0.1"
    result = attempt(f"https://other.merchant.example:{tls_receiver.port}/hooks", certificate)
    assert not result.delivered
    assert result.error.startswith("TLS error: [SSL: CERTIFICATE_VERIFY_FAILED]")
    assert "Hostname mismatch" in result.error
    assert tls_receiver.received == []


def pool_request(url: str, certificate):
    """A POST through GuardedPool (Paystack's transport) that trusts the test's certificate."""
    pool = GuardedPool(delivery_settings(allowed="127.0.0.0/8").guard, 1, ca_certs=str(certificate[0]))
    return pool.request("POST", url, timeouts=(2, 2), body=b"{}")


def test_the_pool_goes_to_the_vetted_address_with_sni_and_certificate_of_the_name(
        tls_receiver, certificate, fake_dns, connections):
    fake_dns[HOST] = "127.0.0.1"
    answer = pool_request(f"https://{HOST}:{tls_receiver.port}/balance?page=2", certificate)
    assert answer.status == 204
    assert connections == ["127.0.0.1"]
    assert tls_receiver.sni == [HOST]
    assert tls_receiver.received[0].headers["Host"] == f"{HOST}:{tls_receiver.port}"
    assert tls_receiver.received[0].path == "/balance?page=2"


def test_the_pool_refuses_a_certificate_for_another_name(tls_receiver, certificate, fake_dns, connections):
    fake_dns["other.merchant.example"] = "127.0.0.1"
    with pytest.raises(CallFailed) as failed:
        pool_request(f"https://other.merchant.example:{tls_receiver.port}/balance", certificate)
    assert failed.value.kind == "SSLError"
    assert "Hostname mismatch" in str(failed.value)
    assert tls_receiver.received == []

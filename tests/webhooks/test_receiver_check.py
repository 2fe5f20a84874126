"""The receiver check (POST /webhook-endpoints/{id}/check): a worker sends the endpoint a correctly
signed test event, a tampered one, a replay and a stale one, and tells the merchant plainly which
ones its receiver accepted and how to fix it."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app.store.merchants import create_merchant
from app.webhooks.receiver_check import ADVICE, run_due_checks
from tests.conftest import Api
from tests.support.servers import free_port

from .receiver import Receiver


class VerifyingReceiver:
    """A receiver done right: verifies each delivery with the endpoint's secret (Standard Webhooks,
    5-minute tolerance) and acts once on a webhook-id, answering a repeat with `repeat_status`
    (409: refused; 204: acknowledged without acting, as a retry whose first answer was lost needs)."""

    def __init__(self, repeat_status: int = 409):
        self.secret = None
        self.seen: set[str] = set()
        self.acted: list[str] = []
        self.port = free_port()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                headers = {name.lower(): value for name, value in self.headers.items()}
                try:
                    Webhook(receiver.secret).verify(body, headers)
                    fresh = headers["webhook-id"] not in receiver.seen
                    receiver.seen.add(headers["webhook-id"])
                    if fresh:
                        receiver.acted.append(headers["webhook-id"])
                    status = 204 if fresh else repeat_status
                except WebhookVerificationError:
                    status = 400
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.url = f"http://127.0.0.1:{self.port}/hooks"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def endpoint_of(api: Api, url: str) -> dict:
    created = api.post("/webhook-endpoints", {"url": url, "enabledEvents": ["*"]})
    assert created.status_code == 201, created.text
    return created.json()


def test_a_receiver_that_verifies_passes(sandbox, deps, settings):
    with VerifyingReceiver() as receiver:
        endpoint = endpoint_of(sandbox, receiver.url)
        receiver.secret = endpoint["secret"]
        asked = sandbox.post(f"/webhook-endpoints/{endpoint['id']}/check")
        assert asked.status_code == 202, asked.text
        check = asked.json()
        assert (check["status"], check["passed"], check["results"], check["finishedAt"]) == ("Pending", None, [], None)
        pending = sandbox.get(f"/webhook-endpoints/{endpoint['id']}/checks/{check['id']}")
        assert pending.json() == check  # nothing is sent on the request's thread
        assert run_due_checks(deps, settings) >= 1
    done = sandbox.get(f"/webhook-endpoints/{endpoint['id']}/checks/{check['id']}").json()
    assert (done["status"], done["passed"]) == ("Done", True)
    assert [(r["case"], r["httpStatus"], r["accepted"], r["asExpected"], r["advice"]) for r in done["results"]] == [
        ("valid", 204, True, True, None), ("tampered", 400, False, True, None),
        ("replay", 409, False, True, None), ("stale", 400, False, True, None)]


def test_a_receiver_that_acknowledges_a_replay_without_acting_passes_and_is_told_what_to_make_sure_of(
        sandbox, deps, settings):
    """Answering 2xx to a repeat is right when the receiver does not act again (Standard Webhooks
    leaves deduplication to it; a retry whose first answer was lost needs it), and the answer
    cannot show whether it acted: the replay is not judged, and the merchant is told what to check."""
    with VerifyingReceiver(repeat_status=204) as receiver:
        endpoint = endpoint_of(sandbox, receiver.url)
        receiver.secret = endpoint["secret"]
        check = sandbox.post(f"/webhook-endpoints/{endpoint['id']}/check").json()
        run_due_checks(deps, settings)
    done = sandbox.get(f"/webhook-endpoints/{endpoint['id']}/checks/{check['id']}").json()
    assert (done["status"], done["passed"]) == ("Done", True)
    assert [(r["case"], r["httpStatus"], r["accepted"], r["asExpected"], r["advice"]) for r in done["results"]] == [
        ("valid", 204, True, True, None), ("tampered", 400, False, True, None),
        ("replay", 204, True, None, ADVICE["replay"]), ("stale", 400, False, True, None)]
    assert len(receiver.acted) == 1  # it acted on the valid delivery only


def test_a_receiver_that_accepts_everything_is_told_how_to_fix_it(sandbox, deps, settings):
    with Receiver(status=200) as receiver:
        endpoint = endpoint_of(sandbox, receiver.url)
        check = sandbox.post(f"/webhook-endpoints/{endpoint['id']}/check").json()
        run_due_checks(deps, settings)
        received = receiver.wait_for(4)
    done = sandbox.get(f"/webhook-endpoints/{endpoint['id']}/checks/{check['id']}").json()
    assert done["passed"] is False
    assert [(r["case"], r["accepted"], r["asExpected"], r["advice"]) for r in done["results"]] == [
        ("valid", True, True, None), ("tampered", True, False, ADVICE["tampered"]),
        ("replay", True, None, ADVICE["replay"]), ("stale", True, False, ADVICE["stale"])]
    assert "does not verify signatures" in ADVICE["tampered"]
    valid, tampered, replay, stale = received
    Webhook(endpoint["secret"]).verify(valid.body, valid.headers)  # the valid one really is valid
    assert json.loads(valid.body)["transactionType"] == "Test"
    with pytest.raises(WebhookVerificationError):
        Webhook(endpoint["secret"]).verify(tampered.body, tampered.headers)
    assert (replay.body, replay.headers["webhook-id"], replay.headers["webhook-signature"]) == (
        valid.body, valid.headers["webhook-id"], valid.headers["webhook-signature"])
    assert int(valid.headers["webhook-timestamp"]) - int(stale.headers["webhook-timestamp"]) == 600
    with pytest.raises(WebhookVerificationError):
        Webhook(endpoint["secret"]).verify(stale.body, stale.headers)


def test_a_receiver_that_refuses_the_valid_one_is_told_too(sandbox, deps, settings):
    with Receiver(status=401) as receiver:
        endpoint = endpoint_of(sandbox, receiver.url)
        check = sandbox.post(f"/webhook-endpoints/{endpoint['id']}/check").json()
        run_due_checks(deps, settings)
    done = sandbox.get(f"/webhook-endpoints/{endpoint['id']}/checks/{check['id']}").json()
    assert done["passed"] is False
    assert done["results"][0] == {"case": "valid", "httpStatus": 401, "error": None, "accepted": False,
                                  "asExpected": False, "advice": ADVICE["valid"]}
    assert run_due_checks(deps, settings) == 0  # run once


def test_another_merchants_or_modes_checks_are_not_found(sandbox, live, server, app):
    endpoint = endpoint_of(sandbox, "https://merchant.example/hooks")
    check = sandbox.post(f"/webhook-endpoints/{endpoint['id']}/check").json()
    with app.extensions["paydesk"].uow() as uow:
        other = create_merchant(uow, f"Other {check['id']}", app.config["BASE_URL"])
        uow.commit()
    for stranger in (live, Api(server.url, other.sandbox_token)):
        asked = stranger.post(f"/webhook-endpoints/{endpoint['id']}/check")
        assert (asked.status_code, asked.json()) == (404, {"error": f"Webhook endpoint {endpoint['id']} not found"})
        read = stranger.get(f"/webhook-endpoints/{endpoint['id']}/checks/{check['id']}")
        assert (read.status_code, read.json()) == (404, {"error": f"Webhook endpoint {endpoint['id']} not found"})
    unknown = sandbox.get(f"/webhook-endpoints/{endpoint['id']}/checks/chk_nope")
    assert (unknown.status_code, unknown.json()) == (404, {"error": "Receiver check chk_nope not found"})

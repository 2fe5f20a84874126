"""Fixtures: a fake provider on a local port, and Prism serving Paystack's own OpenAPI document."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.support.servers import ROOT, free_port, stop_process_group

from .fake_provider import RunningFakeProvider

PRISM = Path(__file__).resolve().parent / "prism" / "node_modules" / ".bin" / "prism"
# The shared directory sits beside the repository.
PAYSTACK_OPENAPI = ROOT.parent / "shared" / "providers" / "paystack.openapi.yaml"


def contracts_required() -> bool:
    """Under CI (CI=true or REQUIRE_POSTGRES=1) a missing Prism is a failure, never a skip."""
    return os.environ.get("CI") == "true" or os.environ.get("REQUIRE_POSTGRES") == "1"


@pytest.fixture
def fake():
    """A fake provider answering on 127.0.0.1 and a random port for this test."""
    with RunningFakeProvider() as provider:
        yield provider


@pytest.fixture(scope="session")
def prism(tmp_path_factory):
    """`prism mock` of Paystack's OpenAPI document on a free port: it checks every request it gets."""
    missing = [str(path) for path in (PRISM, PAYSTACK_OPENAPI) if not path.exists()]
    if missing:
        message = (f"Paystack contract tests need {' and '.join(missing)}: "
                   "run `make install-test` (npm ci --prefix tests/providers/prism)")
        if contracts_required():
            pytest.fail(message)
        pytest.skip(message)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = tmp_path_factory.mktemp("prism") / "prism.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(PRISM), "mock", "-h", "127.0.0.1", "-p", str(port), str(PAYSTACK_OPENAPI)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        _wait_for_prism(url, process, log_path)
        yield url
    finally:
        stop_process_group(process)


def _wait_for_prism(url: str, process: subprocess.Popen, log_path: Path, timeout: float = 60.0) -> None:
    # Prism takes about 4 s to load the document; any HTTP answer means it is serving.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"prism exited with {process.returncode}: {log_path.read_text()[-2000:]}")
        try:
            requests.get(f"{url}/balance", timeout=2).close()
            return
        except requests.RequestException:
            time.sleep(0.2)
    raise TimeoutError(f"prism did not serve {url} within {timeout} s: {log_path.read_text()[-2000:]}")

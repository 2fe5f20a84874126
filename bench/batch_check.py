"""How long checking and storing a 5,000-row payouts file takes (issue 31: under 10 s).

Run: PYTHONPATH=. python bench/batch_check.py [DATABASE_URL]  (default: a new SQLite file)
"""
from __future__ import annotations

import sys
import tempfile
import time
import uuid

from app import create_app
from app.cli import upgrade_database
from app.config import Config
from app.payments import batches
from app.payments.batches import BatchKind, PayoutDefaults
from app.payments.model import Caller, Mode
from app.store.merchants import create_merchant
from tests.api.test_create_and_status import nuban


def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else f"sqlite:///{tempfile.mkdtemp()}/bench.db"
    upgrade_database(url)
    app = create_app(Config(DATABASE_URL=url, SECRET_KEY="bench", DEMO_MODE=True))
    deps = app.extensions["paydesk"]
    with deps.uow() as uow:
        merchant = create_merchant(uow, f"Bench {uuid.uuid4().hex[:8]}", "http://bench.test")
        uow.commit()
    caller = Caller(merchant.merchant_id, Mode.SANDBOX, "bench@shop.test")
    account = nuban("058", "012345678")
    lines = ["method,amount,currency,bank,holder,account,reference,email"] + [
        f"ng-bank-payout,{n % 900 + 100}.25,NGN,058,Ada Obi,{account},bench-{n},ada@example.com"
        for n in range(batches.MAX_ROWS)]
    data = ("\r\n".join(lines) + "\r\n").encode()
    started = time.perf_counter()
    batch = batches.create_batch(deps, caller, BatchKind.PAYOUT, batches.read_csv(data, BatchKind.PAYOUT),
                                 source="dashboard", defaults=PayoutDefaults("BENCH", "https://bench.test/h"))
    elapsed = time.perf_counter() - started
    print(f"{batch.row_count} rows checked and stored in {elapsed:.2f} s on {url.split(':')[0]}")


if __name__ == "__main__":
    main()

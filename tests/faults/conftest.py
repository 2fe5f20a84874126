"""Paydesk as deployed (gunicorn, a worker, a webhook receiver) on a PostgreSQL cluster of its own."""
from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from app.cli import upgrade_database
from app.config import Config
from app.store.db import make_engine
from app.store.encryption import SecretBox
from app.store.merchants import create_merchant
from app.store.unit_of_work import UnitOfWork
from tests.support.servers import free_port, start_gunicorn, start_worker, stop_process_group
from tests.webhooks.receiver import Receiver

from .cluster import Cluster, require_postgres_bin

# The provider takes this long per refund, so that refunds are caught in flight.
SIMULATOR_LATENCY = "0.3"
# A webhook must be answered within this many seconds (its lease is this plus 45 s).
WEBHOOK_TIMEOUT = "2"


@dataclass
class Deployment:
    """What the fault tests act on, and where each process logs."""

    cluster: Cluster
    database_url: str
    url: str  # the gunicorn server
    gunicorn: subprocess.Popen
    worker: subprocess.Popen
    receiver: Receiver
    merchant_id: int
    token: str
    logs: Path
    extra_workers: list[subprocess.Popen] = field(default_factory=list)
    worker_log_name: str = "worker"

    @property
    def worker_log(self) -> Path:
        """Where `worker` logs: a test that kills it names its successor's log (replace_worker)."""
        return self.logs / f"{self.worker_log_name}.log"

    def start_worker(self, name: str) -> subprocess.Popen:
        """One more `flask worker` process, logging to <logs>/<name>.log."""
        process = start_worker(self.database_url, log=self.logs / f"{name}.log",
                               WEBHOOK_TIMEOUT=WEBHOOK_TIMEOUT)
        self.extra_workers.append(process)
        return process

    def replace_worker(self, name: str) -> subprocess.Popen:
        """A new worker, logging to <logs>/<name>.log, that the fixture's later tests act on as
        `worker`, whichever order they run in (the old one was killed)."""
        self.worker = self.start_worker(name)
        self.worker_log_name = name
        return self.worker

    def engine(self):
        """An engine of the test's own on the database (dispose it when done)."""
        return make_engine(self.database_url, pool_size=2)


@pytest.fixture(scope="package")
def deployment(tmp_path_factory):
    """A fresh cluster and database; gunicorn (2 workers x 4 threads) and one worker on it; a
    merchant whose webhooks (sandbox fixtures' too) all go to one loopback receiver."""
    cluster = Cluster(require_postgres_bin())
    logs = tmp_path_factory.mktemp("fault-logs")
    processes = []
    receiver = Receiver().start()
    try:
        cluster.start()
        admin = create_engine(cluster.url(), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text("CREATE DATABASE paydesk"))
        admin.dispose()
        database_url = cluster.url("paydesk")
        upgrade_database(database_url)
        engine = make_engine(database_url)
        with UnitOfWork(engine, box=SecretBox(Config().PAYDESK_ENCRYPTION_KEY)) as uow:
            merchant = create_merchant(uow, f"Faults {uuid.uuid4().hex[:8]}", receiver.url)
            uow.commit()
        engine.dispose()
        port = free_port()
        gunicorn = start_gunicorn(database_url, port, workers=2, log=logs / "gunicorn.log",
                                  SIMULATOR_LATENCY=SIMULATOR_LATENCY)
        processes.append(gunicorn)
        worker = start_worker(database_url, log=logs / "worker.log", WEBHOOK_TIMEOUT=WEBHOOK_TIMEOUT)
        processes.append(worker)
        deployment = Deployment(cluster, database_url, f"http://127.0.0.1:{port}", gunicorn, worker,
                                receiver, merchant.merchant_id, merchant.sandbox_token, logs)
        yield deployment
        processes += deployment.extra_workers
    finally:
        for process in processes:
            stop_process_group(process)
        receiver.stop()
        cluster.destroy()

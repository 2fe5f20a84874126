"""Merchants' webhook signing secrets are stored only sealed (migration 0015 seals the clear ones
of older databases), and the SQLite file and the key files are readable by their owner only."""
from __future__ import annotations

import os
import stat

import pytest
from alembic import command
from sqlalchemy import create_engine, insert, select

from app import config as app_config
from app.cli import alembic_config, upgrade_database
from app.config import Config
from app.store.db import make_engine
from app.store.encryption import SecretBox
from app.store.merchants import new_webhook_secret
from app.store.tables import merchants, webhook_secrets
from app.util import utcnow


def _stored_secrets(engine, merchant_id: int) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(select(webhook_secrets.c.secret)
                                 .where(webhook_secrets.c.merchant_id == merchant_id)
                                 .order_by(webhook_secrets.c.id)).scalars())


def test_the_stored_secrets_hold_no_whsec_text_and_open_to_the_merchants_secrets(app, merchant):
    stored = _stored_secrets(app.extensions["paydesk.engine"], merchant.merchant_id)
    assert len(stored) == 2 and not any("whsec_" in raw for raw in stored)
    box = SecretBox(app.config["PAYDESK_ENCRYPTION_KEY"])
    assert [box.open(raw) for raw in stored] == [merchant.live_webhook_secret,
                                                 merchant.sandbox_webhook_secret]


@pytest.fixture(params=["sqlite", "postgres"])
def database_at_0014(request, tmp_path, revision_templates):
    """A new database migrated up to 0014, when webhook secrets were stored in clear."""
    yield from revision_templates.database_at("0014", request.param, tmp_path)


def test_the_migration_seals_clear_secrets_and_its_downgrade_opens_them(database_at_0014):
    engine = create_engine(database_at_0014)
    clear = [new_webhook_secret(), new_webhook_secret()]
    try:
        with engine.begin() as conn:
            merchant_id = conn.execute(insert(merchants).returning(merchants.c.id).values(
                name="Before 0015", inbox_key="before-0015", created_at=utcnow())).scalar_one()
            for mode, secret in zip(("live", "sandbox"), clear):
                conn.execute(insert(webhook_secrets).values(merchant_id=merchant_id, mode=mode,
                                                            secret=secret, created_at=utcnow()))
        upgrade_database(database_at_0014)
        sealed = _stored_secrets(engine, merchant_id)
        assert not any("whsec_" in raw for raw in sealed)
        box = SecretBox(Config().PAYDESK_ENCRYPTION_KEY)  # the key the migration read
        assert [box.open(raw) for raw in sealed] == clear
        upgrade_database(database_at_0014)  # at head already: nothing sealed twice
        assert _stored_secrets(engine, merchant_id) == sealed
        command.downgrade(alembic_config(database_at_0014), "0014")
        assert _stored_secrets(engine, merchant_id) == clear
    finally:
        engine.dispose()


@pytest.fixture
def umask_022():
    """The usual umask, under which SQLite and open() create files any user may read."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_sqlite_file_flask_db_upgrade_creates_is_the_owners_alone(tmp_path, umask_022):
    path = tmp_path / "instance" / "paydesk.db"
    upgrade_database(f"sqlite:///{path}")
    assert _mode(path) == 0o600


def test_the_sqlite_file_and_its_wal_the_app_creates_are_the_owners_alone(tmp_path, umask_022):
    path = tmp_path / "paydesk.db"
    engine = make_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (a)")
    assert {name: _mode(tmp_path / name) for name in os.listdir(tmp_path)} == {
        "paydesk.db": 0o600, "paydesk.db-wal": 0o600, "paydesk.db-shm": 0o600}
    engine.dispose()


def test_the_generated_key_files_are_the_owners_alone(tmp_path, monkeypatch, umask_022):
    monkeypatch.setattr(app_config, "INSTANCE", tmp_path / "instance")
    monkeypatch.delenv("PAYDESK_ENCRYPTION_KEY", raising=False)
    monkeypatch.delenv("SECRET_KEY", raising=False)
    config = Config()
    assert (tmp_path / "instance" / "encryption-key").read_text() == config.PAYDESK_ENCRYPTION_KEY
    assert (tmp_path / "instance" / "secret-key").read_text() == config.SECRET_KEY
    assert {name: _mode(tmp_path / "instance" / name) for name in ("encryption-key", "secret-key")} \
        == {"encryption-key": 0o600, "secret-key": 0o600}

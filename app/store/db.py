"""The engine: SQLite (embedded default) or PostgreSQL, with each one's transaction behaviour."""
from __future__ import annotations

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import NullPool


def make_engine(url: str, *, pool_size: int = 10) -> Engine:
    """An engine for the URL; SQLite gets WAL, a busy timeout and write-locking transactions."""
    if url.startswith("sqlite"):
        engine = create_engine(url, poolclass=NullPool if ":memory:" in url else None)
        _sqlite_transactions(engine)
        return engine
    return create_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


def _sqlite_transactions(engine: Engine) -> None:
    """Take SQLite's write lock at BEGIN for units of work that write.

    SQLite has no SELECT ... FOR UPDATE. A write unit of work begins with
    BEGIN IMMEDIATE, so two refunds of one payment are serialised before either
    reads the refunded total; reads begin deferred and never wait for writers (WAL).
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # let the events below issue BEGIN
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        immediate = conn.get_execution_options().get("write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

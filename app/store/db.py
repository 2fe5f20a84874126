"""The engine: SQLite (embedded default) or PostgreSQL, with each one's transaction behaviour.

Also what the rest of the application needs to know about a database that goes away:
whether an error means it could not be reached, and whether a COMMIT was sent since a
given moment (work that sent none may be run again after a lost connection); and whether
an error is a unique-constraint violation.
"""
from __future__ import annotations

import logging
import os
import select
import time
from contextvars import ContextVar
from pathlib import Path

import psycopg
from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, IntegrityError
from sqlalchemy.pool import NullPool

logger = logging.getLogger(__name__)

# A pooled PostgreSQL connection unused for longer than this is pinged before use.
PING_IDLE_AFTER = 2.0
# SQLSTATEs of a server that is shutting down or starting up, or of a lost connection (class 08).
UNREACHABLE_SQLSTATES = ("57P01", "57P02", "57P03")

# Whether this thread (or task) sent a COMMIT since forget_commits(); set just before it is sent.
_commit_sent: ContextVar[bool] = ContextVar("paydesk_commit_sent", default=False)


def make_engine(url: str, *, pool_size: int = 10, ping_idle_after: float = PING_IDLE_AFTER) -> Engine:
    """An engine for the URL; SQLite gets WAL, a busy timeout and write-locking transactions."""
    if url.startswith("sqlite"):
        own_sqlite_file(url)
        engine = create_engine(url, poolclass=NullPool if ":memory:" in url else None)
        _sqlite_transactions(engine)
    else:
        # PostgreSQL's own $1, $2 ... placeholders, which a RawCursor sends as they are: psycopg's
        # default cursor converts %(name)s placeholders on every call for a statement over
        # 4096 bytes or 50 values (a refund's writes are one such statement).
        engine = create_engine(url, pool_size=pool_size, max_overflow=pool_size,
                               paramstyle="numeric_dollar",
                               connect_args={"cursor_factory": psycopg.RawCursor})
        _check_connections_on_checkout(engine, ping_idle_after)
    _note_commits(engine)
    return engine


def own_sqlite_file(url: str) -> None:
    """Create the SQLite database file of the URL, and its folder, readable by its owner only.

    SQLite would create it with the umask's mode (0644 as a rule: every user of the machine could
    read the payments and users in it); its -wal and -shm files take the database file's mode.
    A file that exists keeps the mode its owner gave it.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:") \
            or parsed.query.get("uri"):
        return
    path = Path(parsed.database)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def forget_commits() -> None:
    """Start watching: commit_sent() is False until this thread sends its next COMMIT."""
    _commit_sent.set(False)


def commit_sent() -> bool:
    """True when this thread sent a COMMIT (or tried to) since forget_commits().

    A COMMIT whose answer was lost may have reached the server and taken effect, so
    work that sent one must not be run again.
    """
    return _commit_sent.get()


def note_commit_sent() -> None:
    """A statement that commits by itself (autocommit) is about to go out."""
    _commit_sent.set(True)


def _note_commits(engine: Engine) -> None:
    @event.listens_for(engine, "commit")
    def _committing(_conn):
        _commit_sent.set(True)  # before COMMIT goes out: from here on it may have taken effect


def database_unreachable(error: BaseException) -> bool:
    """The error says the database cannot be reached right now: a connection it dropped, or none made.

    Restarts, failovers and connection limits look like this; a wrong query or a
    constraint violation does not.
    """
    if not isinstance(error, DBAPIError):
        return False
    if error.connection_invalidated:  # SQLAlchemy saw the connection die (and replaced the pool)
        return True
    cause = error.orig
    if not isinstance(cause, psycopg.OperationalError):
        return False
    # No SQLSTATE: the client's own report (connection refused, server closed the connection).
    return cause.sqlstate is None or cause.sqlstate.startswith("08") \
        or cause.sqlstate in UNREACHABLE_SQLSTATES


def is_unique_violation(error: IntegrityError) -> bool:
    """True when the IntegrityError is a unique-constraint violation."""
    text = str(error.orig).lower()
    return "unique" in text or "duplicate key" in text


def _check_connections_on_checkout(engine: Engine, idle_after: float) -> None:
    """Hand out a pooled connection only if the server has not dropped it.

    SQLAlchemy's pool_pre_ping pings on every checkout: one more round trip per unit
    of work, a fifth of a status request's cost. Instead, a connection is pinged only
    when there is a reason to doubt it:

    - the server has sent something although no query is running: when PostgreSQL
      drops a connection (restart, pg_terminate_backend, idle timeout) it sends an
      error and closes the socket, so there is input to read. Looking costs one
      non-blocking poll, no round trip.
    - it sat unused for `idle_after` seconds or more: something on the way (a NAT or
      firewall timeout) may have dropped it without a word.

    A dead connection raises DisconnectionError here and the pool connects afresh.
    What this cannot see (a connection lost while in use, or silently within
    `idle_after` seconds) fails the statement; a request that sent no COMMIT is then
    run once more (app.errors).
    """

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection, record):
        record.info["checked_in_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection, record, _proxy):
        checked_in_at = record.info.get("checked_in_at")
        if checked_in_at is None:
            return  # fresh from connect()
        idle = time.monotonic() - checked_in_at >= idle_after
        if not idle and not _has_unread_input(dbapi_connection):
            return  # in steady use, and the server has said nothing
        try:
            autocommit = dbapi_connection.autocommit
            dbapi_connection.autocommit = True  # the ping opens no transaction
            with dbapi_connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            dbapi_connection.autocommit = autocommit
        except Exception as error:
            raise DisconnectionError("pooled connection is gone") from error  # the pool reconnects


def _has_unread_input(dbapi_connection) -> bool:
    """The server sent something to an idle connection (typically its goodbye), or closed it."""
    if dbapi_connection.closed:
        return True
    poller = select.poll()
    poller.register(dbapi_connection.pgconn.socket, select.POLLIN)
    return bool(poller.poll(0))


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


def own_connection(engine: Engine) -> psycopg.Connection:
    """A PostgreSQL connection of the engine's for one thread to keep (a LISTEN, the NOTIFYs of
    due provider calls): taken out of the pool for good, in autocommit. close_own() ends it."""
    pooled = engine.raw_connection()
    connection = pooled.driver_connection
    pooled.detach()  # never returned to the pool
    connection.autocommit = True
    return connection


def close_own(connection: psycopg.Connection | None, what: str) -> None:
    """Close a connection from own_connection(); a broken one has nothing left to release."""
    if connection is None:
        return
    try:
        connection.close()
    except Exception:  # noqa: BLE001 - already broken
        logger.debug("closing %s failed", what, exc_info=True)

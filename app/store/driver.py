"""The hottest statements sent straight to psycopg on PostgreSQL, compiled once by SQLAlchemy.

SQLAlchemy's execution of a statement costs about 0.1 ms of Python on top of the driver's
(execution context, parameter and result set-up, events): as much as a third of what a
create or a refund costs the database server. bench/duties_app.py measured it: the same
statements, executed through SQLAlchemy, serve 0.83-0.88 of the baseline; sent to the
driver, 0.96-1.08.

`rows(conn, statement, params)` keeps what that execution does for Paydesk:

- the statement is built with SQLAlchemy Core and compiled by the connection's dialect,
  once per statement object; bound values go through their types' bind processors and
  result values through their result processors (UtcDateTime), as SQLAlchemy would; a
  row's keys are the statement's column names (the server's, for textual SQL);
- before_cursor_execute and after_cursor_execute listeners see the statement;
- an error binding a value or from the driver is handed to the Connection, which turns it
  into sqlalchemy.exc's error and invalidates a lost connection, exactly as for its own
  statements (app.store.db and app.errors depend on both).

The statement goes to psycopg with PostgreSQL's own placeholders ($1, $2 ...; converted from
the compiled text once) through a RawCursor, which sends it as it is: psycopg's cursor parses
a statement's %(name)s placeholders on every call, except for statements under 4096 bytes
and 50 values, whose parse it keeps (about 0.2 ms a call for a 5 kB statement).

What it does not keep: SQLAlchemy's echo log does not show these statements.
On SQLite (in process, whose statements cost little) the statement runs through
SQLAlchemy. Only statements without expanding or literal-execute parameters can be sent
this way (those are rendered per execution); compiling one raises ValueError.
"""
from __future__ import annotations

import re
from typing import Any

from psycopg import RawCursor
from psycopg.pq import ExecStatus
from sqlalchemy import Connection
from sqlalchemy.sql import Executable

_COMPILED: dict[tuple[int, str], tuple[Executable, "_Compiled"]] = {}


class _Compiled:
    """A statement's SQL for the dialect, with how to bind its values and read its rows."""

    def __init__(self, statement: Executable, dialect):
        compiled = statement.compile(dialect=dialect)
        if compiled.post_compile_params or compiled.literal_execute_params:
            raise ValueError("a statement with expanding or literal-execute parameters "
                             "is rendered per execution; run it through SQLAlchemy")
        self.sql, self.names = _numbered(compiled.string)
        self.compiled = compiled
        self.bind_processors = tuple(compiled._bind_processors.items())
        columns = compiled._result_columns
        self.keys = tuple(column.keyname for column in columns)
        self.result_processors = tuple(
            (index, processor) for index, column in enumerate(columns)
            if (processor := column.type._cached_result_processor(dialect, None)) is not None)

    def params(self, given: dict[str, Any]) -> list[Any]:
        """The values of $1, $2 ..., processed by their types."""
        values = self.compiled.construct_params(given)
        for name, process in self.bind_processors:
            if name in values:
                values[name] = process(values[name])
        return [values[name] for name in self.names]

    def row(self, keys: tuple[str, ...], values: tuple) -> dict[str, Any]:
        if self.result_processors:
            values = list(values)
            for index, process in self.result_processors:
                values[index] = process(values[index])
        return dict(zip(keys, values))


# What psycopg's dialect compiles: %(name)s placeholders, and %% for a literal %.
_PYFORMAT = re.compile(r"%\(([^)]+)\)s|%%")


def _numbered(sql: str) -> tuple[str, tuple[str, ...]]:
    """The compiled SQL with $1, $2 ... for its %(name)s placeholders (one number per name,
    however often it appears) and % for %%; and the names in their numbers' order."""
    names: dict[str, int] = {}

    def number(match: re.Match) -> str:
        name = match.group(1)
        if name is None:
            return "%"
        return f"${names.setdefault(name, len(names) + 1)}"

    return _PYFORMAT.sub(number, sql), tuple(names)


def _compiled(statement: Executable, dialect) -> _Compiled:
    key = (id(statement), dialect.name)
    found = _COMPILED.get(key)
    if found is None:
        found = _COMPILED[key] = (statement, _Compiled(statement, dialect))  # keeps id() unique
    return found[1]


def rows(conn: Connection, statement: Executable, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows the statement returns, each a dict of its columns in order.

    `statement` is built once (a module's constant, or kept as app.store.writes keeps its
    batches' statements): each statement object is compiled once and kept for good."""
    if conn.dialect.name != "postgresql":
        return [dict(row._mapping) for row in conn.execute(statement, params)]
    compiled = _compiled(statement, conn.dialect)
    sql, values = compiled.sql, params
    cursor = RawCursor(conn.connection.driver_connection)
    try:
        values = compiled.params(params)
        listening = conn._has_events or conn.engine._has_events
        if listening:
            for listener in conn.dispatch.before_cursor_execute:
                sql, values = listener(conn, cursor, sql, values, None, False)
        cursor.execute(sql, values)
        if listening:
            conn.dispatch.after_cursor_execute(conn, cursor, sql, values, None, False)
        returned = cursor.pgresult is not None and cursor.pgresult.status == ExecStatus.TUPLES_OK
        found = cursor.fetchall() if returned else []
        # Textual SQL names no columns to the compiler: the server's names are the keys.
        # (cursor.description builds an object per column on every call: only then.)
        keys = compiled.keys or (tuple(column.name for column in cursor.description) if returned else ())
    except Exception as error:
        conn._handle_dbapi_exception(error, sql, values, cursor, None)  # raises
    finally:
        cursor.close()
    return [compiled.row(keys, values) for values in found]

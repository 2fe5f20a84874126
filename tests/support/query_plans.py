"""What a query's plan and a table's indexes are, on either database (for the migrations' tests
that an index serves the query it was made for)."""
from __future__ import annotations

from sqlalchemy import text


def plan(conn, query, table: str) -> str:
    """The plan of a SQLAlchemy query, as text: SQLite's EXPLAIN QUERY PLAN, or PostgreSQL's
    EXPLAIN after ANALYZE of `table` with sequential scans off (a test's tiny table: it asks
    which index serves the query, not whether one is worth it)."""
    sql = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    if conn.dialect.name == "sqlite":
        return " ".join(str(row[-1]) for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql))
    conn.exec_driver_sql(f"ANALYZE {table}")
    conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
    return "\n".join(conn.exec_driver_sql("EXPLAIN " + sql).scalars())


def index_names(engine, table: str) -> set[str]:
    """Every index of the table by name (reflection skips SQLite's expression indexes, with a warning)."""
    sql = ("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = :table"
           if engine.dialect.name == "sqlite" else "SELECT indexname FROM pg_indexes WHERE tablename = :table")
    with engine.connect() as conn:
        return set(conn.execute(text(sql), {"table": table}).scalars())

"""The writes of a unit of work that nobody reads back before it commits, sent together.

A unit of work queues its inserts and updates here instead of sending each one. They go to
the database when the unit commits, or just before the unit's next statement (whatever
it reads then sees them):

- PostgreSQL: all of them in one statement of data-modifying CTEs
  (`WITH w0 AS (INSERT ... RETURNING id), w1 AS (INSERT ... VALUES ((SELECT id FROM w0), ...))
  SELECT ...`), built once per shape of batch. When nothing else was sent in the unit, that one
  statement is the whole transaction (autocommit): no BEGIN, no COMMIT, one round trip. A batch
  of more than MAX_PER_STATEMENT writes (a bulk job's) goes in parts, in the unit's transaction.
- SQLite (in process, no round trips to save): plain statements, in order, in the unit's
  transaction.

A row inserted in the batch is referred to by later writes of the batch before its id is
known (`id_of`); the id is set on the object when the batch is sent.

A batch may have a condition (`only_if`): an UPDATE ... RETURNING that must change a row for
any of the batch's writes to be made (a refund's amount reserved on its payment). When it changes
none, nothing of the batch is written and `send` says so. The batch's writes may take values
from the row the condition returns before it is known (`Returned`: a refund's currency, from
the payment the condition reserves its amount on), and an inserted row's object takes them too
once the batch is sent.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    Connection,
    RowMapping,
    Table,
    Update,
    bindparam,
    exists,
    func,
    insert,
    literal_column,
    select,
    update,
)


# The most writes sent in one PostgreSQL statement. A larger batch (a bulk job's thousands of
# rows) goes in parts of this many, in order, in the unit's transaction: one statement's answer
# holds at most 1,664 columns (one per new id) and 65,535 parameters, and planning a statement
# of thousands of CTEs takes far longer than its parts. A batch with a condition is never split
# (its writes are made only when the condition holds, in the same statement).
MAX_PER_STATEMENT = 100


@dataclass(frozen=True)
class NewRow:
    """The id of a row inserted earlier in the same batch, before it is known."""

    index: int


@dataclass(frozen=True)
class Add:
    """A column's value plus this amount (a total kept on the row)."""

    amount: int


@dataclass(frozen=True)
class Returned:
    """The value of a column of the row the batch's condition returns, before it is known."""

    column: str


@dataclass
class _Write:
    table: Table
    values: dict[str, Any]
    row_id: Any = None  # an update's target (an id)
    row: Any = None  # an insert's object, whose .id is set once the row exists

    @property
    def is_insert(self) -> bool:
        return self.row_id is None

    def shape_and_params(self, prefix: str, params: dict[str, Any]) -> tuple:
        """What this write's statement depends on (table, insert or update, the columns, which of
        them add to a total or refer to a row of the batch); its bound values go into `params`
        as `<prefix>_<column>` (an update's row as `<prefix>__id`). One pass over the values:
        it runs for every write sent."""
        columns = []
        for name, value in self.values.items():
            kind = value.__class__
            if kind is NewRow:
                columns.append((name, value.index))
            elif kind is Add:
                columns.append((name, "add"))
                params[f"{prefix}_{name}"] = value.amount
            elif kind is Returned:
                columns.append((name, "returned", value.column))
            else:
                columns.append(name)
                params[f"{prefix}_{name}"] = value
        if self.row_id is not None:
            params[f"{prefix}__id"] = self.row_id
        return (self.table.name, self.row_id is None, self.row is not None, tuple(columns))


def _then(values: dict[str, Any], name: str, value, *, inserted: bool = False) -> Any:
    """A column's value after `value` is written over what `values` already sets it to
    (`inserted`: values of an INSERT, where there is no earlier value to add to)."""
    if not isinstance(value, Add):
        return value
    if name not in values:
        if inserted:
            raise ValueError(f"cannot add to {name}: the batch's INSERT does not set it")
        return value
    earlier = values[name]
    return Add(earlier.amount + value.amount) if isinstance(earlier, Add) else earlier + value.amount


@dataclass
class Writes:
    """Inserts and updates waiting to be sent (see the module's docstring)."""

    pending: list[_Write] = field(default_factory=list)
    # (UPDATE ... RETURNING, its parameters, what to call with the row it returns)
    condition: tuple[Update, dict, Callable[[RowMapping], None] | None] | None = None
    _new_rows: dict[int, int] = field(default_factory=dict)  # id(obj) -> index in pending

    def insert(self, table: Table, values: dict[str, Any], *, row=None) -> None:
        """Queue an INSERT; `row` is the object that takes the new row's id.

        A None for a column that is NULL by default is left out: fewer values to bind and send,
        and a shorter statement."""
        null_by_default = _null_by_default(table)
        values = {name: value for name, value in values.items()
                  if value is not None or name not in null_by_default}
        if row is not None:
            self._new_rows[id(row)] = len(self.pending)
        self.pending.append(_Write(table, values, row=row))

    def update(self, table: Table, row_id, values: dict[str, Any]) -> None:
        """Queue an UPDATE of one row by id; two updates of one row in a batch become one, and
        an update of a row the batch inserts changes the insert (in one PostgreSQL statement
        an UPDATE cannot see a row a sibling INSERT adds)."""
        if isinstance(row_id, NewRow):
            inserted = self.pending[row_id.index].values
            for name, value in values.items():
                inserted[name] = _then(inserted, name, value, inserted=True)
            return
        for write in self.pending:
            if not write.is_insert and write.table is table and write.row_id == row_id:
                for name, value in values.items():
                    write.values[name] = _then(write.values, name, value)
                return
        self.pending.append(_Write(table, dict(values), row_id=row_id))

    @property
    def fits_one_statement(self) -> bool:
        """The batch goes to PostgreSQL as one statement (not in parts: see MAX_PER_STATEMENT)."""
        return len(self.pending) <= MAX_PER_STATEMENT or self.condition is not None

    @property
    def waiting(self) -> bool:
        """Something is queued to be sent."""
        return bool(self.pending) or self.condition is not None

    def only_if(self, statement: Update, params: dict,
                then: Callable[[RowMapping], None] | None = None) -> None:
        """Make this batch's writes depend on `statement` (an UPDATE ... RETURNING of at most one
        row) changing a row; it is sent with them, first. Once they are written, `then` is
        called with the row it returned."""
        self.condition = (statement, params, then)

    def id_of(self, obj) -> Any:
        """obj's id, or a reference to its row when it is inserted in this batch."""
        if obj.id is None and id(obj) in self._new_rows:
            return NewRow(self._new_rows[id(obj)])
        return obj.id

    def send(self, conn: Connection, *, postgres: bool, relax_durability: bool = False) -> bool:
        """Send what is queued on conn (in its transaction, or as its own in autocommit);
        `relax_durability` also turns synchronous_commit off for the transaction (PostgreSQL).
        False when the batch's condition changed no row, and nothing was written."""
        if not self.waiting:
            return True
        batch, condition, in_parts = self.pending, self.condition, not self.fits_one_statement
        self.pending, self.condition, self._new_rows = [], None, {}
        if postgres and in_parts:
            sent = _send_in_parts(conn, batch, relaxed=relax_durability)
        elif postgres:
            sent = _send_as_one_statement(conn, batch, condition, relaxed=relax_durability)
        else:
            sent = _send_one_by_one(conn, batch, condition)
        if sent is None:
            return False
        ids, returned = sent
        for write, new_id in zip(batch, ids):
            if write.row is not None:
                write.row.id = new_id
                if returned is not None:
                    _take_returned(write.row, returned)
        if condition is not None and condition[2] is not None:
            condition[2](returned)
        return True


def _take_returned(obj, returned: RowMapping) -> None:
    """Give obj's attributes that stand for a column of the condition's row (Returned) its value."""
    for name, value in vars(obj).items():
        if value.__class__ is Returned:
            setattr(obj, name, returned[value.column])


def _send_one_by_one(conn: Connection, batch: list[_Write], condition) -> tuple[list, RowMapping | None] | None:
    returned = None
    if condition is not None:
        returned = conn.execute(condition[0], condition[1]).mappings().first()
        if returned is None:
            return None
    ids: list[int | None] = []
    for write in batch:
        params: dict[str, Any] = {}
        key = ("one", write.shape_and_params("p", params))
        statement = _built(key, lambda: _statement(
            write, "p", lambda index: bindparam(f"ref{index}"),
            returned_ref=lambda column, type_: bindparam(f"returned_{column}", type_=type_)))
        for value in write.values.values():
            if value.__class__ is NewRow:
                params[f"ref{value.index}"] = ids[value.index]
            elif value.__class__ is Returned:
                params[f"returned_{value.column}"] = returned[value.column]
        result = conn.execute(statement, params)
        ids.append(result.scalar_one() if write.row is not None else None)
    return ids, returned


_NULL_BY_DEFAULT: dict[str, frozenset[str]] = {}


def _null_by_default(table: Table) -> frozenset[str]:
    """The table's columns that an INSERT leaving them out sets to NULL."""
    found = _NULL_BY_DEFAULT.get(table.name)
    if found is None:
        found = _NULL_BY_DEFAULT[table.name] = frozenset(
            column.name for column in table.columns
            if column.nullable and column.default is None and column.server_default is None)
    return found


# Statements already built, by the shape of their batch (tables, columns, references; a
# condition by its id: conditions are the store's module-level statements). Bulk units of many
# sizes make many shapes: past MAX_BUILT the cache starts again rather than grow without end.
_STATEMENTS: dict[tuple, Any] = {}
MAX_BUILT = 1000


def _built(key: tuple, build: Callable[[], Any]) -> Any:
    """The statement built for `key`, built now if it is not kept (dict operations are atomic
    under the GIL: two threads may build the same statement, never a wrong one)."""
    statement = _STATEMENTS.get(key)
    if statement is None:
        if len(_STATEMENTS) >= MAX_BUILT:
            _STATEMENTS.clear()
        statement = _STATEMENTS[key] = build()
    return statement


def _statement(write: _Write, prefix: str, row_ref, held=None, returned_ref=None):
    """The INSERT or UPDATE of one write, its values bound as `<prefix>_<column>` (an update's
    row as `<prefix>__id`), a NewRow value as row_ref(its index), a Returned value as
    returned_ref(its column, the written column's type); `held`: made only when it holds."""
    table = write.table
    values = {}
    for name, value in write.values.items():
        if isinstance(value, NewRow):
            values[name] = row_ref(value.index)
        elif isinstance(value, Returned):
            values[name] = returned_ref(value.column, table.c[name].type)
        else:
            param = bindparam(f"{prefix}_{name}", type_=table.c[name].type)
            values[name] = table.c[name] + param if isinstance(value, Add) else param
    if write.is_insert:
        if held is None:
            statement = insert(table).values(values)
        else:
            statement = insert(table).from_select(
                list(values), select(*(value.label(name) for name, value in values.items())).where(held))
        return statement.returning(table.c.id) if write.row is not None else statement
    statement = update(table).where(table.c.id == bindparam(f"{prefix}__id")).values(values)
    return statement.where(held) if held is not None else statement


def _send_as_one_statement(conn: Connection, batch: list[_Write], condition, *,
                           relaxed: bool) -> tuple[list, RowMapping | None] | None:
    params = dict(condition[1]) if condition else {}
    shapes = tuple(write.shape_and_params(f"w{index}", params) for index, write in enumerate(batch))
    key = (shapes, id(condition[0]) if condition else None, relaxed)
    statement = _built(key, lambda: _one_statement(batch, condition[0] if condition else None, relaxed))
    row = conn.execute(statement, params).mappings().first()
    if row is None:  # the condition changed no row
        return None
    ids = [row[f"id{index}"] if write.row is not None else None for index, write in enumerate(batch)]
    return ids, row if condition is not None else None


def _send_in_parts(conn: Connection, batch: list[_Write], *, relaxed: bool) -> tuple[list, None]:
    """A batch without a condition, MAX_PER_STATEMENT writes a statement, in the transaction the
    unit began (UnitOfWork.commit does not send a batch in parts in autocommit)."""
    ids: list = []
    for start in range(0, len(batch), MAX_PER_STATEMENT):
        part = [_in_part(write, start, ids) for write in batch[start:start + MAX_PER_STATEMENT]]
        part_ids, _ = _send_as_one_statement(conn, part, None, relaxed=relaxed and start == 0)
        ids.extend(part_ids)
    return ids, None


def _in_part(write: _Write, start: int, ids: list) -> _Write:
    """The write as sent in the part of its batch that begins at `start`: a row inserted in an
    earlier part is referred to by its id (in `ids`), one of this part by its index in the part."""
    if not any(value.__class__ is NewRow for value in write.values.values()):
        return write
    values = {name: value if value.__class__ is not NewRow
              else ids[value.index] if value.index < start else NewRow(value.index - start)
              for name, value in write.values.items()}
    return _Write(write.table, values, write.row_id, write.row)


def _one_statement(batch: list[_Write], condition: Update | None, relaxed: bool):
    """WITH [c AS (the condition),] w0 AS (...), w1 AS (...) SELECT [c.*,] <the new ids>[, set_config(...)]
    [FROM c].

    With a condition, each write is made only when it changed a row: INSERT ... SELECT ...
    WHERE EXISTS (SELECT FROM c), UPDATE ... AND EXISTS (SELECT FROM c); a Returned value is
    (SELECT <column> FROM c). The statement's one row is the condition's with the new ids, and
    it has none when the condition changed no row.
    """
    guard = condition.cte("c") if condition is not None else None
    held = exists(select(guard.c[0])) if guard is not None else None
    ctes = []
    for index, write in enumerate(batch):
        statement = _statement(write, f"w{index}",
                               lambda ref: select(ctes[ref].c.id).scalar_subquery(), held,
                               returned_ref=lambda column, _type: select(guard.c[column]).scalar_subquery())
        ctes.append(statement.cte(f"w{index}"))
    columns = [select(ctes[index].c.id).scalar_subquery().label(f"id{index}")
               for index, write in enumerate(batch) if write.row is not None]
    if guard is not None:
        columns = [*guard.c, *columns]
        ctes.insert(0, guard)
    if relaxed:
        # SET LOCAL synchronous_commit for this transaction, from within the statement.
        columns.append(func.set_config("synchronous_commit", "off", True).label("relaxed"))
    return select(*(columns or [literal_column("1").label("sent")])).add_cte(*ctes)


"""Units of work whose relaxed commits a database crash loses, for the recovery tests."""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine

from app.store.unit_of_work import UnitOfWork


@dataclass
class LostCommits:
    """The crash's window and what the commits it lost would have written: the webhook events as
    (txNo, webhook id).

    A crash loses the relaxed commits made since the last one that waited for the disk, once:
    while `crashing`, every relaxed commit is lost; the test ends the window (the database is
    back) by setting it False, and later commits hold. A durable commit inside the window would
    in truth have kept the relaxed ones before it (PostgreSQL writes its log in order); losing
    them anyway is a harsher crash than any real one, which recovery must survive too.
    """

    crashing: bool = True
    commits: int = 0
    webhook_events: list[tuple[str, str]] = field(default_factory=list)


def crash_loses_relaxed_commits(engine: Engine, lost: LostCommits):
    """A `deps.uow` whose units roll back instead of committing when they relaxed durability
    while `lost.crashing`.

    That is what a database server crash just after such a commit does: PostgreSQL answered
    the COMMIT before its WAL reached the disk, and the crash loses it. Durable commits stay.
    """

    class CrashingUnitOfWork(UnitOfWork):
        def __enter__(self):
            self.relaxed = False
            self.events: list[tuple[str, str]] = []
            return super().__enter__()

        def relax_durability(self) -> None:
            super().relax_durability()
            self.relaxed = True

        def enqueue_webhook(self, tx, webhook_id=None) -> None:
            super().enqueue_webhook(tx, webhook_id)
            self.events.append((tx.tx_no, webhook_id))

        def commit(self) -> None:
            if not (self.relaxed and lost.crashing):
                super().commit()
                return
            if self._conn is not None:  # (a unit whose writes wait for commit sent nothing yet)
                self._tx.rollback()
            lost.commits += 1
            lost.webhook_events.extend(self.events)

    def unit_of_work(write: bool = True) -> UnitOfWork:
        return CrashingUnitOfWork(engine, write=write)

    return unit_of_work

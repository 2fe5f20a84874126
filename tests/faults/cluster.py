"""A PostgreSQL cluster of the test's own, to restart and stop at will (never the machine's shared server).

initdb and pg_ctl come from the Debian package's bin directory (PG_BIN overrides it). The
data directory, log and Unix socket live in a temporary directory; the server listens on
127.0.0.1 at a free port. initdb refuses to run as root, so as root everything runs as
the `postgres` user, in a directory that user owns.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.databases import postgres_required
from tests.support.servers import free_port

OWNER = "postgres"  # the OS user that runs the server when the tests run as root


def postgres_bin() -> Path | None:
    """The directory of initdb and pg_ctl: PG_BIN, or the newest /usr/lib/postgresql/*/bin."""
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda path: int(Path(path).parts[-3]))
    return Path(found[-1]).parent if found else None


def require_postgres_bin() -> Path:
    """The bin directory; skips the test without it, unless REQUIRE_POSTGRES=1 (then it fails)."""
    bin_dir = postgres_bin()
    if bin_dir is None or not (bin_dir / "pg_ctl").exists():
        message = "PostgreSQL server binaries (initdb, pg_ctl) not found; set PG_BIN"
        if postgres_required():
            pytest.fail(message)
        pytest.skip(message)
    return bin_dir


class Cluster:
    """initdb'd on construction; start(), stop(), restart() as an operator would; destroy() at the end."""

    def __init__(self, bin_dir: Path):
        self.bin_dir = bin_dir
        self.port = free_port()
        self.as_owner = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="paydesk-faults-"))
        if self.as_owner:
            owner = pwd.getpwnam(OWNER)
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync",
                  "-E", "UTF8")
        settings = {
            "port": self.port,
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{self.root}'",
            "max_connections": 200,
            "fsync": "off",  # a test cluster: nothing here has to survive a machine crash
            "full_page_writes": "off",
            "log_min_messages": "warning",
        }
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy URL of a database on this cluster."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._pg_ctl("start", "-l", str(self.log))

    def stop(self) -> None:
        """Fast shutdown: sessions are terminated, as on a routine restart."""
        self._pg_ctl("stop", "-m", "fast")

    def restart(self) -> None:
        """Fast shutdown, then start again; returns once it accepts connections."""
        self._pg_ctl("restart", "-m", "fast", "-l", str(self.log))

    def destroy(self) -> None:
        """Stop the server at once, if it runs, and remove every file of the cluster."""
        if (self.data / "postmaster.pid").exists():
            self._pg_ctl("stop", "-m", "immediate", check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def _pg_ctl(self, *args: str, check: bool = True) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "30", *args, check=check)

    def _run(self, program: str, *args: str, check: bool = True) -> None:
        command = [str(self.bin_dir / program), *args]
        if self.as_owner:
            command = ["runuser", "-u", OWNER, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=self.root)
        if check and done.returncode != 0:
            log = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{program} {args[0]} failed: {done.stderr or done.stdout}\n{log}")

"""A real PostgreSQL server for the store's tests, and a fresh database on it per test.

ADAEXPLORE_TEST_POSTGRES names a server (`.ci/run` starts one for the whole run, by `.ci/postgres`): a URL whose
user may create databases. Unset, each test process starts its own throwaway server by `.ci/postgres`, from
Debian's postgresql binaries, and stops it at the end; without those binaries the PostgreSQL tests are skipped,
saying how to get them.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "postgres"
ENV = "ADAEXPLORE_TEST_POSTGRES"


class Unavailable(Exception):
    """No server could be had here; the message says what to do."""


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


class Server:
    """A server the tests may create and drop databases on."""

    def __init__(self, url: str, folder: str | None = None) -> None:
        self.url, self.folder = url, folder
        self._spare: list[str] = []  # emptied databases of earlier tests (store_database)

    @classmethod
    def start(cls) -> Server:
        """The server ADAEXPLORE_TEST_POSTGRES names, else a new one of this process's own.

        Raises:
            Unavailable: neither is there, nor can one be started (the reason is `.ci/postgres`'s).
        """
        given = os.environ.get(ENV)
        if given:
            return cls(given)
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise Unavailable("psycopg is not installed: pip install -e '.[postgres]' (install.sh --dev does)") from exc
        done = subprocess.run([str(SCRIPT), "start"], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise Unavailable(f"no PostgreSQL server: {done.stderr.strip()[-600:]} (or set {ENV} to a server's URL)")
        folder, url = done.stdout.split()
        return cls(url, folder)

    def stop(self) -> None:
        for url in self._spare:
            self.drop_database(url)
        self._spare.clear()
        if self.folder is not None:
            subprocess.run([str(SCRIPT), "stop", self.folder], capture_output=True, timeout=120, check=False)

    def _admin(self, url: str | None = None):
        import psycopg

        return psycopg.connect(url or self.url, autocommit=True)

    def new_database(self) -> str:
        """A new, empty database's URL (the caller drops it)."""
        name = f"adaexplore_test_{secrets.token_hex(6)}"
        with self._admin() as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return _with_database(self.url, name)

    def drop_database(self, url: str) -> None:
        """Drop a database of `new_database` (its connections that are still open are ended)."""
        name = urlsplit(url).path.lstrip("/")
        assert name.startswith("adaexplore_test_"), name
        with self._admin() as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def store_database(self) -> str:
        """A database for a test's store: new, or one an earlier test of this process had, emptied (its rows
        removed and its ids restarted, which takes a few milliseconds where a new one takes a few hundred)."""
        return self._spare.pop() if self._spare else self.new_database()

    def give_back(self, url: str) -> None:
        """Empty a database of `store_database` for the next test, or drop it if its schema is not the store's."""
        from adaexplore.store import SCHEMA_VERSION

        with self._admin(url) as db:
            db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            tables = [r[0] for r in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
            version = None
            if "meta" in tables:
                row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                version = row[0] if row else None
            if version == str(SCHEMA_VERSION):
                emptied = ", ".join(t for t in tables if t != "meta")
                db.execute(f"TRUNCATE {emptied} RESTART IDENTITY CASCADE")
                db.execute("DELETE FROM meta WHERE key <> 'schema_version'")
                self._spare.append(url)
                return
        self.drop_database(url)

"""One DuckDB database file as the store uses it: a cursor per thread, DuckDB's
errors mapped to the store's, and the file opened again after DuckDB
invalidated it.

A checkpoint that fails (a disk filling up mid-stream) makes DuckDB invalidate
the whole database: every later statement raises ``FatalException`` until the
database is opened again. The WAL and the last checkpoint are intact, so
:class:`DuckDBFile` closes the database (every cursor of it) and reopens the
file on its next use; while the disk stays full, that use fails again with
:class:`StoreUnavailable`, and succeeds once space returns, without a restart.

How errors map (see :mod:`.base`)::

    FatalException, "database has been invalidated"     StoreUnavailable, reopened on next use
    InternalException                                    raised as it is (maybe this batch's doing),
                                                         reopened on next use all the same
    OperationalError (IOException: disk full, file       StoreUnavailable
      locked; TransactionException: a commit that
      could not write its WAL; OutOfMemory), Interrupt
    any other DuckDB error                               raised as it is: unexpected
"""

from __future__ import annotations

import contextlib
import functools
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import duckdb

from curvestream_bridge.store.base import StoreUnavailable

__all__ = ["DuckDBFile", "mapped"]

_T = TypeVar("_T")


class DuckDBFile:
    """``on_open(connection)`` runs after every open (schema, caches); it may raise a DuckDB error."""

    def __init__(self, path: str, on_open: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
        self.path = path
        if path != ":memory:":
            pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._on_open = on_open
        self._local = threading.local()
        self._lock = threading.RLock()
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._generation = 0
        self.invalidated = ""  # why DuckDB gave up on the open database; reopened on next use
        self.con = self._open()

    def _open(self) -> duckdb.DuckDBPyConnection:
        con = None
        try:
            con = duckdb.connect(self.path)
            self._on_open(con)
        except duckdb.Error as exc:
            if con is not None:
                con.close()
            raise StoreUnavailable(f"cannot open DuckDB file {self.path}: {exc}") from None
        self._generation += 1
        return con

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor of the open database (opened again first if DuckDB invalidated it)."""
        if self.invalidated:
            self._reopen()
        cur = getattr(self._local, "cur", None)
        if cur is None or self._local.generation != self._generation:
            with self._lock:
                cur = self._local.cur = self.con.cursor()
                self._local.generation = self._generation
                self._cursors.append(cur)
        return cur

    def _reopen(self) -> None:
        with self._lock:
            if not self.invalidated:
                return  # another thread did it
            if self.path == ":memory:":
                raise StoreUnavailable(f"in-memory DuckDB invalidated, its content is gone: {self.invalidated}")
            self._close_all()
            self.con = self._open()
            self.invalidated = ""

    def translate(self, exc: duckdb.Error) -> Exception:
        """The store's error for a DuckDB error (the module docstring has the table)."""
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        invalidated = "invalidated" in str(exc)
        if invalidated or isinstance(exc, (duckdb.FatalException, duckdb.InternalException)):
            self.invalidated = self.invalidated or first_line
            if isinstance(exc, duckdb.InternalException) and not invalidated:
                return exc
            return StoreUnavailable(f"DuckDB database invalidated, reopening it: {first_line}")
        if isinstance(exc, (duckdb.OperationalError, duckdb.InterruptException)):
            return StoreUnavailable(f"DuckDB: {exc}")
        return exc

    def ping(self) -> bool:
        try:
            self.cursor().execute("SELECT 1").fetchone()
            return not self.invalidated
        except duckdb.Error as exc:
            self.translate(exc)
            return False
        except StoreUnavailable:
            return False

    def _close_all(self) -> None:
        for con in [*self._cursors, self.con]:
            try:
                con.close()
            except duckdb.Error:
                pass  # an invalidated database may refuse even this
        self._cursors = []

    def close(self) -> None:
        with self._lock:
            self._close_all()


def mapped(method: Callable[..., _T]) -> Callable[..., _T]:
    """A store method with DuckDB's errors mapped by its ``_db`` (a :class:`DuckDBFile`)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> _T:
        try:
            return method(self, *args, **kwargs)
        except duckdb.Error as exc:
            error = self._db.translate(exc)
            if error is exc:
                raise
            raise error from exc

    return wrapper


def begin(cur: duckdb.DuckDBPyConnection) -> None:
    """BEGIN on a thread's cursor, which serves that thread's reads one after
    another: a transaction an earlier read left open (its ROLLBACK interrupted
    as its client went away) is rolled back first, instead of failing this read."""
    try:
        cur.execute("BEGIN TRANSACTION")
    except duckdb.TransactionException:
        cur.execute("ROLLBACK")
        cur.execute("BEGIN TRANSACTION")


@contextlib.contextmanager
def rolled_back_on_error(cur: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The transaction open on ``cur`` rolled back when the block raises; the error goes on."""
    try:
        yield
    except BaseException:
        try:
            cur.execute("ROLLBACK")
        except duckdb.Error:
            pass  # the database was invalidated meanwhile: the first error says why
        raise

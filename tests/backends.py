"""Which database the running test uses. Its own module, imported once: pytest loads conftest.py under a name of
its own, so state kept there would exist twice (once for the fixtures, once for the tests that import it)."""

from __future__ import annotations

import hashlib
from pathlib import Path

BACKEND: dict = {"name": "sqlite", "server": None}
_databases: dict[str, str] = {}


def store_at(path: Path) -> Path | str:
    """The database a test names by a file path: that file on SQLite; on PostgreSQL a fresh database of its own
    (the same one each time the same path is given, so two stores can share it)."""
    server = BACKEND["server"]
    if server is None:
        return path
    key = str(path)
    if key not in _databases:
        name = "t_" + hashlib.sha1(key.encode()).hexdigest()[:16]
        server.psql(f"CREATE DATABASE {name};")
        _databases[key] = server.get_uri(name)
    return _databases[key]

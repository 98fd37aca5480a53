"""The nightly Hypothesis profile shares its example database through Redis when NNFUZZ_HYPOTHESIS_REDIS is set."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from hypothesis.database import DirectoryBasedExampleDatabase, MultiplexedDatabase

from tests.conftest import nightly_database


class FakeRedis:
    """Stands in for redis.Redis (the redis package is not a dependency)."""

    def __init__(self, url: str) -> None:
        self.url = url

    @classmethod
    def from_url(cls, url: str) -> FakeRedis:
        return cls(url)


@pytest.fixture
def fake_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("redis")
    module.Redis = FakeRedis
    monkeypatch.setitem(sys.modules, "redis", module)
    monkeypatch.delitem(sys.modules, "hypothesis.extra.redis", raising=False)


def test_without_the_variable_the_database_is_the_directory_or_the_default(tmp_path: Path) -> None:
    assert nightly_database({}) is None
    db = nightly_database({"NNFUZZ_HYPOTHESIS_DB": str(tmp_path)})
    assert isinstance(db, DirectoryBasedExampleDatabase)


def test_with_the_variable_the_local_database_is_multiplexed_with_redis(tmp_path: Path, fake_redis: None) -> None:
    db = nightly_database({"NNFUZZ_HYPOTHESIS_DB": str(tmp_path), "NNFUZZ_HYPOTHESIS_REDIS": "redis://cache:6379/0"})
    assert isinstance(db, MultiplexedDatabase)
    local, shared = db._wrapped
    assert isinstance(local, DirectoryBasedExampleDatabase)
    assert type(shared).__name__ == "RedisExampleDatabase" and shared.redis.url == "redis://cache:6379/0"


def test_without_the_redis_package_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # import redis raises ImportError
    with pytest.raises(RuntimeError, match="pip install redis"):
        nightly_database({"NNFUZZ_HYPOTHESIS_REDIS": "redis://cache:6379/0"})

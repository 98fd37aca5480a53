"""The persistent {token -> model cache hash} store (D24): persistence, version reset, sharing, its folder."""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

from driver_under_test._cache_store import TokenStore, default_cache_dir

T1, T2 = b"\x01" * 32, b"\x02" * 32
H1, H2 = b"\xaa" * 32, b"\xbb" * 32


def test_a_record_is_found_under_its_token_only(tmp_path) -> None:
    store = TokenStore(tmp_path / "s", "v1")
    assert store.lookup(T1) is None
    store.record(T1, H1)
    assert store.lookup(T1) == H1 and store.lookup(T2) is None
    store.record(T1, H2)  # saving again replaces
    assert store.lookup(T1) == H2
    store.forget(T1)
    assert store.lookup(T1) is None


def test_records_persist_across_store_instances(tmp_path) -> None:
    TokenStore(tmp_path / "s", "v1").record(T1, H1)
    assert TokenStore(tmp_path / "s", "v1").lookup(T1) == H1


def test_a_version_change_drops_every_record(tmp_path) -> None:
    TokenStore(tmp_path / "s", "v1").record(T1, H1)
    TokenStore(tmp_path / "s", "v1").record(T2, H2)
    assert TokenStore(tmp_path / "s", "v2").lookup(T1) is None
    assert TokenStore(tmp_path / "s", "v1").lookup(T1) is None
    assert TokenStore(tmp_path / "s", "v1").lookup(T2) is None


def test_knows_digest_ignores_tokens(tmp_path) -> None:
    store = TokenStore(tmp_path / "s", "v1")
    store.record(T1, H1)
    assert store.knows_digest(H1) and not store.knows_digest(H2)


def test_threads_share_one_store(tmp_path) -> None:
    def work(k: int) -> None:
        store = TokenStore(tmp_path / "s", "v1")
        for i in range(20):
            store.record(bytes([k, i]) * 16, bytes([i]) * 32)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store = TokenStore(tmp_path / "s", "v1")
    assert all(store.lookup(bytes([k, i]) * 16) == bytes([i]) * 32 for k in range(6) for i in range(20))


def test_the_folder_is_created_private(tmp_path) -> None:
    TokenStore(tmp_path / "a" / "b", "v1").record(T1, H1)
    assert (tmp_path / "a" / "b").stat().st_mode & 0o077 == 0


def test_the_default_folder_is_per_user_under_xdg_cache_or_the_temp_folder(monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert default_cache_dir() == Path("/somewhere/cache/nnfuzz-dut")
    assert TokenStore(None, "v1").folder == default_cache_dir()
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path(tempfile.gettempdir()) / f"nnfuzz-dut-cache-{os.getuid()}"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # the XDG rules ignore relative paths
    assert default_cache_dir().parent == Path(tempfile.gettempdir())

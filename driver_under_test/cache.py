"""Compilation caching (D23, D24): a prepared model saved to cache files, and read back from them verified.

The device uses one model cache file (the model's structure and its backend's program, security sensitive) and
one data cache file (the constants); _cache_format describes both. Saving serializes the prepared model into
memory, hashes the model cache bytes from that buffer (never from the file), writes both files at their handles'
offsets and records {token -> hash} in the persistent store of _cache_store. Reading takes each file into memory
once, hashes that buffer, compares with the hash recorded for the token, and only then decodes the same buffer;
the model cache carries the data cache's hash, so a changed data cache is refused too. The device puts the decoded
model through the same validation as a model given to prepareModel, so nothing read from a file reaches its
backend unchecked.

Statuses: argument problems (handle counts, file descriptors per handle, token length) are INVALID_ARGUMENT at
launch; unusable files (access mode, not a regular file) GENERAL_FAILURE at launch; a cache that does not verify
or decode GENERAL_FAILURE through the callback; a passed deadline MISSED_DEADLINE_PERSISTENT. Saving never fails
preparation: any problem means nothing is saved.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from driver_under_test import _cache_files
from driver_under_test._cache_files import CacheFile, check_handles, duplicate, write_all
from driver_under_test._cache_format import (
    HEADER_SIZE,
    CachedModel,
    CacheFormatError,
    SavedSubgraph,
    deserialize,
    serialize,
)
from driver_under_test._cache_store import TokenStore, default_cache_dir
from driver_under_test.backends import Constants
from driver_under_test.errors import failure, invalid
from driver_under_test.faults import FaultSet, define
from driver_under_test.options import DeviceOptions
from harness.hal import BYTE_SIZE_OF_CACHE_TOKEN, CacheHandle, Model

HASH_CHECKS_PREFIX = define(
    "cache_hash_checks_prefix",
    "cache",
    f"Hashes only the first {HEADER_SIZE} bytes (the header) of the model cache, so a model cache changed past its "
    "header, or replaced by another model's, still matches the hash recorded for the token.",
).name
CHECKED_ON_FILE = define(
    "cache_checked_on_file",
    "cache",
    "Hashes the model cache file as read once, then reads the file again to decode it: a file swapped between "
    "the two reads prepares a model that was never checked (a time-of-check/time-of-use race).",
).name
TOKEN_IGNORED = define(
    "cache_token_ignored",
    "cache",
    "Accepts a model cache whose hash matches the one recorded for any token, not the token presented: another "
    "model's valid cache, or the right cache under a different token, prepares.",
).name

MODEL_CACHE_FILES = 1
DATA_CACHE_FILES = 1
# The structure of the largest model the default limits allow fits in a few MiB; anything far beyond is refused
# before reading (D26). The data cache is bounded by the constants a model may hold. A backend's program (a
# translated flatbuffer) is counted in the model cache.
MAX_MODEL_CACHE_BYTES = 64 << 20


def _token(token: object) -> bytes:
    if not isinstance(token, bytes | bytearray | memoryview):
        raise invalid("the cache token is not bytes", "cache.token")
    token = bytes(token)
    if len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
        raise invalid(f"the cache token has {len(token)} bytes, not {BYTE_SIZE_OF_CACHE_TOKEN}", "cache.token")
    return token


def _saved_subgraphs(model: Model, constants: Constants) -> list[SavedSubgraph]:
    """The subgraphs as the cache keeps them: the constants are the values compiled, not the pools'."""
    saved = []
    for s, sg in enumerate((model.main, *model.referenced)):
        values = {i: constants[(s, i)] for i in range(len(sg.operands)) if (s, i) in constants}
        saved.append(SavedSubgraph(sg, values))
    return saved


class CompilationCache:
    """One device's cache files and its persistent {token -> model cache hash} store."""

    def __init__(self, options: DeviceOptions, faults: FaultSet, version: str, variant: str) -> None:
        self.options = options
        self.faults = faults
        self.version = version  # the device's version string: the store forgets every record when it changes
        # Devices of different backends keep separate stores by default: sharing one, each would wipe the other's
        # records whenever it saw the other's version.
        self.folder = options.cache_dir if options.cache_dir is not None else default_cache_dir() / variant

    def files_needed(self) -> tuple[int, int]:
        """(model cache files, data cache files) the device uses: one of each, none when caching is off."""
        if not self.options.caching:
            return 0, 0
        return MODEL_CACHE_FILES, DATA_CACHE_FILES

    def _store(self) -> TokenStore:
        return TokenStore(self.folder, self.version)

    def _digest(self, model_cache: bytes) -> bytes:
        """The hash the store keeps of a model cache."""
        if self.faults.active(HASH_CHECKS_PREFIX):
            model_cache = model_cache[:HEADER_SIZE]
        return hashlib.sha256(model_cache).digest()

    def _checked_files(
        self, model_cache: object, data_cache: object, *, writable: bool
    ) -> tuple[list[CacheFile], list[CacheFile]]:
        n_model, n_data = self.files_needed()
        return (
            check_handles(model_cache, n_model, "model", writable=writable),
            check_handles(data_cache, n_data, "data", writable=writable),
        )

    # --- saving ---------------------------------------------------------------------------------------

    def save_quietly(
        self,
        model: Model,
        constants: Constants,
        backend: str,
        artifact: bytes,
        model_cache: Sequence[CacheHandle],
        data_cache: Sequence[CacheHandle],
        token: bytes,
    ) -> None:
        """Write a prepared model to the cache files, never failing preparation: on any problem nothing is saved."""
        try:
            self._save(model, constants, backend, artifact, model_cache, data_cache, token)
        except Exception:  # a cache that cannot be written only costs the client a later cache miss
            return

    def _save(
        self,
        model: Model,
        constants: Constants,
        backend: str,
        artifact: bytes,
        model_cache: Sequence[CacheHandle],
        data_cache: Sequence[CacheHandle],
        token: bytes,
    ) -> None:
        if not self.options.caching:
            return
        token = _token(token)
        model_files, data_files = self._checked_files(model_cache, data_cache, writable=True)
        model_bytes, data_bytes = serialize(
            _saved_subgraphs(model, constants),
            bool(model.relax_computation_float32_to_float16),
            model.extension_name_to_prefix,
            backend,
            artifact,
        )
        # The hash comes from this buffer, before any file is touched: what the files hold later cannot change it.
        digest = self._digest(model_bytes)
        store = self._store()
        # Forgetting first means an unusable store saves nothing, and half-written files never match an old record.
        store.forget(token)
        write_all(model_files[0], model_bytes, "model cache")
        write_all(data_files[0], data_bytes, "data cache")
        store.record(token, digest)

    # --- reading --------------------------------------------------------------------------------------

    def open_for_reading(self, model_cache: object, data_cache: object, token: object) -> tuple[list[CacheFile], bytes]:
        """The launch checks of prepareModelFromCache: (the driver's own duplicates of the files, the token).

        INVALID_ARGUMENT for wrong handle counts or token, GENERAL_FAILURE for unusable files or caching off. The
        caller owns the duplicates (the client may close its descriptors once the call returns).
        """
        if not self.options.caching:
            raise failure("compilation caching is off on this device", "cache.unsupported")
        checked = _token(token)
        model_files, data_files = self._checked_files(model_cache, data_cache, writable=False)
        return duplicate([*model_files, *data_files]), checked

    def read(self, files: Sequence[CacheFile], token: bytes) -> CachedModel:
        """What the files hold, once their model cache is the one recorded for the token; GENERAL_FAILURE if not."""
        model_file, data_file = files
        data_limit = HEADER_SIZE + self.options.limits.max_total_constant_bytes
        # Each file is read into memory once; everything after works on those bytes only (no TOCTOU window).
        model_bytes = _cache_files.read_all(model_file, MAX_MODEL_CACHE_BYTES, "model cache")
        data_bytes = _cache_files.read_all(data_file, data_limit, "data cache")
        self._verify(token, model_bytes)
        if self.faults.active(CHECKED_ON_FILE):
            model_bytes = _cache_files.read_all(model_file, MAX_MODEL_CACHE_BYTES, "model cache")
        try:
            return deserialize(model_bytes, data_bytes)
        except CacheFormatError as e:
            raise failure(f"the cache does not decode: {e}", "cache.format") from None

    def _verify(self, token: bytes, model_bytes: bytes) -> None:
        """GENERAL_FAILURE unless the store recorded this model cache's hash for this token."""
        digest = self._digest(model_bytes)
        store = self._store()
        if self.faults.active(TOKEN_IGNORED):
            ok = store.knows_digest(digest)
        else:
            recorded = store.lookup(token)
            ok = recorded is not None and hmac.compare_digest(recorded, digest)
        if not ok:
            raise failure("the model cache does not match the hash recorded for this token", "cache.hash_mismatch")

"""Compilation caching (D23, D24): saving a prepared model to cache files and preparing one from them.

The device uses one model cache file (the model's structure, security sensitive) and one data cache file (the
constants); _cache_format describes both. Saving serializes the prepared model into memory, hashes the model
cache bytes from that buffer (never from the file), writes both files at their handles' offsets and records
{token -> hash} in the persistent store of _cache_store. Preparing from cache reads each file into memory once,
hashes that buffer, compares with the hash recorded for the token, and only then decodes the same buffer; the
model cache carries the data cache's hash, so a changed data cache is refused too. The decoded model goes
through the same validation and compilation as a model given to prepareModel, so nothing read from a file can
reach the executor unchecked.

Statuses: argument problems (handle counts, file descriptors per handle, token length) are INVALID_ARGUMENT at
launch; unusable files (access mode, not a regular file) GENERAL_FAILURE at launch; a cache that does not verify
or decode GENERAL_FAILURE through the callback; a passed deadline MISSED_DEADLINE_PERSISTENT. Saving never fails
preparation: any problem means nothing is saved.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import TYPE_CHECKING

from driver_under_test import _cache_files
from driver_under_test._cache_files import CacheFile, check_handles, close_all, duplicate, write_all
from driver_under_test._cache_format import HEADER_SIZE, CacheFormatError, SavedSubgraph, deserialize, serialize
from driver_under_test._cache_store import TokenStore
from driver_under_test.errors import DriverError, as_driver_error, failure, invalid
from driver_under_test.faults import define
from driver_under_test.validation import validate_model
from harness.hal import (
    BYTE_SIZE_OF_CACHE_TOKEN,
    CacheHandle,
    Deadline,
    ErrorStatus,
    Operation,
    PreparedModelCallback,
    Subgraph,
)

if TYPE_CHECKING:
    from driver_under_test.device import DriverDevice
    from driver_under_test.prepared_model import DriverPreparedModel

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
# before reading (D26). The data cache is bounded by the constants a model may hold.
MAX_MODEL_CACHE_BYTES = 64 << 20
_DEADLINE_STATUSES = (ErrorStatus.MISSED_DEADLINE_PERSISTENT, ErrorStatus.MISSED_DEADLINE_TRANSIENT)


def files_needed(device: DriverDevice) -> tuple[int, int]:
    """(model cache files, data cache files) the device uses: one of each, none when caching is off."""
    if not device.options.caching:
        return 0, 0
    return MODEL_CACHE_FILES, DATA_CACHE_FILES


def _store(device: DriverDevice) -> TokenStore:
    return TokenStore(device.options.cache_dir, device.options.version)


def _digest(device: DriverDevice, model_cache: bytes) -> bytes:
    """The hash the store keeps of a model cache."""
    if device.faults.active(HASH_CHECKS_PREFIX):
        model_cache = model_cache[:HEADER_SIZE]
    return hashlib.sha256(model_cache).digest()


def _token(token: object) -> bytes:
    if not isinstance(token, bytes | bytearray | memoryview):
        raise invalid("the cache token is not bytes", "cache.token")
    token = bytes(token)
    if len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
        raise invalid(f"the cache token has {len(token)} bytes, not {BYTE_SIZE_OF_CACHE_TOKEN}", "cache.token")
    return token


def _checked_files(
    device: DriverDevice, model_cache: object, data_cache: object, *, writable: bool
) -> tuple[list[CacheFile], list[CacheFile]]:
    n_model, n_data = files_needed(device)
    return (
        check_handles(model_cache, n_model, "model", writable=writable),
        check_handles(data_cache, n_data, "data", writable=writable),
    )


# --- saving -----------------------------------------------------------------------------------------------


def _saved_subgraphs(prepared: DriverPreparedModel) -> list[SavedSubgraph]:
    """The compiled subgraphs as the cache keeps them: the constants are the values compiled, not the pools'."""
    saved = []
    for compiled in prepared._subgraphs:
        operations = [Operation(op.type, list(op.inputs), list(op.outputs)) for op in compiled.operations]
        subgraph = Subgraph(list(compiled.operands), operations, list(compiled.inputs), list(compiled.outputs))
        saved.append(SavedSubgraph(subgraph, {i: t.data for i, t in compiled.constants.items()}))
    return saved


def save_quietly(
    device: DriverDevice,
    prepared: DriverPreparedModel,
    model_cache: list[CacheHandle],
    data_cache: list[CacheHandle],
    token: bytes,
) -> None:
    """Write the prepared model to the cache files, never failing preparation: on any problem nothing is saved."""
    try:
        _save(device, prepared, model_cache, data_cache, token)
    except Exception:  # a cache that cannot be written only costs the client a later cache miss
        return


def _save(
    device: DriverDevice,
    prepared: DriverPreparedModel,
    model_cache: list[CacheHandle],
    data_cache: list[CacheHandle],
    token: bytes,
) -> None:
    if not device.options.caching:
        return
    token = _token(token)
    model_files, data_files = _checked_files(device, model_cache, data_cache, writable=True)
    model = prepared._model
    model_bytes, data_bytes = serialize(
        _saved_subgraphs(prepared), bool(model.relax_computation_float32_to_float16), model.extension_name_to_prefix
    )
    # The hash comes from this buffer, before any file is touched: what the files hold later cannot change it.
    digest = _digest(device, model_bytes)
    store = _store(device)
    # Forgetting first means an unusable store saves nothing, and half-written files never match an old record.
    store.forget(token)
    write_all(model_files[0], model_bytes, "model cache")
    write_all(data_files[0], data_bytes, "data cache")
    store.record(token, digest)


# --- preparing from cache ---------------------------------------------------------------------------------


def prepare_from_cache(
    device: DriverDevice,
    deadline: Deadline,
    model_cache: list[CacheHandle],
    data_cache: list[CacheHandle],
    token: bytes,
    callback: PreparedModelCallback,
) -> ErrorStatus:
    """Rebuild a prepared model from cache files: launch checks here, reading and verifying in a worker."""
    try:
        if not device.options.caching:
            raise failure("compilation caching is off on this device", "cache.unsupported")
        token = _token(token)
        model_files, data_files = _checked_files(device, model_cache, data_cache, writable=False)
        # The worker owns duplicates: the client may close its descriptors once this call returns.
        files = duplicate([*model_files, *data_files])
    except Exception as e:
        status = as_driver_error(e).status
        callback.notify(status, None)
        return status
    device.workers.submit(_prepare_worker, device, deadline, files, token, callback)
    return ErrorStatus.NONE


def _prepare_worker(
    device: DriverDevice, deadline: Deadline, files: list[CacheFile], token: bytes, callback: PreparedModelCallback
) -> None:
    try:
        prepared = _rebuild(device, deadline, files[0], files[1], token)
    except Exception as e:
        status = as_driver_error(e).status
        # Whatever went wrong with the files, the model or its validation, the cache is unusable.
        callback.notify(status if status in _DEADLINE_STATUSES else ErrorStatus.GENERAL_FAILURE, None)
        return
    finally:
        close_all(files)
    callback.notify(ErrorStatus.NONE, prepared)


def _check_deadline(deadline: Deadline) -> None:
    if deadline is not None and time.monotonic_ns() > deadline:
        raise DriverError(ErrorStatus.MISSED_DEADLINE_PERSISTENT, "deadline passed before preparation", "qos.deadline")


def _verify(device: DriverDevice, token: bytes, model_bytes: bytes) -> None:
    """GENERAL_FAILURE unless the store recorded this model cache's hash for this token."""
    digest = _digest(device, model_bytes)
    store = _store(device)
    if device.faults.active(TOKEN_IGNORED):
        ok = store.knows_digest(digest)
    else:
        recorded = store.lookup(token)
        ok = recorded is not None and hmac.compare_digest(recorded, digest)
    if not ok:
        raise failure("the model cache does not match the hash recorded for this token", "cache.hash_mismatch")


def _rebuild(
    device: DriverDevice, deadline: Deadline, model_file: CacheFile, data_file: CacheFile, token: bytes
) -> DriverPreparedModel:
    _check_deadline(deadline)
    data_limit = HEADER_SIZE + device.options.limits.max_total_constant_bytes
    # Each file is read into memory once; everything after works on those bytes only (no TOCTOU window).
    model_bytes = _cache_files.read_all(model_file, MAX_MODEL_CACHE_BYTES, "model cache")
    data_bytes = _cache_files.read_all(data_file, data_limit, "data cache")
    _verify(device, token, model_bytes)
    if device.faults.active(CHECKED_ON_FILE):
        model_bytes = _cache_files.read_all(model_file, MAX_MODEL_CACHE_BYTES, "model cache")
    try:
        model = deserialize(model_bytes, data_bytes)
    except CacheFormatError as e:
        raise failure(f"the cache does not decode: {e}", "cache.format") from None
    validate_model(model, device.options.limits, device.faults)
    return device.compile(model, deadline)

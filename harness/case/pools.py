"""Memory pools in the case format: {"kind", "size", ...} <-> new zero-filled harness.hal.memory handles."""

from __future__ import annotations

import functools
from collections.abc import Callable

from harness.hal.memory import (
    HWB_FORMAT_R8G8B8A8_UNORM,
    Memory,
    MemoryKind,
    create_ashmem,
    create_hardware_buffer,
    create_hardware_buffer_blob,
    create_mmap_fd,
)


def _ashmem(d: dict) -> Memory:
    return create_ashmem(int(d["size"]))


def _mmap_fd(d: dict) -> Memory:
    return create_mmap_fd(int(d["size"]), offset=int(d.get("offset", 0)))


def _header(d: dict) -> dict[str, int | bytes] | None:
    """Header fields a malformed descriptor writes differently ({"magic": str in latin-1, others: int})."""
    raw = d.get("header")
    if not raw:
        return None
    return {k: v.encode("latin-1") if k == "magic" else int(v) for k, v in raw.items()}


def _blob(d: dict) -> Memory:
    return create_hardware_buffer_blob(
        int(d["size"]), usage=int(d.get("usage", 0)), decodable=bool(d.get("decodable", True)), header=_header(d)
    )


def _hardware_buffer(d: dict) -> Memory:
    if "width" not in d:
        # Only a size is known: a one-row RGBA image of that many bytes.
        size = int(d["size"])
        if size % 4:
            raise ValueError(f"hardware_buffer pool of {size} bytes needs width/height (not a multiple of 4)")
        return create_hardware_buffer(size // 4, 1, 1, usage=int(d.get("usage", 0)), header=_header(d))
    return create_hardware_buffer(
        int(d["width"]),
        int(d.get("height", 1)),
        int(d.get("layers", 1)),
        format=int(d.get("format", HWB_FORMAT_R8G8B8A8_UNORM)),
        usage=int(d.get("usage", 0)),
        decodable=bool(d.get("decodable", True)),
        header=_header(d),
    )


_CREATORS = {
    MemoryKind.ASHMEM: _ashmem,
    MemoryKind.MMAP_FD: _mmap_fd,
    MemoryKind.HARDWARE_BUFFER_BLOB: _blob,
    MemoryKind.HARDWARE_BUFFER: _hardware_buffer,
}


# The kinds whose memory's offset and size the description alone gives.
_DEFERRABLE = frozenset({MemoryKind.ASHMEM.value, MemoryKind.MMAP_FD.value})


def pool_from_json(d: dict) -> Memory:
    """A new zero-filled memory as a pool description asks ({"kind", "size"}, plus kind-specific keys)."""
    try:
        kind = MemoryKind(d["kind"])
    except (KeyError, ValueError):
        raise ValueError(f"pool {d!r} has no valid kind (one of {[k.value for k in MemoryKind]})") from None
    return _CREATORS[kind](d)


def deferred_pool_from_json(d: dict, fill: Callable[[Memory], None]) -> Memory:
    """pool_from_json(d) with `fill(memory)` done to it, made when first used (Memory.deferred) for the kinds
    whose offset the description gives (ashmem, mmap_fd); other kinds are made at once."""
    kind = d.get("kind")
    if kind not in _DEFERRABLE:
        return _filled(d, fill)
    return Memory.deferred(kind, int(d.get("offset", 0)), int(d["size"]), functools.partial(_filled, d, fill))


def _filled(d: dict, fill: Callable[[Memory], None]) -> Memory:
    memory = pool_from_json(d)
    try:
        fill(memory)
    except BaseException:
        memory.close()
        raise
    return memory


def pool_to_json(memory: Memory) -> dict:
    """The pool description that pool_from_json turns into an equivalent memory."""
    d: dict = {"kind": memory.kind.value, "size": memory.size}
    if memory.kind == MemoryKind.MMAP_FD and memory.offset:
        d["offset"] = memory.offset
    desc = memory.hardware_buffer
    if desc is not None:
        if memory.kind == MemoryKind.HARDWARE_BUFFER:
            d.update(width=desc.width, height=desc.height, layers=desc.layers, format=desc.format)
        if desc.usage:
            d["usage"] = desc.usage
        if not desc.decodable:
            d["decodable"] = False
        if desc.header:
            d["header"] = {k: v.decode("latin-1") if isinstance(v, bytes) else v for k, v in desc.header}
    return d

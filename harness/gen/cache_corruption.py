"""Corrupted compilation caches (REQUIREMENTS D23, D24): drawn as JSON operations, applied to the files a driver
saved, and classified by what a driver must answer for them.

A corruption is {"kind": ..., "ops": [op, ...], "save": [op, ...]}. `ops` change what prepareModelFromCache gets:
file contents (bit flips, truncation, extension, swapped byte ranges, files swapped within the cache or taken from
another model's cache), handles (wrong counts, descriptors per handle, access modes, offsets, file positions), the
token, or a concurrent rewrite while the driver reads. `save` breaks the handles given to prepareModel when the
cache is written (kind "save"). Operations name files by index and positions by number; both are taken modulo
the actual file count and length when applied, so an operation drawn without knowing the driver always applies.

`apply_corruption` turns the saved files into a `Retrieval` (contents, offsets, access modes, token) and
`classify` decides, from those bytes alone, what the driver must answer: a model cache whose bytes from the
handle's offset differ from what the driver wrote, or another token, must be refused; bad handles must be refused;
a changed data cache may be refused or give wrong outputs; an untouched cache must give back the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from harness.gen.source import Source
from harness.hal import BYTE_SIZE_OF_CACHE_TOKEN

__all__ = [
    "EXPECTATIONS",
    "CacheCorruptionConfig",
    "CacheFile",
    "Classification",
    "HandleSpec",
    "Retrieval",
    "SavedCache",
    "apply_corruption",
    "classify",
    "effective_content",
    "generate_corruption",
    "save_handles",
]

MODEL, DATA = "model", "data"
SIDES = (MODEL, DATA)
READ_WRITE, READ_ONLY, WRITE_ONLY = "rw", "ro", "wo"

# What a driver must answer for a retrieval (classify's verdict on the bytes and handles).
REFUSE_HANDLES = "refuse_handles"  # bad handles or token: INVALID_ARGUMENT or GENERAL_FAILURE, no model
REFUSE_MODEL = "refuse_model"  # model cache changed or another token: refused, no model
RACE = "race"  # files rewritten while read: refused, or the original model
DATA_CHANGED = "data_changed"  # data cache changed: NONE or GENERAL_FAILURE; outputs may be wrong
EITHER = "either"  # the client broke a HAL convention harmlessly (read-only files): refused, or the original model
ROUND_TRIP = "round_trip"  # untouched: the original model
EXPECTATIONS = (REFUSE_HANDLES, REFUSE_MODEL, RACE, DATA_CHANGED, EITHER, ROUND_TRIP)

# What precedes a cache that starts at a non-zero offset: bytes unlike a cache's own.
_FILLER = bytes((0xA5 + i) & 0xFF for i in range(256))
# Files per side an operation may name (taken modulo the actual count).
_FILE_INDEXES = 4


@dataclass(frozen=True)
class CacheCorruptionConfig:
    """What generate_corruption may draw; kinds are drawn uniformly (repeat one to weigh it)."""

    kinds: tuple[str, ...] = (
        "untouched",
        "untouched",
        "untouched",
        "model",
        "model",
        "model",
        "swap",
        "token",
        "data",
        "handles",
        "handles",
        "handles",
        "other",
        "other",
        "race",
        "save",
    )
    max_ops: int = 3  # tampering operations per case
    max_extension: int = 64  # bytes appended by one extension
    max_offset: int = 4096  # where a file may start inside its descriptor's file
    max_swap: int = 64  # bytes in one swapped range


@dataclass(frozen=True)
class SavedCache:
    """What a driver wrote: each file's bytes from its handle's offset, and the token it was written under."""

    model: tuple[bytes, ...]
    data: tuple[bytes, ...]
    token: bytes

    def side(self, name: str) -> tuple[bytes, ...]:
        """The files of one side ("model" or "data")."""
        return self.model if name == MODEL else self.data


@dataclass
class CacheFile:
    """One file handed to the driver: the whole file's bytes and how its handle presents it."""

    content: bytes
    offset: int = 0  # the handle's offset: where the cache starts in the file
    seek: int = 0  # the descriptor's file position (the HAL lets it be anything)
    access: str = READ_WRITE  # how the descriptor is opened: "rw", "ro" or "wo"
    fds: int = 1  # descriptors in the handle (the HAL wants exactly one)


@dataclass
class Retrieval:
    """Everything prepareModelFromCache is given, after the corruption."""

    model: list[CacheFile]
    data: list[CacheFile]
    token: bytes
    race: bool = False  # rewrite the files with another model's cache while the driver reads them
    notes: list[str] = field(default_factory=list)  # what each operation did, for the verdict's details

    def side(self, name: str) -> list[CacheFile]:
        """The files of one side ("model" or "data")."""
        return self.model if name == MODEL else self.data


@dataclass(frozen=True)
class Classification:
    """What the driver must answer (one of EXPECTATIONS) and why."""

    expect: str
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class HandleSpec:
    """One handle given to prepareModel when saving: which file (index per side), its access mode, descriptors."""

    file: int
    access: str = READ_WRITE
    fds: int = 1


# --- generation -----------------------------------------------------------------------------------------------


def _file(src: Source, side: str | None = None) -> dict:
    return {"side": side or src.choice(SIDES), "file": src.integer(0, _FILE_INDEXES - 1)}


def _tamper(src: Source, cfg: CacheCorruptionConfig, side: str) -> dict:
    """One operation that changes a file's bytes as the driver sees them (or may leave them: swapped equal ranges)."""
    at = _file(src, side)
    op = src.choice(("flip_bit", "flip_bit", "truncate", "extend", "swap_ranges", "misplace"))
    if op == "flip_bit":
        return {"op": op, **at, "bit": src.integer(0, (1 << 20) - 1)}
    if op == "truncate":
        return {"op": op, **at, "keep": src.integer(0, (1 << 16) - 1)}
    if op == "extend":
        n = src.integer(1, cfg.max_extension)
        data = src.bytes(n)
        return {"op": op, **at, "data": (data + bytes(n - len(data))).hex()}
    if op == "swap_ranges":
        a, b = src.integer(0, (1 << 16) - 1), src.integer(0, (1 << 16) - 1)
        return {"op": op, **at, "a": a, "b": b, "length": src.integer(1, cfg.max_swap)}
    # The file starts at one offset and its handle names another.
    offset = src.integer(0, cfg.max_offset)
    shift = src.choice((-1, 1)) * src.integer(1, 64)
    return {"op": "place_at", **at, "offset": offset, "shift": max(shift, -offset) or 1}


def _harmless(src: Source, cfg: CacheCorruptionConfig) -> dict:
    """One operation that changes nothing the driver may depend on: the file position, the file's start."""
    at = _file(src)
    if src.boolean():
        return {"op": "seek", **at, "position": src.integer(1, cfg.max_offset)}
    return {"op": "place_at", **at, "offset": src.integer(1, cfg.max_offset), "shift": 0}


def _bad_handle(src: Source, cfg: CacheCorruptionConfig) -> dict:
    op = src.choice(("file_count", "file_count", "handle_fds", "access", "token_length", "handle_offset"))
    if op == "file_count":
        return {"op": op, "side": src.choice(SIDES), "delta": src.choice((-1, 1, 2))}
    if op == "handle_fds":
        return {"op": op, **_file(src), "count": src.choice((0, 2))}
    if op == "access":
        return {"op": op, **_file(src), "mode": WRITE_ONLY}
    if op == "token_length":
        return {"op": op, "length": src.choice((0, 31, 33, 64))}
    return {"op": op, **_file(src), "offset": -src.integer(1, cfg.max_offset)}


def _kind_ops(src: Source, cfg: CacheCorruptionConfig, kind: str) -> tuple[list[dict], list[dict]]:
    """(retrieval ops, save ops) for one kind."""
    extra = [_harmless(src, cfg) for _ in range(src.integer(0, 1))]
    if kind == "untouched":
        ops = extra
        if src.integer(0, 7) == 0:
            ops.append({"op": "access", **_file(src), "mode": READ_ONLY})
        return ops, []
    if kind in (MODEL, DATA):
        return [*extra, *(_tamper(src, cfg, kind) for _ in range(src.integer(1, cfg.max_ops)))], []
    if kind == "swap":
        return [{"op": "swap_files", "a": [MODEL, src.integer(0, 3)], "b": [DATA, src.integer(0, 3)]}], []
    if kind == "token":
        return [*extra, {"op": "flip_token_bit", "bit": src.integer(0, 8 * BYTE_SIZE_OF_CACHE_TOKEN - 1)}], []
    if kind == "handles":
        # Tampering first: it may move a file's offset, which must not undo a bad handle offset.
        ops = [_tamper(src, cfg, src.choice(SIDES))] if src.boolean() else []
        return [*ops, _bad_handle(src, cfg)], []
    if kind == "other":
        if src.boolean():
            return [{"op": "use_other_cache"}], []
        side = src.choice(SIDES)
        return [{"op": "replace_file", **_file(src, side), "from": src.integer(0, _FILE_INDEXES - 1)}], []
    if kind == "race":
        return [{"op": "rewrite_during_retrieval"}], []
    if kind == "save":
        op = src.choice(("save_count", "save_access", "save_fds"))
        if op == "save_count":
            return [], [{"op": op, "side": src.choice(SIDES), "delta": src.choice((-1, 1))}]
        if op == "save_access":
            return [], [{"op": op, **_file(src), "mode": READ_ONLY}]
        return [], [{"op": op, **_file(src), "count": src.choice((0, 2))}]
    raise ValueError(f"unknown cache corruption kind {kind!r}")


def generate_corruption(source: Source, config: CacheCorruptionConfig | None = None) -> dict:
    """One corruption as JSON: {"kind", "ops", "save"} (kinds: untouched, model, data, swap, token, handles,
    other, race, save)."""
    cfg = config or CacheCorruptionConfig()
    kind = source.choice(cfg.kinds)
    ops, save = _kind_ops(source, cfg, kind)
    return {"kind": kind, "ops": ops, "save": save}


def needs_other(corruption: dict) -> bool:
    """True if applying the corruption needs a second model's cache."""
    return any(op["op"] in _OTHER_OPS for op in corruption.get("ops", ()))


# --- application ----------------------------------------------------------------------------------------------


def _pick(files: list[CacheFile], index: int) -> CacheFile | None:
    return files[index % len(files)] if files else None


def _set_body(f: CacheFile, body: bytes) -> None:
    """Replace the bytes from the handle's offset on, keeping what comes before it."""
    f.content = f.content[: max(f.offset, 0)] + body


def _body(f: CacheFile) -> bytes:
    return f.content[max(f.offset, 0) :]


def _flip_bit(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    f = _pick(r.side(op["side"]), op["file"])
    body = bytearray(_body(f)) if f is not None else bytearray()
    if not body:
        return
    bit = op["bit"] % (8 * len(body))
    body[bit // 8] ^= 1 << (bit % 8)
    _set_body(f, bytes(body))
    r.notes.append(f"flipped bit {bit} of {op['side']} file {op['file']}")


def _truncate(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    f = _pick(r.side(op["side"]), op["file"])
    body = _body(f) if f is not None else b""
    if not body:
        return
    keep = op["keep"] % len(body)
    _set_body(f, body[:keep])
    r.notes.append(f"truncated {op['side']} file {op['file']} to {keep} of {len(body)} bytes")


def _extend(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    f = _pick(r.side(op["side"]), op["file"])
    if f is None:
        return
    data = bytes.fromhex(op["data"])
    f.content += data
    r.notes.append(f"appended {len(data)} bytes to {op['side']} file {op['file']}")


def _swap_ranges(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    f = _pick(r.side(op["side"]), op["file"])
    body = bytearray(_body(f)) if f is not None else bytearray()
    if len(body) < 2:
        return
    length = max(1, min(op["length"], len(body) // 2))
    a, b = op["a"] % (len(body) - length + 1), op["b"] % (len(body) - length + 1)
    first, second = bytes(body[a : a + length]), bytes(body[b : b + length])
    body[a : a + length] = second
    body[b : b + length] = first
    _set_body(f, bytes(body))
    r.notes.append(f"swapped bytes [{a}, {a + length}) and [{b}, {b + length}) of {op['side']} file {op['file']}")


def _place_at(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    f = _pick(r.side(op["side"]), op["file"])
    if f is None:
        return
    offset = op["offset"]
    # Filler that differs from a cache's own bytes: a handle pointing into it shows the driver something else.
    filler = (_FILLER * (offset // len(_FILLER) + 1))[:offset]
    body = _body(f)
    f.content = filler + body
    f.offset = max(0, offset + op["shift"])
    r.notes.append(f"{op['side']} file {op['file']} starts at {offset}, its handle says {f.offset}")


def _seek(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    f = _pick(r.side(op["side"]), op["file"])
    if f is not None:
        f.seek = op["position"]
        r.notes.append(f"{op['side']} file {op['file']} descriptor positioned at {f.seek}")


def _swap_files(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    (side_a, ia), (side_b, ib) = op["a"], op["b"]
    files_a, files_b = r.side(side_a), r.side(side_b)
    if not files_a or not files_b:
        return
    ia, ib = ia % len(files_a), ib % len(files_b)
    files_a[ia], files_b[ib] = files_b[ib], files_a[ia]
    r.notes.append(f"swapped {side_a} file {ia} with {side_b} file {ib}")


def _replace_file(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    files = r.side(op["side"])
    theirs = other.side(op["side"]) if other is not None else ()
    if not files or not theirs:
        return
    i, j = op["file"] % len(files), op["from"] % len(theirs)
    files[i] = replace(files[i], content=files[i].content[: files[i].offset] + theirs[j])
    r.notes.append(f"{op['side']} file {i} replaced by the other model's {op['side']} file {j}")


def _use_other_cache(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    if other is None:
        return
    r.model = [CacheFile(b) for b in other.model]
    r.data = [CacheFile(b) for b in other.data]
    r.notes.append("every file replaced by the other model's cache, under this model's token")


def _file_count(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    files = r.side(op["side"])
    delta = op["delta"]
    if delta < 0:
        del files[delta:]
    else:
        files.extend(CacheFile(files[-1].content if files else b"") for _ in range(delta))
    r.notes.append(f"{len(files)} {op['side']} cache handles instead of {len(saved.side(op['side']))}")


def _handle_fds(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    f = _pick(r.side(op["side"]), op["file"])
    if f is not None:
        f.fds = op["count"]
        r.notes.append(f"{op['side']} handle {op['file']} holds {f.fds} descriptors")


def _access(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    f = _pick(r.side(op["side"]), op["file"])
    if f is not None:
        f.access = op["mode"]
        r.notes.append(f"{op['side']} file {op['file']} opened {op['mode']}")


def _handle_offset(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    f = _pick(r.side(op["side"]), op["file"])
    if f is not None:
        f.offset = op["offset"]
        r.notes.append(f"{op['side']} handle {op['file']} has offset {f.offset}")


def _flip_token_bit(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    token = bytearray(r.token)
    if token:
        bit = op["bit"] % (8 * len(token))
        token[bit // 8] ^= 1 << (bit % 8)
        r.token = bytes(token)
        r.notes.append(f"flipped bit {bit} of the token")


def _token_length(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    n = op["length"]
    r.token = (r.token * (n // max(len(r.token), 1) + 1))[:n]
    r.notes.append(f"a token of {n} bytes")


def _rewrite(r: Retrieval, op: dict, saved: SavedCache, other: SavedCache | None) -> None:
    if other is not None:
        r.race = True
        r.notes.append("the files are rewritten with the other model's cache while the driver reads them")


_Apply = Callable[[Retrieval, dict, SavedCache, "SavedCache | None"], None]
_OPS: dict[str, _Apply] = {
    "flip_bit": _flip_bit,
    "truncate": _truncate,
    "extend": _extend,
    "swap_ranges": _swap_ranges,
    "place_at": _place_at,
    "seek": _seek,
    "swap_files": _swap_files,
    "replace_file": _replace_file,
    "use_other_cache": _use_other_cache,
    "file_count": _file_count,
    "handle_fds": _handle_fds,
    "access": _access,
    "handle_offset": _handle_offset,
    "flip_token_bit": _flip_token_bit,
    "token_length": _token_length,
    "rewrite_during_retrieval": _rewrite,
}
_OTHER_OPS = frozenset({"replace_file", "use_other_cache", "rewrite_during_retrieval"})


def apply_corruption(corruption: dict, saved: SavedCache, other: SavedCache | None = None) -> Retrieval:
    """The files, handles and token prepareModelFromCache gets: the saved cache with the corruption's ops applied.

    Operations needing the other model's cache do nothing without one; an unknown operation is a ValueError.
    """
    r = Retrieval([CacheFile(b) for b in saved.model], [CacheFile(b) for b in saved.data], saved.token)
    for op in corruption.get("ops", ()):
        apply = _OPS.get(op.get("op"))
        if apply is None:
            raise ValueError(f"unknown cache corruption operation {op.get('op')!r}")
        apply(r, op, saved, other)
    return r


def effective_content(f: CacheFile) -> bytes | None:
    """The bytes a driver reads through the handle: the file from the handle's offset on (None: negative offset)."""
    return None if f.offset < 0 else f.content[f.offset :]


def classify(r: Retrieval, saved: SavedCache, needed: tuple[int, int]) -> Classification:
    """What the driver must answer for this retrieval, judged on the bytes and handles alone."""
    reasons: list[str] = []
    for name, count in zip(SIDES, needed):
        files = r.side(name)
        if len(files) != count:
            reasons.append(f"{len(files)} {name} cache handles, the driver needs {count}")
        for i, f in enumerate(files):
            if f.fds != 1:
                reasons.append(f"{name} handle {i} holds {f.fds} descriptors")
            if f.access == WRITE_ONLY:
                reasons.append(f"{name} file {i} is write-only")
            if f.offset < 0:
                reasons.append(f"{name} handle {i} has a negative offset")
    if len(r.token) != BYTE_SIZE_OF_CACHE_TOKEN:
        reasons.append(f"the token has {len(r.token)} bytes")
    if reasons:
        return Classification(REFUSE_HANDLES, tuple(reasons))
    if r.token != saved.token:
        reasons.append("the token differs from the one the cache was saved under")
    for i, (f, body) in enumerate(zip(r.model, saved.model)):
        if effective_content(f) != body:
            reasons.append(f"model cache file {i} differs from what the driver wrote")
    if reasons:
        return Classification(REFUSE_MODEL, tuple(reasons))
    if r.race:
        return Classification(RACE, ("the files are rewritten while the driver reads them",))
    changed = [i for i, (f, body) in enumerate(zip(r.data, saved.data)) if effective_content(f) != body]
    if changed:
        return Classification(DATA_CHANGED, tuple(f"data cache file {i} differs" for i in changed))
    read_only = [f"{n} file {i} is read-only" for n in SIDES for i, f in enumerate(r.side(n)) if f.access == READ_ONLY]
    if read_only:
        return Classification(EITHER, tuple(read_only))
    return Classification(ROUND_TRIP)


def save_handles(save_ops: Sequence[dict], needed: tuple[int, int]) -> dict[str, list[HandleSpec]]:
    """The handles prepareModel gets when saving: one per needed file, broken by the save ops.

    File indexes at or past the needed count are extra files the target creates empty.
    """
    handles = {name: [HandleSpec(i) for i in range(count)] for name, count in zip(SIDES, needed)}
    for op in save_ops:
        specs = handles[op["side"]]
        kind = op["op"]
        if kind == "save_count":
            if op["delta"] < 0:
                del specs[op["delta"] :]
            else:
                specs.extend(HandleSpec(len(specs) + k) for k in range(op["delta"]))
        elif kind not in ("save_access", "save_fds"):
            raise ValueError(f"unknown cache save operation {kind!r}")
        elif specs:
            i = op["file"] % len(specs)
            if kind == "save_access":
                specs[i] = replace(specs[i], access=op["mode"])
            else:
                specs[i] = replace(specs[i], fds=op["count"])
    return handles

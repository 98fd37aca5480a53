"""The cache target: compilation caches saved by prepareModel, corrupted, and read back by prepareModelFromCache.

A case is a generated model with a request and inputs, a 32-byte token and a corruption (harness.gen.
cache_corruption): the model is prepared with cache handles (memfds, as many as getNumberOfCacheFilesNeeded says),
the saved files are corrupted (bits, lengths, byte ranges, files swapped within the cache or with another model's,
handle counts, access modes, offsets, the token, a rewrite while the driver reads) and prepareModelFromCache is
judged on D23/D24: a changed model cache or another token never prepares; bad handles are refused; a changed data
cache never crashes or hangs; an untouched cache gives back a model whose outputs match the reference. A driver
that needs no cache files does not cache: prepareModelFromCache must then be GENERAL_FAILURE.

Cases are cheap because most of the work is kept per device across cases (`case.extras["reuse"]` says so): models
come from a fixed pool of generated models, each prepared and saved once under its token, its reference result
computed once. A case that fails on a reused save is run again on a fresh save; when that passes the driver was
right to refuse (it may forget a token after a tampered retrieval) and the case passes, so a saved finding
replays the same way on a fresh device.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.case import Case, Live, LiveRequest, close_model_pools, model_from_json
from harness.gen.cache_corruption import (
    DATA_CHANGED,
    EITHER,
    RACE,
    READ_ONLY,
    REFUSE_HANDLES,
    REFUSE_MODEL,
    ROUND_TRIP,
    WRITE_ONLY,
    CacheCorruptionConfig,
    Classification,
    Retrieval,
    SavedCache,
    apply_corruption,
    classify,
    generate_corruption,
    needs_other,
    save_handles,
)
from harness.gen.model import ModelConfig
from harness.gen.requests import RequestConfig
from harness.gen.source import GenerationRejected, Source
from harness.hal import (
    BYTE_SIZE_OF_CACHE_TOKEN,
    MAX_NUMBER_OF_CACHE_FILES,
    CacheHandle,
    Device,
    ErrorStatus,
    MeasureTiming,
    Model,
    PreparedModel,
    Request,
)
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.oracle.bias import judge_bias
from harness.oracle.exactness import exact_outputs
from harness.oracle.outputs import quantized_operations, reference_is_stable, unspecified_outputs
from harness.oracle.rules import (
    LAUNCH_MATCHES_CALLBACK,
    PREPARED_MODEL_IFF_NONE,
    STATUS_EXPECTED,
    Breach,
    judge_outputs,
    judge_supported_operations,
    judge_valid_preparation,
    verdict_of,
)
from harness.oracle.verdict import Verdict, define_rule
from harness.targets._common import (
    DEFAULT_PREFERENCE,
    DEFAULT_PRIORITY,
    DEFAULT_TIMEOUT_S,
    call,
    guarded,
    status_of,
    supported_operations,
)
from harness.targets.base import register_target
from harness.targets.reuse import CaseKeys, DeviceStates, ModelPool, PooledCase, draw_case, owned_copy

FILES_NEEDED_IN_RANGE = define_rule(
    "cache.files_needed_in_range",
    "getNumberOfCacheFilesNeeded answers NONE with at most 32 model cache and 32 data cache files",
)
UNSUPPORTED_CACHING_REFUSED = define_rule(
    "cache.unsupported_caching_refused",
    "a driver that needs no cache files does not cache: prepareModelFromCache is GENERAL_FAILURE, with no model",
)
BAD_HANDLES_REFUSED = define_rule(
    "cache.bad_handles_refused",
    "prepareModelFromCache with wrong handle counts, descriptors per handle, unusable access modes, negative "
    "offsets or a token of the wrong length fails with INVALID_ARGUMENT or GENERAL_FAILURE, with no model",
)
TAMPERED_MODEL_CACHE_REFUSED = define_rule(
    "cache.tampered_model_cache_refused",
    "a model cache that was modified, truncated, extended, misplaced or replaced by another model's, or presented "
    "with another token, never prepares: GENERAL_FAILURE or INVALID_ARGUMENT, with no model",
)
DATA_CORRUPTION_IS_HARMLESS = define_rule(
    "cache.data_corruption_is_harmless",
    "a corrupted data cache gives NONE or GENERAL_FAILURE; a model it gives executes without crash or hang "
    "(its outputs may be wrong)",
)
UNTOUCHED_CACHE_ROUND_TRIPS = define_rule(
    "cache.untouched_cache_round_trips",
    "an untouched cache prepares a model whose outputs match the reference (read-only files may also be refused)",
)
CONCURRENT_REWRITE_CANNOT_SWAP_MODEL = define_rule(
    "cache.concurrent_rewrite_cannot_swap_model",
    "a cache rewritten with another model's while the driver reads it is refused or gives the original model, "
    "never one that was not checked",
)
SAVING_PROBLEMS_NEVER_FAIL_PREPARATION = define_rule(
    "cache.saving_problems_never_fail_preparation",
    "prepareModel with bad cache handles (counts, descriptors, read-only files) still prepares the model; what it "
    "saved is refused or prepares without crash or hang",
)

REUSE_NOTE = (
    "models come from a fixed pool; each model's saved cache, request memories and reference result are kept per "
    "device across cases; a case failing on a kept save is run again on a fresh save"
)
# A race whose two caches have different data caches: judged like a corrupted data cache (no outputs compared).
RACE_DATA = "race_data"
_REFUSALS = frozenset({ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT})
_DATA_STATUSES = frozenset({ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE})
_ANY_STATUS = _REFUSALS | {ErrorStatus.NONE}
# Small models that execute quickly (a case runs the model prepared from the cache), control flow now and then.
CACHE_MODELS = ModelConfig(max_operations=2, max_elements=64, control_flow_probability=0.05)
RACE_MODELS = ModelConfig(
    max_operations=2, constant_probability=0.0, param_input_probability=1.0, omit_optional_probability=1.0
)
# Tokens the save-problem cases write under: a few fixed ones, so the driver's token store does not grow.
_SAVE_TOKENS = tuple(hashlib.sha256(b"nnfuzz cache save problem %d" % i).digest() for i in range(8))



def constant_free(case: PooledCase) -> bool:
    """True if no operand of the model (main or referenced) is a constant."""
    subgraphs = [case.model, *case.model.get("referenced", [])]
    return not any(str(o.get("lifetime", "")).startswith("CONSTANT") for g in subgraphs for o in g["operands"])


@dataclass
class ModelRunner:
    """One model on one device: its own case (model, request over shared memory, inputs, reference result).

    `check` runs the model prepared directly once and judges it against the reference (as the execution target
    does: random-graph criterion for quantized outputs, no judgement where the reference itself is unstable); its
    outputs become the baseline that `behaves` holds every model prepared from a cache to.
    """

    case: Case
    live: Live
    types: list[int]  # the main outputs' operand types
    ignore: set[int]  # outputs the HAL leaves unspecified
    quantized: int  # operations writing a quantized tensor (the random-graph criterion)
    all_supported: bool = True
    unsupported: bool = False
    finding: Breach | None = None  # what the model prepared without the cache got wrong, if anything
    checked: bool = False  # the model prepared without the cache has been run once
    baseline: list[np.ndarray] | None = None  # the outputs of the model prepared directly
    ill_conditioned: bool = False  # the reference moves under one-ULP nudges: judged against the baseline only

    @classmethod
    def build(cls, case: Case, device: Device) -> ModelRunner:
        """The runner of a case's model, request and inputs (support asked once, the reference run once)."""
        own = owned_copy(case)
        try:
            live = own.materialized()
            own.reference()
            status, flags = supported_operations(device, live.model)
        except BaseException:
            own.close()
            raise
        main = live.model.main
        types = [main.operands[i].type for i in main.output_indexes]
        runner = cls(own, live, types, unspecified_outputs(live.model), quantized_operations(live.model))
        runner.finding = judge_supported_operations(status, flags, len(main.operations))
        runner.all_supported = all(flags)
        return runner

    @property
    def model(self) -> Model:
        """The hal.Model."""
        return self.live.model

    @property
    def live_request(self) -> LiveRequest:
        """The request over the runner's shared memory."""
        assert self.live.request is not None, "a cache case has a request"
        return self.live.request

    @property
    def request(self) -> Request:
        """The hal.Request over the runner's shared memory."""
        return self.live_request.request

    def _execute(self, prepared: PreparedModel) -> tuple[Breach | None, list[np.ndarray | None]]:
        live = self.live_request
        live.rewind()
        status, _, _ = call("executeSynchronously", lambda: _sync_status(prepared, live.request))
        if status != ErrorStatus.NONE:
            title = f"executeSynchronously answered {status.name}, the reference NONE"
            return Breach(STATUS_EXPECTED, title, path="sync"), []
        return None, live.read_outputs([np.shape(e) for e in self.live.reference.outputs])  # type: ignore[union-attr]

    def _judge(self, actual: list[np.ndarray | None], expected: list[np.ndarray]) -> Breach | None:
        relaxed = self.model.relax_computation_float32_to_float16
        return judge_outputs("sync", actual, expected, self.types, relaxed, ignore=self.ignore,
                             quantized_operations=self.quantized, exact=exact_outputs(self.model))  # fmt: skip

    def check(self, prepared: PreparedModel) -> Breach | None:
        """Run the model prepared directly and judge it against the reference; keep its outputs as the baseline."""
        finding, actual = self._execute(prepared)
        if finding is not None:
            return finding
        self.baseline = [np.array(a, copy=True) for a in actual]
        reference = self.case.reference()
        finding = self._judge(actual, reference.outputs)
        if finding is None:
            skip = self.ignore | exact_outputs(self.model)
            finding = judge_bias("sync", self.live.model, self.live.inputs, reference.outputs, actual, skip)
        if finding is not None and finding.rule.startswith("accuracy.") and not reference_is_stable(
            self.live.model, self.live.inputs, reference
        ):
            # A FLOOR, a comparison or a threshold on an edge: no implementation can be judged on these outputs.
            self.ill_conditioned = True
            return None
        return finding

    def behaves(self, prepared: PreparedModel, rule: str) -> Breach | None:
        """A finding of `rule` unless the model prepared from a cache computes what the model saved computes."""
        finding, actual = self._execute(prepared)
        if finding is None:
            baseline = self.baseline if self.baseline is not None else self.case.reference().outputs
            finding = self._judge(actual, baseline)
        if finding is None:
            return None
        title = f"the model prepared from the cache: {finding.title.replace('the reference', 'the model saved')}"
        return Breach(rule, title, finding.details, path="sync")

    def close(self) -> None:
        """Release the request's memories and the model's pools."""
        self.case.close()


def _sync_status(prepared: PreparedModel, request: Request) -> tuple[ErrorStatus, list, object]:
    status, shapes, timing = prepared.execute_synchronously(request, MeasureTiming.NO, None, None)
    return status_of(status), list(shapes), timing


# --- opening cache files --------------------------------------------------------------------------------------


class _OpenFiles:
    """The memfds behind a set of cache handles, closed together."""

    def __init__(self) -> None:
        self.fds: list[int] = []

    def file(self, content: bytes) -> int:
        """A new memfd holding `content`."""
        fd = os.memfd_create("nnfuzz-cache", os.MFD_CLOEXEC)
        self.fds.append(fd)
        _write_all(fd, content)
        return fd

    def reopen(self, fd: int, access: str) -> int:
        """Another descriptor of the same file, opened read-only or write-only."""
        flags = os.O_RDONLY if access == READ_ONLY else os.O_WRONLY
        new = os.open(f"/proc/self/fd/{fd}", flags | os.O_CLOEXEC)
        self.fds.append(new)
        return new

    def dup(self, fd: int) -> int:
        """A duplicate descriptor."""
        new = os.dup(fd)
        self.fds.append(new)
        return new

    def close(self) -> None:
        """Close every descriptor opened here."""
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds.clear()


def _write_all(fd: int, data: bytes, at: int = 0) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, at)
        at += n
        view = view[n:]


def _handle(files: _OpenFiles, base: int, access: str, fds: int, offset: int = 0, seek: int = 0) -> CacheHandle:
    """A handle on the file `base`: through a descriptor of the given access mode, with `fds` descriptors."""
    fd = base if access not in (READ_ONLY, WRITE_ONLY) else files.reopen(base, access)
    os.lseek(fd, seek, os.SEEK_SET)
    descriptors = tuple([fd] + [files.dup(fd) for _ in range(fds - 1)]) if fds > 0 else ()
    return CacheHandle(descriptors, offset)


def _read_back(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


class _Rewriter:
    """A thread that keeps rewriting files between two contents while the driver reads them (a TOCTOU race).

    Each (fd, mine, theirs) alternates between the two contents; the contents are written before the file is cut
    to length, so a reader rarely sees an empty file.
    """

    def __init__(self, files: Sequence[tuple[int, bytes, bytes]]) -> None:
        self.files = files
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nnfuzz-cache-rewriter", daemon=True)

    def _run(self) -> None:
        turn = 0
        while not self._stop.is_set():
            for fd, mine, theirs in self.files:
                content = theirs if turn % 2 == 0 else mine
                _write_all(fd, content)
                os.ftruncate(fd, len(content))
            turn += 1

    def __enter__(self) -> _Rewriter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# --- the target ------------------------------------------------------------------------------------------------


@dataclass
class _Saved:
    """A model's cache as saved on one device under one token."""

    cache: SavedCache
    needed: tuple[int, int]
    reused: bool = False  # handed to a case after the one that saved it


@dataclass
class _Context:
    """What one case needs: the device, the files it needs, its model's runner."""

    device: Device
    needed: tuple[int, int]
    runner: ModelRunner
    model_key: str
    fresh: bool = False  # save anew instead of reusing a kept save


@dataclass
class CacheTarget:
    """Fuzz target for compilation caching (prepareModel with cache handles, prepareModelFromCache)."""

    name: str = "cache"
    model_config: ModelConfig = field(default_factory=lambda: CACHE_MODELS)
    request_config: RequestConfig = field(default_factory=lambda: RequestConfig(too_small_probability=0.0))
    corruption_config: CacheCorruptionConfig = field(default_factory=CacheCorruptionConfig)
    pool_size: int = 16  # models a case draws from (each saved once per device)
    fresh_probability: float = 0.0  # how often a case draws a new model from the source instead
    # Models of the race cases: without constants, so that two of them likely share their data cache and the
    # race can be judged on the outputs (see _race_pairs).
    race_model_config: ModelConfig = field(default_factory=lambda: RACE_MODELS)
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        self._pool = ModelPool(0xCAC4E, self.model_config, self.request_config)
        self._race_pool = ModelPool(0x2ACE, self.race_model_config, self.request_config, accept=constant_free)
        self._runners: DeviceStates[ModelRunner] = DeviceStates(limit=64)
        self._saves: DeviceStates[_Saved] = DeviceStates(limit=256)
        self._keys = CaseKeys()

    # --- decode ---

    def decode(self, source: Source) -> Case:
        """A corruption, a pooled (or fresh) model with its token, and another model when the corruption needs one."""
        corruption = generate_corruption(source, self.corruption_config)
        pool = self._race_pool if corruption["kind"] == "race" else self._pool
        fresh = self.fresh_probability > 0 and source.integer(0, 999) < self.fresh_probability * 1000
        if fresh and pool is self._pool:
            mine = draw_case(source, self.model_config, self.request_config)
            if mine is None:
                raise GenerationRejected("the fresh model's reference result is not NONE")
            k = -1
        else:
            k = source.integer(0, self.pool_size - 1)
            mine = pool.get(k)
        extras: dict = {"token": mine.token.hex(), "corruption": corruption, "reuse": REUSE_NOTE, "other": None}
        if needs_other(corruption):
            j = source.integer(0, self.pool_size - 2)
            other = pool.get(j if j < k or k < 0 else j + 1)
            extras["other"] = {"model": other.model, "token": other.token.hex()}
        if corruption["kind"] == "save":
            extras["saveToken"] = source.choice(_SAVE_TOKENS).hex()
        return mine.case(
            self.name,
            execution={"measure": False},
            expect={"kind": corruption["kind"]},
            extras=extras,
        )

    # --- run ---

    def run(self, case: Case, device: Device) -> Verdict:
        """Save the model's cache (or reuse the save), corrupt it, prepare from it and judge the answer."""
        verdict = guarded(self.name, lambda: self._run(case, device, fresh=False))
        if verdict.ok or not (verdict.extras.get("reused") and verdict.extras.get("refused")):
            return verdict
        # An untouched cache refused on a kept save: the driver may have forgotten the token since (after a
        # tampered retrieval, say). Judge a fresh save instead.
        again = guarded(self.name, lambda: self._run(case, device, fresh=True))
        again.extras["rerun"] = "failed on a kept save, judged on a fresh save"
        return again

    def _run(self, case: Case, device: Device, fresh: bool) -> Verdict:
        status, n_model, n_data = call("getNumberOfCacheFilesNeeded", lambda: _files_needed(device))
        if status != ErrorStatus.NONE or not (
            0 <= n_model <= MAX_NUMBER_OF_CACHE_FILES and 0 <= n_data <= MAX_NUMBER_OF_CACHE_FILES
        ):
            title = f"getNumberOfCacheFilesNeeded answered {status.name}, {n_model} model and {n_data} data files"
            return verdict_of([Breach(FILES_NEEDED_IN_RANGE, title)], self.name)
        if n_model == 0 and n_data == 0:
            return self._unsupported(case, device)
        ctx = self._context(case, device, (n_model, n_data), fresh)
        corruption = case.extras.get("corruption", {})
        token = bytes.fromhex(case.extras["token"])
        saved = self._saved(ctx, ctx.model_key, token, ctx.runner)
        if not isinstance(saved, _Saved):
            return self._no_save(saved, ctx)
        if corruption.get("kind") == "save":
            return self._save_problem(case, ctx, corruption)
        other = None
        if case.extras.get("other") and needs_other(corruption):
            other = self._other(ctx, case.extras["other"])
            if not isinstance(other, _Saved):
                return self._no_save(other, ctx)
        retrieval = apply_corruption(corruption, saved.cache, other.cache if other else None)
        classification = classify(retrieval, saved.cache, ctx.needed)
        expect = classification.expect
        if retrieval.race and other is not None and other.cache.data != saved.cache.data:
            expect = RACE_DATA
        finding, refused = self._retrieve(ctx, retrieval, classification, expect, other)
        extras = {"expect": expect, "reused": saved.reused or bool(other and other.reused)}
        if finding is not None:
            extras["corruption"] = list(retrieval.notes)
            extras["why"] = list(classification.reasons)
            extras["refused"] = refused and expect == ROUND_TRIP
            if retrieval.race:
                extras["race"] = "a race: a replay reproduces it only some of the time"
        return verdict_of([finding] if finding else [], self.name, **extras)

    def _no_save(self, outcome: Breach | None, ctx: _Context) -> Verdict:
        """The verdict when a model could not be saved: unsupported (None) or the finding that stopped it."""
        if outcome is None:
            return verdict_of([], self.name, unsupported=True)
        return verdict_of([outcome], self.name)

    def _context(self, case: Case, device: Device, needed: tuple[int, int], fresh: bool) -> _Context:
        key = self._keys.key(case.model, case.request, case.inputs)
        runner = self._runners.get(device, key)
        if runner is None or fresh:
            runner = self._runners.put(device, key, ModelRunner.build(case, device))
        return _Context(device, needed, runner, key, fresh)

    def _other(self, ctx: _Context, other: dict) -> _Saved | Breach | None:
        """The other model's save (its model prepared and saved under its own token)."""
        key = self._keys.key(other["model"])
        token = bytes.fromhex(other["token"])
        kept = None if ctx.fresh else self._saves.get(ctx.device, (key, token, ctx.needed))
        if kept is not None:
            kept.reused = True
            return kept
        source = _OtherModel(model_from_json(other["model"]))
        try:
            return self._saved(ctx, key, token, source)
        finally:
            source.close()

    def _saved(
        self, ctx: _Context, key: str, token: bytes, source: ModelRunner | _OtherModel
    ) -> _Saved | Breach | None:
        """The kept save of a model under a token, or a new one; a finding if preparing it fails, None if the
        driver does not support the model."""
        save_key = (key, token, ctx.needed)
        if not ctx.fresh:
            kept = self._saves.get(ctx.device, save_key)
            if kept is not None:
                kept.reused = True
                return kept
        if source.finding is not None:
            return source.finding
        if source.unsupported:
            return None
        result = self._save(ctx, source, token)
        if isinstance(result, _Saved):
            self._saves.put(ctx.device, save_key, result)
        return result

    def _save(self, ctx: _Context, source: ModelRunner | _OtherModel, token: bytes) -> _Saved | Breach | None:
        """Prepare the model with cache handles and read back what the driver wrote."""
        if isinstance(source, _OtherModel):
            status, flags = supported_operations(ctx.device, source.model)
            source.finding = judge_supported_operations(status, flags, len(source.model.main.operations))
            if source.finding is not None:
                return source.finding
            source.all_supported = all(flags)
        files = _OpenFiles()
        try:
            bases = {name: [files.file(b"") for _ in range(n)] for name, n in zip(("model", "data"), ctx.needed)}
            handles = {name: [_handle(files, fd, "rw", 1) for fd in fds] for name, fds in bases.items()}
            launch, status, prepared = self._prepare(ctx.device, source.model, handles["model"], handles["data"], token)
            finding, unsupported = judge_valid_preparation(launch, status, prepared, source.all_supported)
            if unsupported:
                source.unsupported = True
                return None
            if finding is not None:
                return finding
            if isinstance(source, ModelRunner) and not source.checked:
                # Outputs of the model prepared directly: a cache rule is judged only where these are right.
                source.checked = True
                source.finding = source.check(prepared)
                if source.finding is not None:
                    return source.finding
            cache = SavedCache(
                tuple(_read_back(fd) for fd in bases["model"]), tuple(_read_back(fd) for fd in bases["data"]), token
            )
            return _Saved(cache, ctx.needed)
        finally:
            files.close()

    def _prepare(
        self, device: Device, model: Model, model_cache: list[CacheHandle], data_cache: list[CacheHandle], token: bytes
    ) -> tuple[ErrorStatus, ErrorStatus, PreparedModel | None]:
        callback = WaitablePreparedModelCallback()
        launch = call(
            "prepareModel",
            lambda: status_of(
                device.prepare_model(
                    model, DEFAULT_PREFERENCE, DEFAULT_PRIORITY, None, model_cache, data_cache, token, callback
                )
            ),
        )
        status, prepared = call("prepareModel callback", callback.result, self.timeout_s)
        return launch, status_of(status), prepared

    def _from_cache(
        self, device: Device, model_cache: list[CacheHandle], data_cache: list[CacheHandle], token: bytes
    ) -> tuple[ErrorStatus, ErrorStatus, PreparedModel | None]:
        callback = WaitablePreparedModelCallback()
        launch = call(
            "prepareModelFromCache",
            lambda: status_of(device.prepare_model_from_cache(None, model_cache, data_cache, token, callback)),
        )
        status, prepared = call("prepareModelFromCache callback", callback.result, self.timeout_s)
        return launch, status_of(status), prepared

    def _retrieve(
        self, ctx: _Context, r: Retrieval, classification: Classification, expect: str, other: _Saved | None
    ) -> tuple[Breach | None, bool]:
        """prepareModelFromCache on the retrieval's files (rewritten meanwhile for a race); (finding, refused)."""
        files = _OpenFiles()
        try:
            bases: dict[str, list[int]] = {"model": [], "data": []}
            handles: dict[str, list[CacheHandle]] = {"model": [], "data": []}
            for name in ("model", "data"):
                for f in r.side(name):
                    base = files.file(f.content) if f.fds else -1
                    bases[name].append(base)
                    if f.fds:
                        handles[name].append(_handle(files, base, f.access, f.fds, f.offset, f.seek))
                    else:
                        handles[name].append(CacheHandle((), f.offset))
            if r.race and other is not None:
                pairs = _race_pairs(r, bases, other.cache, data_too=expect == RACE_DATA)
                with _Rewriter(pairs):
                    answer = self._from_cache(ctx.device, handles["model"], handles["data"], r.token)
            else:
                answer = self._from_cache(ctx.device, handles["model"], handles["data"], r.token)
        finally:
            files.close()
        return self._judge(ctx, classification, expect, *answer), answer[2] is None

    def _judge(
        self,
        ctx: _Context,
        classification: Classification,
        expect: str,
        launch: ErrorStatus,
        status: ErrorStatus,
        prepared: PreparedModel | None,
    ) -> Breach | None:
        """The finding of the answer to a retrieval the driver must treat as `expect`, if it is wrong."""
        finding = _consistent("prepareModelFromCache", launch, status, prepared)
        if finding is not None:
            return finding
        why = "; ".join(classification.reasons)
        answered = f"prepareModelFromCache answered {status.name} (launch {launch.name})"
        if expect in (REFUSE_HANDLES, REFUSE_MODEL):
            rule = BAD_HANDLES_REFUSED if expect == REFUSE_HANDLES else TAMPERED_MODEL_CACHE_REFUSED
            if status not in _REFUSALS:
                return Breach(rule, f"{answered} for a cache it must refuse", why)
            return None
        if expect in (DATA_CHANGED, RACE_DATA):
            rule = DATA_CORRUPTION_IS_HARMLESS if expect == DATA_CHANGED else CONCURRENT_REWRITE_CANNOT_SWAP_MODEL
            allowed = _DATA_STATUSES if expect == DATA_CHANGED else _ANY_STATUS
            if status not in allowed:
                return Breach(rule, f"{answered} for a corrupted data cache", why)
            if prepared is not None:
                # Any status and any outputs will do; only an escaping exception or a hang is a finding.
                ctx.runner.live_request.rewind()
                call("executeSynchronously", lambda: _sync_status(prepared, ctx.runner.request))
            return None
        if expect in (RACE, EITHER):
            rule = CONCURRENT_REWRITE_CANNOT_SWAP_MODEL if expect == RACE else UNTOUCHED_CACHE_ROUND_TRIPS
            if status not in _ANY_STATUS:
                return Breach(rule, answered, why)
            if prepared is None:
                return None
            return ctx.runner.behaves(prepared, rule)
        assert expect == ROUND_TRIP, expect
        if status != ErrorStatus.NONE:
            return Breach(UNTOUCHED_CACHE_ROUND_TRIPS, f"{answered} for the untouched cache it saved")
        return ctx.runner.behaves(prepared, UNTOUCHED_CACHE_ROUND_TRIPS)

    def _save_problem(self, case: Case, ctx: _Context, corruption: dict) -> Verdict:
        """prepareModel with broken cache handles must still prepare; what it saved must not crash retrieval."""
        token = bytes.fromhex(case.extras.get("saveToken") or _SAVE_TOKENS[0].hex())
        specs = save_handles(corruption.get("save", ()), ctx.needed)
        files = _OpenFiles()
        try:
            bases = {
                name: [files.file(b"") for _ in range(max([n, *(s.file + 1 for s in specs[name])]))]
                for name, n in zip(("model", "data"), ctx.needed)
            }
            handles = {
                name: [_handle(files, bases[name][s.file], s.access, s.fds) for s in specs[name]]
                for name in ("model", "data")
            }
            launch, status, prepared = self._prepare(
                ctx.device, ctx.runner.model, handles["model"], handles["data"], token
            )
            finding = _consistent("prepareModel", launch, status, prepared)
            if finding is None and status != ErrorStatus.NONE:
                finding = Breach(
                    SAVING_PROBLEMS_NEVER_FAIL_PREPARATION,
                    f"prepareModel answered {status.name} (launch {launch.name}) because of its cache handles",
                    json.dumps(corruption.get("save")),
                )
            if finding is not None:
                return verdict_of([finding], self.name)
            # Whatever was saved, read it back through proper handles: refused, or a model that runs.
            fresh_handles = {
                name: [_handle(files, fd, "rw", 1) for fd in bases[name][:n]]
                for name, n in zip(("model", "data"), ctx.needed)
            }
            launch, status, prepared = self._from_cache(
                ctx.device, fresh_handles["model"], fresh_handles["data"], token
            )
        finally:
            files.close()
        finding = _consistent("prepareModelFromCache", launch, status, prepared)
        if finding is None and status not in _ANY_STATUS:
            finding = Breach(
                SAVING_PROBLEMS_NEVER_FAIL_PREPARATION,
                f"prepareModelFromCache answered {status.name} for what a broken save left",
            )
        if finding is None and prepared is not None:
            ctx.runner.live_request.rewind()
            call("executeSynchronously", lambda: _sync_status(prepared, ctx.runner.request))
        return verdict_of([finding] if finding else [], self.name, expect="save")

    def _unsupported(self, case: Case, device: Device) -> Verdict:
        """No cache files needed: caching is unsupported, and prepareModelFromCache must say GENERAL_FAILURE."""
        token = bytes.fromhex(case.extras.get("token", bytes(BYTE_SIZE_OF_CACHE_TOKEN).hex()))
        launch, status, prepared = self._from_cache(device, [], [], token)
        finding = _consistent("prepareModelFromCache", launch, status, prepared)
        if finding is None and (status != ErrorStatus.GENERAL_FAILURE or prepared is not None):
            finding = Breach(
                UNSUPPORTED_CACHING_REFUSED,
                f"prepareModelFromCache answered {status.name} (launch {launch.name}) on a driver that needs no "
                "cache files",
            )
        return verdict_of([finding] if finding else [], self.name, caching="unsupported")


@dataclass
class _OtherModel:
    """A model prepared only to be saved (the other model of a swap)."""

    model: Model
    all_supported: bool = True
    unsupported: bool = False
    finding: Breach | None = None

    def close(self) -> None:
        close_model_pools(self.model)


def _files_needed(device: Device) -> tuple[ErrorStatus, int, int]:
    status, n_model, n_data = device.get_number_of_cache_files_needed()
    return status_of(status), int(n_model), int(n_data)


def _consistent(what: str, launch: ErrorStatus, status: ErrorStatus, prepared: object | None) -> Breach | None:
    """The launch status agrees with the callback's, and a model comes exactly with NONE."""
    if launch != ErrorStatus.NONE and launch != status:
        return Breach(
            LAUNCH_MATCHES_CALLBACK, f"{what} launch status {launch.name} differs from callback {status.name}"
        )
    if (status == ErrorStatus.NONE) != (prepared is not None):
        got = "no prepared model" if prepared is None else "a prepared model"
        return Breach(PREPARED_MODEL_IFF_NONE, f"{what} callback said {status.name} with {got}")
    return None


def _race_pairs(
    r: Retrieval, bases: dict[str, list[int]], other: SavedCache, data_too: bool
) -> list[tuple[int, bytes, bytes]]:
    """(file, its content, the other model's content) for each file the rewriter alternates.

    Only the model cache files alternate when both models saved the same data cache: the data cache the driver
    reads is then untouched, so a model it delivers must compute what the reference does; a model decoded from a
    second read of a file that was checked on the first is caught by its outputs. When the data caches differ,
    they alternate too, and only the statuses and the absence of crashes can be judged.
    """
    pairs = []
    for name in ("model", "data") if data_too else ("model",):
        theirs = other.side(name)
        for i, (f, base) in enumerate(zip(r.side(name), bases[name])):
            if base >= 0 and theirs:
                pairs.append((base, f.content, theirs[i % len(theirs)]))
    return pairs


TARGET = register_target(CacheTarget())

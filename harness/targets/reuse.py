"""Work kept across cases: a fixed pool of generated models with requests, and state kept per device.

The cache and burst targets are cheap because most of their work is kept between cases. Models come from a fixed
pool (entry k is the same in every process, so a case's JSON replays anywhere); what a device was asked once (a
model prepared and saved, a burst configured) is kept per device, keyed by the case's JSON, in state that owns its
own live objects (`owned_copy`: the case's own close() leaves them alone). A case that fails on kept state is run
again on fresh state (`confirmed_on_fresh_state`), so a finding never depends on what earlier cases left behind.
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from harness.case import Case, inputs_to_json
from harness.gen.model import ModelConfig, generate_model
from harness.gen.requests import RequestConfig, generate_request
from harness.gen.source import GenerationRejected, Source
from harness.gen.sources import RandomSource
from harness.hal import BYTE_SIZE_OF_CACHE_TOKEN, Device, ErrorStatus
from harness.oracle.verdict import Outcome, Verdict
from harness.reference import ReferenceResult

T = TypeVar("T")


@dataclass(frozen=True)
class PooledCase:
    """A generated model with a valid request and inputs, in the case format, a token for it, and the reference
    result generation computed."""

    model: dict
    request: dict
    inputs: list[dict]
    token: bytes
    reference: ReferenceResult

    def case(self, target: str, **fields: object) -> Case:
        """A case of this model, request and inputs (its live objects built when it is first run)."""
        return Case(target, self.model, request=self.request, inputs=self.inputs, **fields)  # type: ignore[arg-type]


class ModelPool:
    """A fixed, lazily generated pool of models with requests: entry k is the same in every process."""

    def __init__(
        self,
        salt: int,
        model_config: ModelConfig,
        request_config: RequestConfig,
        accept: Callable[[PooledCase], bool] | None = None,
        attempts: int = 64,
    ) -> None:
        self.salt = salt
        self.model_config = model_config
        self.request_config = request_config
        self.accept = accept  # entries must pass this (None: any)
        self.attempts = attempts
        self._entries: dict[int, PooledCase] = {}
        self._lock = threading.Lock()

    def get(self, k: int) -> PooledCase:
        """Entry k (GenerationRejected if no seed of it gives a model the reference runs to NONE)."""
        with self._lock:
            entry = self._entries.get(k)
            if entry is None:
                entry = self._entries[k] = self._generate(k)
            return entry

    def _generate(self, k: int) -> PooledCase:
        for attempt in range(self.attempts):
            source = RandomSource(self.salt * 1_000_003 + k * 1009 + attempt)
            case = draw_case(source, self.model_config, self.request_config)
            if case is not None and (self.accept is None or self.accept(case)):
                return case
        raise GenerationRejected(f"model pool entry {k}: no usable model in {self.attempts} attempts")


def draw_case(source: Source, model_config: ModelConfig, request_config: RequestConfig) -> PooledCase | None:
    """A generated model, request, inputs and token; None when the reference result is not a plain NONE."""
    try:
        generated = generate_model(source, model_config)
    except GenerationRejected:
        return None
    try:
        request = generate_request(source, generated, request_config)
        if request.expected.status != ErrorStatus.NONE or request.expected.unspecified:
            return None
        token = source.bytes(BYTE_SIZE_OF_CACHE_TOKEN)
        token += bytes(BYTE_SIZE_OF_CACHE_TOKEN - len(token))
        model_json = generated.model_json
        return PooledCase(model_json, request.request_json, inputs_to_json(generated.inputs), token, request.expected)
    finally:
        generated.close()


def owned_copy(case: Case, reference: ReferenceResult | None = None) -> Case:
    """A case of the same JSON with live objects of its own (for state kept beyond the case; close it with the
    state). The reference result, when known, is shared: it is never changed."""
    copy = Case.from_json(case.to_json())
    live = copy.materialized()
    known = case.live.reference if case.live is not None else None
    live.reference = known if known is not None else reference
    return copy


class DeviceStates(Generic[T]):
    """Per-device state kept across cases, least recently used dropped first (closed if it has close())."""

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self._by_device: weakref.WeakKeyDictionary[Device, OrderedDict] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, device: Device, key: object) -> T | None:
        """The state kept for this device and key, if any."""
        with self._lock:
            states = self._by_device.get(device)
            if states is None or key not in states:
                return None
            states.move_to_end(key)
            return states[key]

    def put(self, device: Device, key: object, state: T) -> T:
        """Keep a state (dropping the oldest beyond the limit)."""
        with self._lock:
            states = self._by_device.setdefault(device, OrderedDict())
            old = states.pop(key, None)
            states[key] = state
            dropped = [states.popitem(last=False)[1] for _ in range(max(0, len(states) - self.limit))]
        for s in [old, *dropped]:
            if s is not None and s is not state:
                _close(s)
        return state

    def drop(self, device: Device, key: object) -> None:
        """Forget (and close) the state of this key."""
        with self._lock:
            states = self._by_device.get(device)
            state = states.pop(key, None) if states is not None else None
        if state is not None:
            _close(state)


def _close(state: object) -> None:
    close = getattr(state, "close", None)
    if close is not None:
        close()


class CaseKeys:
    """Stable keys for case parts: by identity for the pool's own dicts, else by their canonical JSON.

    Cases decoded from a pool share the pool's dicts; nothing may change them in place.
    """

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._by_id: OrderedDict[tuple[int, ...], tuple[tuple, str]] = OrderedDict()

    def key(self, *parts: object) -> str:
        """A digest of the parts' JSON (computed once per set of objects while they are kept)."""
        ids = tuple(id(p) for p in parts)
        hit = self._by_id.get(ids)
        if hit is not None and all(a is b for a, b in zip(hit[0], parts)):
            return hit[1]
        digest = hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
        self._by_id[ids] = (parts, digest)  # holding the parts keeps their ids from being reused
        while len(self._by_id) > self.limit:
            self._by_id.popitem(last=False)
        return digest


def confirmed_on_fresh_state(verdict: Verdict, again: Callable[[], Verdict]) -> Verdict:
    """The verdict of a case run on kept state (`verdict["kept"]`), confirmed by `again()` on fresh state when it
    failed: the fresh verdict if that fails too, else the first one, marked as depending on the kept state."""
    if verdict.outcome != Outcome.FAILURE or not verdict.extras.get("kept"):
        return verdict
    fresh = again()
    if not fresh.ok:
        fresh.extras["rerun"] = "failed on kept state, failed again on fresh state"
        return fresh
    verdict.extras["history"] = "fails only on state earlier cases left; a replay on fresh state passes"
    return verdict


__all__ = [
    "CaseKeys",
    "DeviceStates",
    "ModelPool",
    "PooledCase",
    "confirmed_on_fresh_state",
    "draw_case",
    "owned_copy",
]

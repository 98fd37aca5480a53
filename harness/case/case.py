"""The Case: one self-contained test input, readable JSON on disk, live HAL objects in the process that runs it.

Serialized fields (CASE_FORMAT_VERSION):
    target: the target that decodes and runs it.
    model: the model JSON (harness.case.json_model, with pools and referenced subgraphs).
    request: the request and its pool layout (harness.case.request), or None when the target does not execute.
    inputs: per main input {"dimensions": [...], "value": [...]} or {"noValue": true} (harness.case.inputs).
    execution: how to execute: {"measure": bool, "deadlineNs": int | None, "loopTimeoutNs": ..., "preference", ...}.
    expect: what the generator intended, e.g. {"valid": false, "rule": "V4", "mutation": "zero_point_out_of_range"}.
    extras: per-target data (buffer roles, cache corruption ops, burst packets).

A case decoded from a Source carries the live objects its generator built (`live`: the hal.Model, input arrays, the
reference result it computed), so a run needs no round trip through JSON; its model and inputs JSON are made from
them when first read (to report, store or print the case). A case read from JSON builds its live objects when first
run. Either way what runs is what the JSON replays. The live objects belong to the case until `close()`.
"""

from __future__ import annotations

import json
from dataclasses import replace

from harness.case.inputs import inputs_from_json, inputs_to_json
from harness.case.json_model import model_from_json, model_to_json
from harness.case.live import Live
from harness.case.request import build_request
from harness.hal import Model, OperandLifeTime
from harness.reference import ReferenceResult, run_model

CASE_FORMAT_VERSION = 1
_FIELDS = ("target", "model", "request", "inputs", "execution", "expect", "extras", "version")


class Case:
    """One self-contained test input (see the module docstring for its fields)."""

    __slots__ = ("target", "_model", "request", "_inputs", "execution", "expect", "extras", "version", "live")

    def __init__(
        self,
        target: str,
        model: dict | None = None,
        request: dict | None = None,
        inputs: list[dict] | None = None,
        execution: dict | None = None,
        expect: dict | None = None,
        extras: dict | None = None,
        version: int = CASE_FORMAT_VERSION,
        *,
        live: Live | None = None,
    ) -> None:
        if model is None and live is None:
            raise ValueError("a case needs its model JSON or the live model it is made from")
        self.target = target
        self._model = model
        self.request = request
        self._inputs = [] if inputs is None and live is None else inputs
        self.execution = {} if execution is None else execution
        self.expect = {} if expect is None else expect
        self.extras = {} if extras is None else extras
        self.version = version
        self.live = live  # never serialized

    @property
    def model(self) -> dict:
        """The model JSON (made from the live model when first read)."""
        if self._model is None:
            self._model = model_to_json(self._live_objects().model)
        return self._model

    @property
    def inputs(self) -> list[dict]:
        """The main inputs' JSON (made from the live values when first read)."""
        if self._inputs is None:
            self._inputs = inputs_to_json(self._live_objects().inputs)
        return self._inputs

    @model.setter
    def model(self, value: dict) -> None:
        self._set_json(model=value)

    @inputs.setter
    def inputs(self, value: list[dict]) -> None:
        self._set_json(inputs=value)

    def _set_json(self, **parts: object) -> None:
        """Other JSON for the model or inputs: the live objects no longer match it and are released."""
        if self.live is not None:
            self._model, self._inputs = self.model, self.inputs
            self.close()
        if "model" in parts:
            self._model = parts["model"]  # type: ignore[assignment]
        if "inputs" in parts:
            self._inputs = parts["inputs"]  # type: ignore[assignment]

    def _live_objects(self) -> Live:
        if self.live is None:
            raise RuntimeError("the case was closed before its JSON was read: read it before close()")
        return self.live

    def materialized(self) -> Live:
        """The case's live objects, built from its JSON where it has none yet (kept until close())."""
        live = self.live
        if live is None:
            model = model_from_json(self._model)  # type: ignore[arg-type]
            live = self.live = Live(model, inputs_from_json(self._inputs or [], model))
        if self.request is not None and live.request is None:
            live.request = build_request(self.request, live.model, live.inputs)
        return live

    def executed_model(self) -> Model:
        """The model as an execution of the case runs it: main's inputs the request gives no value are omitted
        operands (NO_VALUE), as a device over an engine translates such an execution."""
        model = self.materialized().model
        omitted = {k for k, arg in enumerate((self.request or {}).get("inputs", [])) if arg.get("hasNoValue")}
        main = model.main
        gone = {main.input_indexes[k] for k in omitted if k < len(main.input_indexes)}
        if not gone:
            return model
        operands = [
            replace(o, lifetime=OperandLifeTime.NO_VALUE) if k in gone else o for k, o in enumerate(main.operands)
        ]
        inputs = [k for k in main.input_indexes if k not in gone]
        return replace(model, main=replace(main, operands=operands, input_indexes=inputs))

    def reference(self) -> ReferenceResult:
        """What the reference executor computes for the case's model and inputs (run once, then kept)."""
        live = self.materialized()
        if live.reference is None:
            live.reference = run_model(live.model, live.inputs, loop_timeout_ns=self.execution.get("loopTimeoutNs"))
        return live.reference

    def close(self) -> None:
        """Release the live objects (shared memory of the model and the request); read the JSON before, if needed."""
        live, self.live = self.live, None
        if live is not None:
            live.close()

    def to_json(self) -> dict:
        """A JSON-ready dict."""
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_json(cls, d: dict) -> Case:
        """The Case a to_json dict describes; ValueError for another format version or missing fields."""
        if d.get("version", CASE_FORMAT_VERSION) != CASE_FORMAT_VERSION:
            raise ValueError(f"case format version {d.get('version')} is not {CASE_FORMAT_VERSION}")
        if "target" not in d or "model" not in d:
            raise ValueError("a case needs at least 'target' and 'model'")
        return cls(**{k: v for k, v in d.items() if k in _FIELDS})

    def replace(self, **changes: object) -> Case:
        """A new case from this one's JSON with some fields changed (it builds its own live objects)."""
        return Case(**{**self.to_json(), **changes})  # type: ignore[arg-type]

    def dumps(self) -> str:
        """Readable JSON text."""
        return json.dumps(self.to_json(), indent=1, sort_keys=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Case) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Case({self.target!r}, expect={self.expect!r}, extras={sorted(self.extras)})"

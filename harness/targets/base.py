"""Target: the shape every fuzz target has, and the Case it decodes.

A target turns a Source into a Case (`decode`) and judges a driver on it (`run`). The same target object backs
the Atheris script, the Hypothesis property test and `nnfuzz repro`. Registering two targets of one name is an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Protocol

from harness.gen.source import Source
from harness.hal import Device, Model
from harness.oracle.verdict import Verdict

CASE_FORMAT_VERSION = 1


class DeferredJSON:
    """A case's model JSON, made when it is first read.

    A fuzz loop judges most cases without ever reading their JSON (it is read to report, store or print a case),
    so a target that can make it later from what it generated passes the maker instead. The maker must give what
    the JSON would have been at decode time: it may only read what nothing changes afterwards.
    """

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], dict]) -> None:
        self.make = make


@dataclass
class Case:
    """One self-contained test input, serializable to readable JSON.

    model: the case-format model JSON (harness.case.model_to_json schema, with pools and referenced subgraphs);
           given as a DeferredJSON, it is made when first read.
    request: the request and its pool layout: {"pools": [{"kind", "size", ...}], "inputs": [argument...],
             "outputs": [argument...]}, an argument being {"hasNoValue", "poolIndex", "offset", "length",
             "dimensions"}; None when the target does not execute.
    inputs: per main input, {"dimensions": [...], "value": [...]} or {"noValue": true}.
    execution: how to execute: {"paths": [...], "measure": bool, "deadlineNs": int | None, "loopTimeoutNs": ...}.
    expect: what the generator intended, e.g. {"valid": false, "rule": "V4", "mutation": "zero_point_out_of_range"}.
    extras: per-target data (buffer roles, cache corruption ops, burst packets).
    """

    target: str
    model: dict
    request: dict | None = None
    inputs: list[dict] = field(default_factory=list)
    execution: dict = field(default_factory=dict)
    expect: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)
    version: int = CASE_FORMAT_VERSION

    def attach_model(self, model: Model) -> Case:
        """This case, holding the hal.Model its `model` JSON was made from, for one run in this process to use.

        Decoding builds that model anyway; handing it over spares run the conversion back from JSON. It must be
        the model `model_from_json(self.model)` gives (the target's tests check it), so that what ran is what the
        stored JSON replays.
        """
        self.__dict__["_attached"] = (self.__dict__["_model_given"], model)
        return self

    def take_model(self) -> Model | None:
        """The attached hal.Model, once (the caller then owns its pools); None when there is none to take."""
        attached = self.__dict__.pop("_attached", None)
        # A case given other JSON since runs that JSON.
        if attached is None or attached[0] is not self.__dict__["_model_given"]:
            return None
        return attached[1]

    def to_json(self) -> dict:
        """A JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> Case:
        """The Case a to_json dict describes; ValueError for another format version or missing fields."""
        if d.get("version", CASE_FORMAT_VERSION) != CASE_FORMAT_VERSION:
            raise ValueError(f"case format version {d.get('version')} is not {CASE_FORMAT_VERSION}")
        if "target" not in d or "model" not in d:
            raise ValueError("a case needs at least 'target' and 'model'")
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})

    def dumps(self) -> str:
        """Readable JSON text."""
        return json.dumps(self.to_json(), indent=1, sort_keys=True)


def _read_model(case: Case) -> dict:
    model = case.__dict__["_model"]
    if model.__class__ is DeferredJSON:
        model = case.__dict__["_model"] = model.make()
    return model


def _write_model(case: Case, model: dict | DeferredJSON) -> None:
    case.__dict__["_model"] = model
    case.__dict__["_model_given"] = model  # what attach_model and take_model compare (made JSON or not)


# The model field, read through the maker when it was deferred (set after the dataclass has made its methods, which
# then read and write the field through it).
Case.model = property(_read_model, _write_model, doc="The case-format model JSON.")  # type: ignore[assignment]


class Target(Protocol):
    """A fuzz target."""

    name: str

    def decode(self, source: Source) -> Case:
        """Draw one case from the source (GenerationRejected if the choices cannot make one)."""
        ...

    def run(self, case: Case, device: Device) -> Verdict:
        """Drive the device with the case through the HAL interface and judge it with the oracle."""
        ...


TARGETS: dict[str, Target] = {}


def register_target(target: Target) -> Target:
    """Add a target to the registry; a duplicate name is an error."""
    if target.name in TARGETS:
        raise RuntimeError(f"target {target.name!r} registered twice")
    TARGETS[target.name] = target
    return target

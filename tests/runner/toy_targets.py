"""Toy targets for the runner's tests, named by `tests.runner.toy_targets:NAME` specs.

TOY's case says what its run does: succeed, abort the process, loop forever, break a rule or let an exception out.
PREPARE asks the device to check and prepare a one-operation model, so a bad driver's bug decides the outcome.
"""

from __future__ import annotations

import os

from harness.case import Case, model_from_json
from harness.hal import Device, ErrorStatus, ExecutionPreference, Priority
from harness.hal.callbacks import WaitablePreparedModelCallback
from harness.oracle.verdict import SUCCESS, Outcome, RuleViolation, Verdict, define_rule

TOY_RULE = define_rule("toy.rule_holds", "the toy target's case says the rule holds")
MODEL_ACCEPTED = define_rule("toy.valid_model_accepted", "the device accepts a valid one-operation model")

ACTIONS = ("ok", "abort", "loop", "violate", "raise")

_F32 = {"type": "TENSOR_FLOAT32", "dimensions": [2, 2], "scale": 0.0, "zeroPoint": 0}
ADD_MODEL = {
    "operands": [
        {**_F32, "lifetime": "SUBGRAPH_INPUT"},
        {**_F32, "lifetime": "SUBGRAPH_INPUT"},
        {"type": "INT32", "dimensions": [], "scale": 0.0, "zeroPoint": 0, "lifetime": "CONSTANT_COPY", "value": [0]},
        {**_F32, "lifetime": "SUBGRAPH_OUTPUT"},
    ],
    "operations": [{"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]}],
    "inputIndexes": [0, 1],
    "outputIndexes": [3],
    "relaxComputationFloat32toFloat16": False,
}


def _loop_forever() -> None:
    while True:
        pass


class ToyTarget:
    """Does what its case's `action` says."""

    name = "toy"

    def decode(self, source) -> Case:
        return Case(self.name, model={}, extras={"action": source.choice(ACTIONS)})

    def run(self, case: Case, device: Device) -> Verdict:
        action = case.extras["action"]
        if action == "abort":
            os.abort()
        if action == "loop":
            _loop_forever()
        if action == "violate":
            raise RuleViolation(Verdict(Outcome.FAILURE, TOY_RULE, "the toy rule broke", "as the case asked"))
        if action == "raise":
            raise KeyError("toy")
        return SUCCESS


class PrepareTarget:
    """Checks and prepares a one-operation model; a refusal is a failure."""

    name = "toy_prepare"

    def decode(self, source) -> Case:
        return Case(self.name, model=ADD_MODEL, extras={"n": source.integer(0, 3)})

    def run(self, case: Case, device: Device) -> Verdict:
        model = model_from_json(case.model)
        status, supported = device.get_supported_operations(model)
        if status != ErrorStatus.NONE:
            return Verdict(Outcome.FAILURE, MODEL_ACCEPTED, "a valid model was refused", f"status {status!r}")
        callback = WaitablePreparedModelCallback()
        device.prepare_model(
            model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM, None, [], [], bytes(32), callback
        )
        return SUCCESS


class BrokenDecoder(ToyTarget):
    """A target whose generator has a bug."""

    name = "toy_broken"

    def decode(self, source) -> Case:
        return {}["missing"]


TOY = ToyTarget()
BROKEN = BrokenDecoder()
PREPARE = PrepareTarget()


def toy_case(action: str) -> dict:
    """The JSON of a TOY case doing `action`."""
    return Case("toy", model={}, extras={"action": action}).to_json()

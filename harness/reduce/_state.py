"""What the reference says about a case, and turning an edited graph back into a complete case.

`analyse` runs the reference on a copy of the case's model in which every operation result is also a model output:
the value of every operand of main (inputs, constants, results) is then known, which is what cutting an operation
out needs (its results become model inputs holding exactly what the operations after it saw). `finish` makes a
candidate case of an edited graph: it redeclares the results' dimensions when inputs were shrunk, refuses a model the
reference validator refuses or the reference cannot run to NONE, and rebuilds the inputs JSON and the request JSON
for the new model: in the plain layout (harness.case.simple_request_json, output buffers sized from the reference's
output shapes) or, when the case's own request must be kept (its layout is part of the failure), with each argument
carried over from the operand it belonged to.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.case import (
    CaseFormatError,
    build_request,
    close_model_pools,
    inputs_from_json,
    inputs_to_json,
    model_from_json,
    simple_request_json,
)
from harness.hal import ErrorStatus, Model, OperandLifeTime
from harness.hal.values import constant_value
from harness.reduce._graph import (
    CONSTANTS,
    OUTPUT,
    TEMPORARY,
    Graph,
    copy_json,
    count_operations,
    element_count,
    is_tensor,
    lifetime,
)
from harness.reference import NoKernelError, run_model, validate_model, validate_request

# Arguments the carried request adds (a new model input or output) go to one new pool, at offsets aligned to this.
_ALIGN = 8


@dataclass
class State:
    """A case whose model the reference runs to NONE, with the value of every operand of its main subgraph."""

    case: dict
    values: dict[int, np.ndarray | None]  # by operand index of main: inputs, constants, results (None: no value)
    outputs: list[np.ndarray]  # the reference's model outputs
    plain: bool  # the request is in the plain layout
    broken: tuple[str, ...] = ()  # the rules its request breaks (a request target's case breaks one on purpose)

    @property
    def model(self) -> dict:
        return self.case["model"]

    @property
    def operations(self) -> int:
        return count_operations(self.model)

    @property
    def elements(self) -> int:
        return count_elements(self.model, self.values)

    def graph(self) -> Graph:
        """A new editable graph of the case's model."""
        return Graph(self.model, self.values)

    def data(self) -> dict[int, np.ndarray]:
        """The values of main's model inputs and constants of tensor types (what dimensions and values are made
        simpler in), by operand index, the inputs first."""
        operands = self.model.get("operands", [])
        inputs = self.model.get("inputIndexes", [])
        constants = [k for k, o in enumerate(operands) if lifetime(o) in CONSTANTS]
        found = {}
        for k in [*inputs, *constants]:
            value = self.values.get(k)
            if value is not None and is_tensor(operands[k]) and value.size > 0:
                found[k] = value
        return found


def reducible(case: Mapping) -> bool:
    """True for a case whose model executes: a model in the canonical layout with operations, and a request."""
    model, request = case.get("model"), case.get("request")
    return (
        isinstance(model, dict)
        and isinstance(request, dict)
        and "operandValues" not in model
        and bool(model.get("operations"))
        and isinstance(case.get("inputs", []), list)
    )


def count_elements(model: Mapping, values: Mapping[int, np.ndarray | None]) -> int:
    """Elements of every operand of every subgraph (a scalar is one): the values where known, else the declared
    dimensions (an operand of unknown dimensions counts none)."""
    total = 0
    for g, subgraph in enumerate((model, *model.get("referenced", []))):
        for k, operand in enumerate(subgraph.get("operands", [])):
            value = values.get(k) if g == 0 else None
            if value is not None:
                total += int(np.size(value))
            elif lifetime(operand) in ("NO_VALUE", "SUBGRAPH"):
                continue
            elif not is_tensor(operand):
                total += 1
            elif operand.get("dimensions") and all(operand["dimensions"]):
                total += element_count(operand["dimensions"])
    return total


def _loop_timeout(case: Mapping) -> int | None:
    return (case.get("execution") or {}).get("loopTimeoutNs")


def _exposed(model: Mapping) -> tuple[dict, list[int]]:
    """A copy of the model in which every result of main is a model output too; and which operand each output is."""
    exposed = dict(model)
    outputs = list(exposed.get("outputIndexes", []))
    operands = exposed["operands"] = list(exposed.get("operands", []))
    for k, operand in enumerate(operands):
        if lifetime(operand) == TEMPORARY:
            operands[k] = {**operand, "lifetime": OUTPUT}
            outputs.append(k)
    exposed["outputIndexes"] = outputs
    return exposed, outputs


def _run_exposed(
    model_json: Mapping, inputs: Sequence[np.ndarray | None], loop_timeout_ns: int | None
) -> tuple[dict[int, np.ndarray | None], list[np.ndarray]] | None:
    """(the value of every operand of main, the model outputs) as the reference computes them; None when it cannot
    run the model to NONE (or leaves the result unspecified)."""
    exposed, outputs = _exposed(model_json)
    try:
        model = model_from_json(exposed)
    except CaseFormatError:
        return None
    try:
        result = run_model(model, inputs, loop_timeout_ns=loop_timeout_ns)
        values: dict[int, np.ndarray | None] = dict(zip(model.main.input_indexes, inputs))
        for k, operand in enumerate(model.main.operands):
            if operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
                values[k] = constant_value(model, model.main, k)
    except NoKernelError:
        return None
    finally:
        close_model_pools(model)
    if result.status != ErrorStatus.NONE or result.unspecified:
        return None
    values.update(zip(outputs, result.outputs))
    return values, result.outputs[: len(model_json.get("outputIndexes", []))]


def analyse(case: dict) -> State | None:
    """The state of a reducible case; None when the reference cannot run its model to NONE."""
    if not reducible(case):
        return None
    try:
        model = model_from_json(case["model"])
    except CaseFormatError:
        return None
    try:
        inputs = inputs_from_json(case.get("inputs") or [], model)
        if len(inputs) != len(model.main.input_indexes):
            return None
        ran = _run_exposed(case["model"], inputs, _loop_timeout(case))
        if ran is None:
            return None
        values, outputs = ran
        plain = case["request"] == _plain_request(model, inputs, outputs)
        broken = _broken_rules(case["request"], model, inputs)
    except (ValueError, TypeError):
        return None
    finally:
        close_model_pools(model)
    return State(case, values, outputs, plain, broken)


def _plain_request(model: Model, inputs: Sequence[np.ndarray | None], outputs: Sequence[np.ndarray]) -> dict:
    return simple_request_json(model, inputs, [int(o.nbytes) for o in outputs])


def finish(state: State, graph: Graph, *, reshape: bool = False, plain: bool | None = None) -> State | None:
    """The candidate an edited (compacted) graph makes of the state's case, as a state of its own; None when the
    reference validator refuses its model or the reference cannot run it to NONE.

    `reshape`: the results' declared dimensions are recomputed (inputs or constants changed shape). `plain`: the
    request's layout (None: the state's own).
    """
    loop_timeout = _loop_timeout(state.case)
    inputs = [graph.values.get(k) for k in graph.inputs]
    model_json = graph.to_json()
    if reshape and not _redeclare(model_json, inputs, loop_timeout):
        return None
    try:
        model = model_from_json(model_json)
    except CaseFormatError:
        return None
    try:
        if validate_model(model):
            return None
        ran = _run_exposed(model_json, inputs, loop_timeout)
        if ran is None:
            return None
        values, outputs = ran
        plain = state.plain if plain is None else plain
        if plain and state.broken:
            return None  # the case's request breaks a rule on purpose: a plain one breaks none
        if plain:
            request = _plain_request(model, inputs, outputs)  # valid by construction
        else:
            request = _carried_request(state, graph, inputs, outputs)
            if _broken_rules(request, model, inputs) != state.broken:
                return None  # the request must break the rules the case's request broke, and no other
    except (ValueError, TypeError):
        return None
    finally:
        close_model_pools(model)
    case = {**state.case, "model": model_json, "inputs": inputs_to_json(inputs), "request": request}
    return State(case, values, outputs, plain, state.broken)


def _broken_rules(request_json: dict, model: Model, inputs: Sequence[np.ndarray | None]) -> tuple[str, ...]:
    """The rules a request breaks on every path (sorted rule ids). The fenced path's own rule is left to the
    caller's predicate: a case whose outputs become fully specified may run on the fenced path, which is fine."""
    with build_request(request_json, model, inputs) as live:
        return tuple(sorted({v.rule for v in validate_request(model, live.request)}))


def _redeclare(model_json: dict, inputs: Sequence[np.ndarray | None], loop_timeout_ns: int | None) -> bool:
    """Set every result's declared dimensions to the shape the reference computes (unknown ones stay unknown);
    False when the reference cannot run the model."""
    probe = copy_json(model_json)
    written = {k for op in probe.get("operations", []) for k in op["outputs"]}
    for k in written:
        operand = probe["operands"][k]
        operand["dimensions"] = [0] * len(operand.get("dimensions", []))
    ran = _run_exposed(probe, inputs, loop_timeout_ns)
    if ran is None:
        return False
    values = ran[0]
    for k in written:
        operand, value = model_json["operands"][k], values.get(k)
        declared = operand.get("dimensions", [])
        if value is None or not is_tensor(operand) or not declared:
            continue
        shape = [int(d) for d in np.shape(value)]
        same_rank = len(shape) == len(declared)
        operand["dimensions"] = [s if d else 0 for d, s in zip(declared, shape)] if same_rank else shape
    return True


def _carried_request(
    state: State, graph: Graph, inputs: Sequence[np.ndarray | None], outputs: Sequence[np.ndarray]
) -> dict:
    """The state's request fitted to the graph: the arguments of the inputs and outputs that stay are kept (length and
    dimensions following a change of size, so what was wrong with them stays wrong by as much), the new ones are
    laid out plainly in one new pool."""
    old = state.case["request"]
    old_model = state.model
    request = {"pools": copy.deepcopy(old["pools"]), "inputs": [], "outputs": []}
    old_inputs = {k: q for q, k in enumerate(old_model.get("inputIndexes", []))}
    old_outputs = {k: q for q, k in enumerate(old_model.get("outputIndexes", []))}
    extra = {"kind": "ashmem", "size": 0, "used": False}
    pool = len(request["pools"])

    def argument(old_args: list[dict], q: int | None, before: np.ndarray | None, now: np.ndarray | None) -> dict:
        if q is None or q >= len(old_args):
            if now is None:
                return {"hasNoValue": True, "poolIndex": 0, "offset": 0, "length": 0, "dimensions": []}
            offset = -(-extra["size"] // _ALIGN) * _ALIGN
            extra["size"], extra["used"] = offset + int(now.nbytes), True
            return {"hasNoValue": False, "poolIndex": pool, "offset": offset, "length": int(now.nbytes),
                    "dimensions": [int(d) for d in np.shape(now)]}  # fmt: skip
        arg = copy.deepcopy(old_args[q])
        if before is None or now is None or np.shape(before) == np.shape(now) or arg.get("hasNoValue"):
            return arg
        length = int(arg.get("length", 0))
        arg["length"] = max(0, length + int(now.nbytes) - int(before.nbytes))
        if arg.get("dimensions"):
            arg["dimensions"] = [int(d) for d in np.shape(now)]
        if arg["length"] > length:  # it may no longer fit where it was: moved to the new pool
            arg["poolIndex"], arg["offset"] = pool, -(-extra["size"] // _ALIGN) * _ALIGN
            extra["size"], extra["used"] = arg["offset"] + arg["length"], True
        return arg

    old_input_values = [state.values.get(k) for k in old_model.get("inputIndexes", [])]
    for k, value in zip(graph.inputs, inputs):
        q = old_inputs.get(graph.origin[k])
        before = old_input_values[q] if q is not None else None
        request["inputs"].append(argument(old["inputs"], q, before, value))
    for k, value in zip(graph.outputs, outputs):
        q = old_outputs.get(graph.origin[k])
        before = state.outputs[q] if q is not None else None
        request["outputs"].append(argument(old["outputs"], q, before, value))
    if extra["used"]:
        request["pools"].append({"kind": "ashmem", "size": max(int(extra["size"]), 1)})
    return request

"""A model JSON's main subgraph as an editable graph.

Edits remove operations, turn results into model inputs, constants or model outputs, and give operands other
values, dimensions or quantization parameters. `compact` then drops what nothing needs any more (model outputs no
operation writes, operations whose results nothing reads, model inputs no operation reads, operands nothing names,
referenced subgraphs no SUBGRAPH operand reaches), renumbers the operands and sets every lifetime from the operand's
role. `origin` follows each operand back to its index in the model the graph was made from, so that input values and
request arguments stay with their operand through any number of edits.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping

import numpy as np

from harness.case import to_json_values
from harness.hal import OperandLifeTime, OperandType, is_tensor_type
from harness.reference import operation_name

INPUT, OUTPUT, TEMPORARY = "SUBGRAPH_INPUT", "SUBGRAPH_OUTPUT", "TEMPORARY_VARIABLE"
COPY, REFERENCE, SUBGRAPH = "CONSTANT_COPY", "CONSTANT_REFERENCE", "SUBGRAPH"
CONSTANTS = frozenset({COPY, REFERENCE})
# Keys of an operand's JSON that only a constant carries.
_VALUE_KEYS = ("value", "valueHex", "location")


def copy_json(value: object) -> object:
    """A deep copy of JSON data (dicts, lists, scalars), several times faster than copy.deepcopy; the lists of a
    case are homogeneous, so a list whose first item is a scalar is copied shallowly."""
    if type(value) is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if type(value) is list:
        if value and type(value[0]) in (dict, list):
            return [copy_json(v) for v in value]
        return value[:]
    return value


def lifetime(operand: Mapping) -> str:
    """An operand JSON's lifetime as its HAL name (the number, as text, for one the HAL does not name)."""
    value = operand["lifetime"]
    if isinstance(value, str):
        return value
    try:
        return OperandLifeTime(value).name
    except ValueError:
        return str(value)


def operand_type(operand: Mapping) -> int:
    """An operand JSON's type as a number (-1 for a name the HAL does not know)."""
    value = operand["type"]
    if isinstance(value, str):
        member = OperandType.__members__.get(value)
        return -1 if member is None else int(member)
    return int(value)


def is_tensor(operand: Mapping) -> bool:
    """True for an operand of a tensor type."""
    return is_tensor_type(operand_type(operand))


def operation_type_name(operation: Mapping) -> str:
    """An operation JSON's type as its HAL name."""
    value = operation["type"]
    return value if isinstance(value, str) else operation_name(int(value))


def count_operations(model: Mapping) -> int:
    """Operations of the main subgraph and every referenced subgraph."""
    return len(model.get("operations", [])) + sum(len(s.get("operations", [])) for s in model.get("referenced", []))


class Graph:
    """The main subgraph of a model JSON (a private copy), its inputs' values, and where each operand came from."""

    def __init__(self, model: Mapping, values: Mapping[int, np.ndarray | None]) -> None:
        self.model: dict = copy_json(dict(model))  # type: ignore[assignment]
        self.operands: list[dict] = self.model.setdefault("operands", [])
        self.operations: list[dict] = self.model.setdefault("operations", [])
        self.inputs: list[int] = list(self.model.get("inputIndexes", []))
        self.outputs: list[int] = list(self.model.get("outputIndexes", []))
        self.origin: list[int] = list(range(len(self.operands)))
        # The value each model input is given at execution (None: no value), by operand index.
        self.values: dict[int, np.ndarray | None] = {k: values.get(k) for k in self.inputs}

    def copy(self) -> Graph:
        """An independent copy."""
        other = copy.copy(self)
        other.model = copy_json(self.model)  # type: ignore[assignment]
        other.operands, other.operations = other.model["operands"], other.model["operations"]
        other.inputs, other.outputs, other.origin = list(self.inputs), list(self.outputs), list(self.origin)
        other.values = dict(self.values)
        return other

    # -- reading ----------------------------------------------------------------------------------------------------

    def producers(self) -> dict[int, int]:
        """The position of the operation writing each operand that one writes."""
        return {k: p for p, op in enumerate(self.operations) for k in op["outputs"]}

    def readers(self) -> dict[int, list[int]]:
        """The positions of the operations reading each operand."""
        found: dict[int, list[int]] = {}
        for p, op in enumerate(self.operations):
            for k in op["inputs"]:
                found.setdefault(k, []).append(p)
        return found

    def downstream(self, operands: Iterable[int]) -> set[int]:
        """Positions of the operations that read these operands, directly or through other operations' results."""
        reached: set[int] = set()
        frontier = set(operands)
        for p, op in enumerate(self.operations):  # operations are in execution order
            if frontier.intersection(op["inputs"]):
                reached.add(p)
                frontier.update(op["outputs"])
        return reached

    # -- editing ----------------------------------------------------------------------------------------------------

    def remove(self, positions: Iterable[int]) -> None:
        """Remove the operations at these positions (what only they used goes at the next compact)."""
        drop = set(positions)
        self.operations[:] = [op for p, op in enumerate(self.operations) if p not in drop]

    def to_input(self, k: int, value: np.ndarray | None) -> None:
        """Make operand k a model input given `value` (its writer, if any, must be removed)."""
        operand = self.operands[k]
        operand["lifetime"] = INPUT
        for key in _VALUE_KEYS:
            operand.pop(key, None)
        if k in self.outputs:
            self.outputs.remove(k)
        if k not in self.inputs:
            self.inputs.append(k)
        self.values[k] = value

    def to_constant(self, k: int, value: np.ndarray) -> None:
        """Make operand k a CONSTANT_COPY holding `value` (its writer, if any, must be removed)."""
        operand = self.operands[k]
        for key in _VALUE_KEYS:
            operand.pop(key, None)
        operand["lifetime"] = COPY
        if k in self.inputs:
            self.inputs.remove(k)
            self.values.pop(k, None)
        if k in self.outputs:
            self.outputs.remove(k)
        self.set_constant(k, value)

    def set_constant(self, k: int, value: np.ndarray) -> None:
        """Give constant operand k another value (its dimensions, and a CONSTANT_REFERENCE's length, follow)."""
        operand = self.operands[k]
        operand.pop("valueHex", None)
        operand["value"] = to_json_values(value)
        if is_tensor(operand):
            operand["dimensions"] = [int(d) for d in value.shape]
        if lifetime(operand) == REFERENCE:
            operand.setdefault("location", {})["length"] = int(value.nbytes)

    def to_output(self, k: int) -> None:
        """Make operand k (written by an operation) a model output."""
        if k not in self.outputs:
            self.outputs.append(k)

    # -- tidying ----------------------------------------------------------------------------------------------------

    def compact(self) -> Graph:
        """Drop what nothing needs, renumber the operands, set the lifetimes from the roles; returns self."""
        written = set(self.producers())
        self.outputs = [k for k in dict.fromkeys(self.outputs) if k in written]
        while True:  # operations whose results nothing needs, until none is left
            needed = set(self.outputs).union(*(op["inputs"] for op in self.operations))
            alive = [op for op in self.operations if needed.intersection(op["outputs"])]
            if len(alive) == len(self.operations):
                break
            self.operations[:] = alive
        read = set().union(*(op["inputs"] for op in self.operations))
        written = set().union(*(op["outputs"] for op in self.operations))
        self.inputs = [k for k in dict.fromkeys(self.inputs) if k in read]
        kept = sorted(read | written | set(self.inputs) | set(self.outputs))
        number = {old: new for new, old in enumerate(kept)}
        self.operands[:] = [self.operands[k] for k in kept]
        self.origin = [self.origin[k] for k in kept]
        self.values = {number[k]: v for k, v in self.values.items() if k in number and k in self.inputs}
        for op in self.operations:
            op["inputs"] = [number[k] for k in op["inputs"]]
            op["outputs"] = [number[k] for k in op["outputs"]]
        self.inputs = [number[k] for k in self.inputs]
        self.outputs = [number[k] for k in self.outputs]
        written = {number[k] for k in written}
        for k, operand in enumerate(self.operands):
            operand.pop("numberOfConsumers", None)  # recounted from the operations when read
            if k in self.inputs:
                operand["lifetime"] = INPUT
            elif k in self.outputs:
                operand["lifetime"] = OUTPUT
            elif k in written:
                operand["lifetime"] = TEMPORARY
        self.model["inputIndexes"], self.model["outputIndexes"] = list(self.inputs), list(self.outputs)
        _drop_unreached_subgraphs(self.model)
        return self

    def to_json(self) -> dict:
        """The model JSON (compact first)."""
        self.model["inputIndexes"], self.model["outputIndexes"] = list(self.inputs), list(self.outputs)
        return self.model


def _subgraph_references(subgraph: Mapping) -> list[int]:
    return [
        int(o.get("location", {}).get("offset", 0)) for o in subgraph.get("operands", []) if lifetime(o) == SUBGRAPH
    ]


def _drop_unreached_subgraphs(model: dict) -> None:
    """Remove the referenced subgraphs no SUBGRAPH operand reaches from main, renumbering the references."""
    referenced = model.get("referenced")
    if not referenced:
        return
    reached: list[int] = []
    pending = _subgraph_references(model)
    while pending:
        k = pending.pop()
        if 0 <= k < len(referenced) and k not in reached:
            reached.append(k)
            pending.extend(_subgraph_references(referenced[k]))
    kept = sorted(reached)
    number = {old: new for new, old in enumerate(kept)}
    model["referenced"] = [referenced[k] for k in kept]
    for subgraph in (model, *model["referenced"]):
        for operand in subgraph.get("operands", []):
            if lifetime(operand) == SUBGRAPH:
                location = operand.setdefault("location", {})
                location["offset"] = number.get(int(location.get("offset", 0)), int(location.get("offset", 0)))
    if not model["referenced"]:
        del model["referenced"]


def element_count(shape: Iterable[int]) -> int:
    """Elements of a shape (1 for a scalar)."""
    return math.prod(int(d) for d in shape)

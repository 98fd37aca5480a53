"""Input values in the case format: per main input {"dimensions": [...], "value": [...]} or {"noValue": true}."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.case.values import pack, to_json_values
from harness.hal import Model
from harness.hal.values import unpack


def inputs_to_json(inputs: Sequence[np.ndarray | None]) -> list[dict]:
    """Input arrays (None: no value) as case-format entries."""
    return [
        {"noValue": True} if a is None else {"dimensions": list(np.shape(a)), "value": to_json_values(a)}
        for a in inputs
    ]


def inputs_from_json(inputs_json: Sequence[dict], model: Model) -> list[np.ndarray | None]:
    """The main input values a case gives, in their operands' storage dtypes (None for an omitted input)."""
    main = model.main
    values: list[np.ndarray | None] = []
    for entry, index in zip(inputs_json, main.input_indexes):
        if entry.get("noValue"):
            values.append(None)
            continue
        operand_type = main.operands[index].type
        dims = [int(d) for d in entry.get("dimensions", [])]
        values.append(unpack(pack(entry.get("value", []), operand_type), operand_type, dims))
    return values

"""A built request's pools hold zeros and the input values, and reset() puts them back after any scribbling."""

from __future__ import annotations

import numpy as np

from harness.case import model_from_json
from harness.hal import Model, numpy_dtype
from harness.runner.execute import decode_seed, resolve_target
from harness.targets._common import BuiltRequest, build_request, close_model_pools, inputs_from_json


def _as_built(built: BuiltRequest, model: Model, inputs: list[np.ndarray | None]) -> list[bytes]:
    """Each own pool as it must be: zero-filled, then every input value written where its argument points."""
    contents = {id(m): bytearray(m.size) for m in built.memories}
    main = model.main
    for arg, value, index in zip(built.request.inputs, inputs, main.input_indexes):
        if arg.has_no_value or value is None:
            continue
        pool = built.request.pools[arg.location.pool_index]
        if id(pool) in contents:
            raw = np.asarray(value, dtype=numpy_dtype(main.operands[index].type)).tobytes()
            contents[id(pool)][arg.location.offset : arg.location.offset + len(raw)] = raw
    return [bytes(contents[id(m)]) for m in built.memories]


def _pools(built: BuiltRequest) -> list[bytes]:
    return [m.read(0, m.size) if m.size else b"" for m in built.memories]


def test_reset_restores_the_pools_as_built() -> None:
    target = resolve_target("execution")
    checked = 0
    for seed in range(80):
        case = decode_seed(target, seed)
        if case is None:
            continue
        model = model_from_json(case.model)
        try:
            inputs = inputs_from_json(case.inputs, model)
            built = build_request(case.request, model, inputs)
            try:
                expected = _as_built(built, model, inputs)
                assert _pools(built) == expected
                for memory in built.memories:
                    if memory.size:
                        memory.write(0, bytes([0xA5]) * memory.size)
                built.reset()
                assert _pools(built) == expected
                checked += sum(1 for raw in expected if any(raw))
            finally:
                built.close()
        finally:
            close_model_pools(model)
    assert checked > 50  # pools that hold input values, not only zeros

"""Requests in the case format: a live request's pools hold zeros and the input values, rewinding or renewing puts
them back after any scribbling, nothing stays open when building fails, and the JSON round-trips."""

from __future__ import annotations

import numpy as np
import pytest

from harness.case import Case, LiveRequest, build_request, request_to_json, simple_request
from harness.case import request as request_module
from harness.gen import RandomSource, generate_model, generate_request
from harness.hal import Model, numpy_dtype
from harness.runner.execute import decode_seed, resolve_target


def _as_built(built: LiveRequest, model: Model, inputs: list[np.ndarray | None]) -> list[bytes]:
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


def _pools(built: LiveRequest) -> list[bytes]:
    return [m.read(0, m.size) if m.size else b"" for m in built.memories]


def _scribble(built: LiveRequest) -> None:
    for memory in built.memories:
        if memory.size:
            memory.write(0, bytes([0xA5]) * memory.size)


def test_rewinding_a_used_request_restores_the_pools_as_built() -> None:
    target = resolve_target("execution")
    checked = 0
    for seed in range(80):
        case = decode_seed(target, seed)
        if case is None:
            continue
        # Read back from JSON: the live request is built from the request JSON and the inputs JSON.
        case = Case.from_json(case.to_json())
        live = case.materialized()
        built = live.request
        assert built is not None
        expected = _as_built(built, live.model, live.inputs)
        assert _pools(built) == expected
        built.rewind()  # first use: nothing to restore
        _scribble(built)
        built.rewind()
        assert _pools(built) == expected
        checked += sum(1 for raw in expected if any(raw))
        for k in range(len(built.request.pools)):
            built.renew(k).close()
        assert _pools(built) == expected
        case.close()
    assert checked > 50  # pools that hold input values, not only zeros


def test_building_a_request_that_fails_leaves_nothing_open(monkeypatch: pytest.MonkeyPatch) -> None:
    generated = generate_model(RandomSource(3))
    request = generate_request(RandomSource(4), generated)
    created = []
    real = request_module.pool_from_json

    def recording(desc: dict):
        memory = real(desc)
        created.append(memory)
        return memory

    monkeypatch.setattr(request_module, "pool_from_json", recording)
    broken = dict(request.request_json)
    broken["pools"] = [*request.request_json["pools"], {"kind": "no such kind", "size": 8}]
    with pytest.raises(ValueError):
        build_request(broken, generated.model, generated.inputs)
    assert created and all(memory.closed for memory in created)
    generated.close()


def test_request_json_round_trips_through_a_live_request() -> None:
    for seed in range(40):
        generated = generate_model(RandomSource(seed))
        request = generate_request(RandomSource(seed + 1000), generated)
        with build_request(request.request_json, generated.model, generated.inputs) as built:
            assert request_to_json(built.request, generated.model) == request.request_json
        generated.close()


def test_a_simple_request_reads_back_what_its_outputs_hold() -> None:
    generated = generate_model(RandomSource(11))
    sizes = [64 * 1024] * len(generated.model.main.output_indexes)
    with simple_request(generated.model, generated.inputs, sizes) as built:
        for k, expected in enumerate(generated.outputs):
            arg = built.request.outputs[k]
            raw = np.ascontiguousarray(expected).tobytes()
            built.request.pools[arg.location.pool_index].write(arg.location.offset, raw)
            np.testing.assert_array_equal(built.read_output(k, np.shape(expected)), expected)
        assert built.read_output(0, [arg.location.length + 1]) is None  # larger than its buffer
    generated.close()


def _two_input_model() -> Model:
    """MINIMUM of two float32 [2] inputs."""
    from harness.case import model_from_json

    operand = {"type": "TENSOR_FLOAT32", "dimensions": [2], "scale": 0.0, "zeroPoint": 0}
    return model_from_json(
        {
            "operands": [
                {**operand, "lifetime": "SUBGRAPH_INPUT"},
                {**operand, "lifetime": "SUBGRAPH_INPUT"},
                {**operand, "lifetime": "SUBGRAPH_OUTPUT"},
            ],
            "operations": [{"type": "MINIMUM", "inputs": [0, 1], "outputs": [2]}],
            "inputIndexes": [0, 1],
            "outputIndexes": [2],
        }
    )


def _aliased(second_offset: int, output_offset: int, pool_size: int) -> dict:
    arg = {"hasNoValue": False, "poolIndex": 0, "length": 8, "dimensions": [2]}
    return {
        "pools": [{"kind": "ashmem", "size": pool_size}, {"kind": "ashmem", "size": 8}],
        "inputs": [{**arg, "offset": 0}, {**arg, "offset": second_offset}],
        "outputs": [{**arg, "poolIndex": 0 if output_offset >= 0 else 1, "offset": max(output_offset, 0)}],
    }


def test_inputs_sharing_bytes_must_agree_there() -> None:
    model = _two_input_model()
    one, two = np.array([1.0, 2.0], np.float32), np.array([2.0, 3.0], np.float32)
    with build_request(_aliased(0, -1, 16), model, [one, one.copy()]) as built:  # the same values: fine
        assert built.memories[0].read(0, 8) == one.tobytes()
    with build_request(_aliased(4, -1, 16), model, [one, two]) as built:  # they agree on the 4 shared bytes
        assert built.memories[0].read(0, 12) == one.tobytes() + two[1:].tobytes()
    with pytest.raises(request_module.ConflictingInputsError, match="inputs 0 and 1 share bytes 0..7 of pool 0"):
        build_request(_aliased(0, -1, 16), model, [one, two])


def test_inputs_that_disagree_under_an_output_are_built_for_the_driver_to_refuse() -> None:
    model = _two_input_model()
    one, two = np.array([1.0, 2.0], np.float32), np.array([5.0, 6.0], np.float32)
    # An output over the inputs makes the request invalid (V34), whatever the inputs hold there.
    with build_request(_aliased(0, 0, 16), model, [one, two]) as built:
        assert len(built.memories) == 2


def test_inputs_that_disagree_where_one_does_not_fit_its_pool_are_built_for_the_driver_to_refuse() -> None:
    model = _two_input_model()
    one, two = np.array([1.0, 2.0], np.float32), np.array([5.0, 6.0], np.float32)
    # Input 1 overlaps input 0 and runs past the end of its 10-byte pool (V31): nothing is written.
    with build_request(_aliased(4, -1, 10), model, [one, two]) as built:
        assert built.memories[0].read(0, 10) == bytes(10)

"""The cache file format: a faithful round trip, and a parser that is total on damaged input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driver_under_test import create_device
from driver_under_test._cache_format import (
    HEADER_SIZE,
    CacheFormatError,
    SavedSubgraph,
    deserialize,
    serialize,
)
from driver_under_test.cache import _saved_subgraphs
from harness.hal import (
    DataLocation,
    ExtensionNameAndPrefix,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
    SymmPerChannelQuantParams,
)
from tests.driver.cache.support import chain_model
from tests.driver.models import add_then_mul_model, counting_while_model

LT = OperandLifeTime
CONSTANTS = (LT.CONSTANT_COPY, LT.CONSTANT_REFERENCE)


def _cache_of(model: Model) -> tuple[bytes, bytes]:
    prepared = create_device(faults=[]).compile(model, None)
    saved = _saved_subgraphs(model, prepared.constants)
    return serialize(saved, model.relax_computation_float32_to_float16, [], "numpy", b"program")


def _constant_bytes(model: Model, operand: Operand) -> bytes:
    loc = operand.location
    return bytes(model.operand_values[loc.offset : loc.offset + loc.length])


@pytest.mark.parametrize("build", [add_then_mul_model, counting_while_model, lambda: chain_model(OperationType.ADD, 5)])
def test_a_model_round_trips_with_its_constants_moved_into_the_data_cache(build) -> None:
    model = build()
    cached = deserialize(*_cache_of(model))
    assert (cached.backend, cached.artifact) == ("numpy", b"program")
    rebuilt = cached.model
    assert (
        rebuilt.pools == []
        and rebuilt.relax_computation_float32_to_float16 == model.relax_computation_float32_to_float16
    )
    for before, after in zip([model.main, *model.referenced], [rebuilt.main, *rebuilt.referenced], strict=True):
        assert after.input_indexes == before.input_indexes and after.output_indexes == before.output_indexes
        assert [(o.type, o.inputs, o.outputs) for o in after.operations] == [
            (o.type, o.inputs, o.outputs) for o in before.operations
        ]
        for b, a in zip(before.operands, after.operands, strict=True):
            assert (a.type, a.dimensions, a.number_of_consumers, a.scale, a.zero_point, a.extra_params) == (
                b.type, b.dimensions, b.number_of_consumers, b.scale, b.zero_point, b.extra_params
            )  # fmt: skip
            if b.lifetime in CONSTANTS:
                assert a.lifetime == LT.CONSTANT_COPY
                assert _constant_bytes(rebuilt, a) == _constant_bytes(model, b)
            else:
                assert (a.lifetime, a.location) == (b.lifetime, b.location)


def test_extra_parameters_extensions_and_the_relaxed_flag_round_trip() -> None:
    channel = SymmPerChannelQuantParams(scales=[0.5, 0.25, 1e-30], channel_dim=0)
    operands = [
        Operand(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, [3, 1], 1, lifetime=LT.CONSTANT_COPY, extra_params=channel),
        Operand(0x10001, [2], 0, scale=0.125, zero_point=-3, lifetime=LT.SUBGRAPH_OUTPUT, extra_params=b"\x00ext\xff"),
    ]
    sg = Subgraph(operands, [Operation(0x10002, [0], [1])], [], [1])
    saved = SavedSubgraph(sg, {0: np.array([[1], [-2], [3]], np.int8)})
    rebuilt = deserialize(*serialize([saved], True, [ExtensionNameAndPrefix("com.example.ext", 1)])).model
    a, b = rebuilt.main.operands
    assert a.extra_params == channel and b.extra_params == b"\x00ext\xff"
    assert (b.type, b.scale, b.zero_point) == (0x10001, 0.125, -3) and rebuilt.main.operations[0].type == 0x10002
    assert a.location == DataLocation(0, 0, 3) and bytes(rebuilt.operand_values) == b"\x01\xfe\x03"
    assert rebuilt.relax_computation_float32_to_float16 is True
    assert rebuilt.extension_name_to_prefix == [ExtensionNameAndPrefix("com.example.ext", 1)]


MODEL_CACHE, DATA_CACHE = _cache_of(counting_while_model())


@settings(max_examples=300, deadline=None)
@given(
    cuts=st.lists(st.tuples(st.integers(0, len(MODEL_CACHE)), st.binary(max_size=8)), min_size=1, max_size=4),
    truncate=st.one_of(st.none(), st.integers(0, len(MODEL_CACHE))),
)
def test_damaged_model_caches_decode_or_raise_only_cache_format_error(cuts, truncate) -> None:
    damaged = bytearray(MODEL_CACHE)
    for at, new in cuts:
        damaged[at : at + len(new)] = new
    if truncate is not None:
        del damaged[truncate:]
    try:
        cached = deserialize(bytes(damaged), DATA_CACHE)
    except CacheFormatError:
        return
    assert isinstance(cached.model, Model) and isinstance(cached.artifact, bytes)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_after_a_valid_header_decode_or_raise_only_cache_format_error(tail) -> None:
    try:
        deserialize(MODEL_CACHE[:HEADER_SIZE] + tail, DATA_CACHE)
    except CacheFormatError:
        pass


def test_huge_counts_are_refused_without_allocating() -> None:
    # The subgraph count sits right after header, data hash, data length and relaxed flag.
    at = HEADER_SIZE + 32 + 8 + 1
    damaged = MODEL_CACHE[:at] + b"\xff\xff\xff\xff" + MODEL_CACHE[at + 4 :]
    with pytest.raises(CacheFormatError, match="runs past the end"):
        deserialize(damaged, DATA_CACHE)

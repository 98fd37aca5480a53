"""Properties of generate_model: valid by construction, runnable on the reference, deterministic, terminating,
and covering the features it promises."""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from harness.case import model_from_json
from harness.gen import (
    BytesSource,
    GenerationRejected,
    ModelConfig,
    RandomSource,
    default_operations,
    generate_model,
)
from harness.hal import OperandLifeTime, OperationType, is_scalar_type, numpy_dtype
from harness.reference import validate_model
from harness.strategies import models
from tests.gen.model.generated import generated, reference_failures

L = OperandLifeTime
SEEDS = range(400)


@pytest.fixture(scope="module")
def sample() -> list:
    """Models of the default configuration over a fixed range of seeds."""
    return list(generated(SEEDS))


def test_generated_models_are_always_valid(sample) -> None:
    invalid = [(seed, validate_model(g.model)[:1]) for seed, g in sample if validate_model(g.model)]
    assert invalid == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models())
def test_hypothesis_generated_models_are_always_valid(generated) -> None:
    assert validate_model(generated.model) == []


def test_generated_models_run_on_the_reference(sample) -> None:
    assert [failure for seed, g in sample for failure in reference_failures(seed, g)] == []


def test_model_json_builds_the_same_model(sample) -> None:
    for seed, g in sample[:150]:
        rebuilt = model_from_json(g.model_json)
        try:
            assert rebuilt.main == g.model.main, seed
            assert rebuilt.referenced == g.model.referenced, seed
            assert rebuilt.operand_values == g.model.operand_values, seed
            assert rebuilt.relax_computation_float32_to_float16 == g.model.relax_computation_float32_to_float16
            assert [(p.kind, p.size, p.offset) for p in rebuilt.pools] == [
                (p.kind, p.size, p.offset) for p in g.model.pools
            ], seed
            for a, b in zip(rebuilt.pools, g.model.pools):
                assert a.read(0, a.size) == b.read(0, b.size), seed
        finally:
            for pool in rebuilt.pools:
                pool.close()


def test_inputs_fit_the_model_inputs(sample) -> None:
    for seed, g in sample:
        main = g.model.main
        assert len(g.inputs) == len(main.input_indexes), seed
        for value, index in zip(g.inputs, main.input_indexes):
            operand = main.operands[index]
            if value is None:
                continue  # an optional input given no value at execution
            assert value.dtype == numpy_dtype(operand.type), seed
            if is_scalar_type(operand.type):
                assert value.shape == (), seed
            elif operand.dimensions:
                assert len(operand.dimensions) == value.ndim, seed
                assert all(d in (0, n) for d, n in zip(operand.dimensions, value.shape)), seed


def test_generation_terminates_on_empty_bytes() -> None:
    started = time.monotonic()
    g = generate_model(BytesSource(b""))
    assert time.monotonic() - started < 1.0
    assert len(g.model.main.operations) == 1
    assert validate_model(g.model) == []


def test_generation_terminates_on_short_inputs() -> None:
    # Every input of up to two bytes: a small valid model or GenerationRejected, never a hang.
    started = time.monotonic()
    short = [b""] + [bytes([a]) for a in range(256)] + [bytes([a, b]) for a in range(0, 256, 17) for b in range(256)]
    sizes = []
    for data in short:
        try:
            g = generate_model(BytesSource(data))
        except GenerationRejected:
            continue
        assert validate_model(g.model) == [], data
        sizes.append(len(g.model.main.operations))
    assert time.monotonic() - started < 30.0
    assert sizes and max(sizes) <= ModelConfig().max_operations


def test_same_bytes_same_model() -> None:
    data = bytes((k * 37 + 11) % 256 for k in range(700))
    first = generate_model(BytesSource(data))
    second = generate_model(BytesSource(data))
    assert first.model_json == second.model_json
    assert all(np.array_equal(a, b) for a, b in zip(first.inputs, second.inputs) if a is not None)


def test_same_seed_same_model() -> None:
    for seed in (0, 5, 77):
        assert generate_model(RandomSource(seed)).model_json == generate_model(RandomSource(seed)).model_json


def test_operation_count_respects_the_configuration() -> None:
    config = ModelConfig(max_operations=1, control_flow=False)
    for _, g in generated(range(150), config):
        assert len(g.model.main.operations) == 1
        assert not g.model.referenced


def test_operations_restriction_is_respected() -> None:
    wanted = {int(OperationType.ADD), int(OperationType.CONV_2D)}
    config = ModelConfig(operations=frozenset(wanted), control_flow=False)
    seen = set()
    for _, g in generated(range(100), config):
        ops_used = {int(o.type) for o in g.model.main.operations}
        assert ops_used <= wanted
        seen |= ops_used
    assert seen == wanted


def test_shapes_stay_small_by_default(sample) -> None:
    # Small, unless the model drew a size around a vector width or a long size (then up to
    # vector_width_max_elements: both raise the element limit).
    config = ModelConfig()
    for seed, g in sample:
        wide = any(f.startswith("vector_width:") or f == "long_size" for f in g.features)
        limit = config.vector_width_max_elements if wide else config.max_elements
        for value in g.inputs:
            if value is not None:
                assert value.ndim <= config.max_rank, seed
                assert math.prod(value.shape) <= limit, seed


def test_every_default_operation_is_generated() -> None:
    missing = []
    for op in default_operations():
        config = ModelConfig(operations=frozenset({op}), control_flow=False, max_operations=1)
        found = False
        for _, g in generated(range(12), config):
            assert validate_model(g.model) == [], OperationType(op).name
            if any(int(o.type) == op for o in g.model.main.operations):
                found = True
                break
        if not found:
            missing.append(OperationType(op).name)
    assert missing == []


def test_default_operations_are_the_ones_with_reference_kernels() -> None:
    from harness import ops

    names = {OperationType(o).name for o in default_operations()}
    assert {"ADD", "CONV_2D", "LSTM", "BOX_WITH_NMS_LIMIT", "SVDF"} <= names
    for spec in ops.all_specs():
        if spec.kernel is None:
            assert spec.op.name not in names


def test_every_signature_typing_appears_across_seeds() -> None:
    # For a few operations, every input-0 type of the catalogue's signatures shows up.
    from harness import ops

    for op in (OperationType.ADD, OperationType.CONV_2D, OperationType.CAST, OperationType.RANK):
        expected = {int(s.inputs[0].types[0]) for s in ops.get(op).signatures}
        config = ModelConfig(operations=frozenset({int(op)}), control_flow=False, max_operations=1)
        seen = set()
        for _, g in generated(range(400), config):
            operation = g.model.main.operations[0]
            seen.add(int(g.model.main.operands[operation.inputs[0]].type))
            if seen == expected:
                break
        assert seen == expected, op.name


FEATURES = [
    "lifetime:SUBGRAPH_INPUT",
    "lifetime:SUBGRAPH_OUTPUT",
    "lifetime:TEMPORARY_VARIABLE",
    "lifetime:CONSTANT_COPY",
    "lifetime:CONSTANT_REFERENCE",
    "lifetime:NO_VALUE",
    "lifetime:SUBGRAPH",
    "pool:ashmem",
    "pool:mmap_fd",
    "mmap_offset",
    "control:IF",
    "control:WHILE",
    "quantized",
    "relaxed",
    "unknown_dims",
    "unknown_input_dims",
    "absent_input",
    "parameter_input",
    "fan_in",
    "fan_out",
    "chain",
    "permuted_io",
    "type:TENSOR_QUANT8_SYMM_PER_CHANNEL",
    "type:TENSOR_QUANT16_SYMM",
    "type:TENSOR_QUANT16_ASYMM",
    "type:TENSOR_FLOAT16",
    "type:TENSOR_BOOL8",
]


def test_every_feature_appears_over_the_seeds(sample) -> None:
    counts = Counter(itertools.chain.from_iterable(g.features for _, g in sample))
    assert [f for f in FEATURES if counts[f] == 0] == []
    # The common features are common, not accidents.
    for feature in ("lifetime:CONSTANT_REFERENCE", "control:IF", "control:WHILE", "quantized", "unknown_dims"):
        assert counts[feature] >= len(sample) // 20, feature


def test_features_describe_the_model(sample) -> None:
    for seed, g in sample[:100]:
        lifetimes = {L(o.lifetime).name for sub in [g.model.main, *g.model.referenced] for o in sub.operands}
        assert {f.split(":")[1] for f in g.features if f.startswith("lifetime:")} == lifetimes, seed
        has_if = any(o.type == OperationType.IF for o in g.model.main.operations)
        assert ("control:IF" in g.features) == has_if, seed


def test_control_flow_can_be_switched_off() -> None:
    config = ModelConfig(control_flow=False)
    for _, g in generated(range(200), config):
        assert not g.model.referenced
        assert all(o.type not in (OperationType.IF, OperationType.WHILE) for o in g.model.main.operations)


def test_rejections_are_rare() -> None:
    rejected = sum(1 for seed in range(300) if _rejects(seed))
    assert rejected <= 3


def _rejects(seed: int) -> bool:
    try:
        generate_model(RandomSource(seed))
    except GenerationRejected:
        return True
    return False


def test_closing_a_generated_model_closes_its_pools() -> None:
    seed = next(s for s, g in generated(range(100)) if g.model_json.get("pools"))
    g = generate_model(RandomSource(seed))
    pools = g.model.pools
    assert pools
    g.close()
    assert all(pool.closed for pool in pools)


def test_the_json_is_made_on_first_read_and_equals_the_built_model() -> None:
    g = generate_model(RandomSource(next(s for s, g in generated(range(100)) if g.model_json.get("pools"))))
    assert g._model_json is None
    rebuilt = model_from_json(g.model_json)
    try:
        assert g.model_json is g.model_json
        assert rebuilt.main == g.model.main and rebuilt.referenced == g.model.referenced
        assert rebuilt.operand_values == g.model.operand_values
    finally:
        g.close()
        for pool in rebuilt.pools:
            pool.close()


def test_generation_is_fast_enough_for_fuzzing() -> None:
    # A loose bound (the measured mean is about half a millisecond): generation must not dominate a fuzz target.
    started = time.process_time()
    count = sum(1 for _ in generated(range(200)))
    assert (time.process_time() - started) / count < 0.005

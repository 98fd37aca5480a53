"""Properties of generate_request: valid layouts over real pools, exactly the recorded outputs too small, inputs in
place, every memory kind and layout feature (built into live requests by harness.case.build_request)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from harness.case import build_request
from harness.gen import (
    GenerationRejected,
    RandomSource,
    RequestConfig,
    generate_model,
    generate_request,
)
from harness.gen.requests import BOUNDARY_LOOP_TIMEOUTS
from harness.hal import ErrorStatus, element_size, numpy_dtype
from harness.hal.memory import MemoryKind
from harness.reference import judge_output_sizes, run_model, validate_fenced_request, validate_request
from harness.strategies import models_with_requests


def materialize_request(request_json: dict, model, inputs):
    """(hal.Request, its memories, its output reader) of a generated request."""
    built = build_request(request_json, model, inputs)
    return built.request, built.memories, built.read_outputs


SEEDS = range(300)


def _pairs(seeds, config: RequestConfig = RequestConfig()):  # noqa: B008
    for seed in seeds:
        try:
            generated = generate_model(RandomSource(seed))
        except GenerationRejected:
            continue
        yield seed, generated, generate_request(RandomSource(10**6 + seed), generated, config)


@pytest.fixture(scope="module")
def sample() -> list:
    return list(_pairs(SEEDS, RequestConfig(too_small_probability=0.2)))


def _regions(request_json: dict) -> list[tuple[int, int, int, str]]:
    out = []
    for role in ("inputs", "outputs"):
        for arg in request_json[role]:
            if not arg["hasNoValue"]:
                out.append((arg["poolIndex"], arg["offset"], arg["offset"] + arg["length"], role))
    return out


def test_requests_fit_their_pools(sample) -> None:
    for seed, _, request in sample:
        pools = request.request_json["pools"]
        for pool, start, end, _ in _regions(request.request_json):
            assert 0 <= pool < len(pools), seed
            assert 0 <= start <= end <= pools[pool]["size"], seed
        # Outputs overlap neither each other nor any input.
        regions = _regions(request.request_json)
        for i, (p1, s1, e1, r1) in enumerate(regions):
            for p2, s2, e2, r2 in regions[i + 1 :]:
                if p1 == p2 and "outputs" in (r1, r2) and s1 < e1 and s2 < e2:
                    assert e1 <= s2 or e2 <= s1, seed


def test_generated_requests_are_valid_for_the_reference_validator(sample) -> None:
    for seed, generated, request in sample:
        req, memories, _ = materialize_request(request.request_json, generated.model, generated.inputs)
        try:
            assert validate_request(generated.model, req) == [], seed
        finally:
            for memory in memories:
                memory.close()


def test_too_small_outputs_are_recorded(sample) -> None:
    seen = 0
    for seed, generated, request in sample:
        if "parameter_out_of_range_input" in generated.features:
            assert request.expected.status == ErrorStatus.INVALID_ARGUMENT, seed
            continue
        if "index_out_of_range_input" in generated.features:
            assert request.expected.status in (ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT), seed
            continue
        assert request.expected.status == ErrorStatus.NONE, seed
        lengths = request.output_lengths
        needed = [
            element_size(generated.model.main.operands[i].type) * math.prod(np.shape(v))
            for i, v in zip(generated.model.main.output_indexes, request.expected.outputs)
        ]
        # The reference's output sizes exceed the given lengths exactly for the recorded outputs.
        assert {k for k, (n, length) in enumerate(zip(needed, lengths)) if n > length} == set(request.insufficient)
        status, shapes = judge_output_sizes(generated.model, lengths, request.expected.outputs)
        assert {k for k, s in enumerate(shapes) if not s.is_sufficient} == set(request.insufficient), seed
        seen += bool(request.insufficient)
    assert seen > 0


def test_expected_result_is_the_reference_result(sample) -> None:
    for seed, generated, request in sample[:60]:
        again = run_model(generated.model, generated.inputs)
        assert again.status == request.expected.status, seed
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(again.outputs, request.expected.outputs))


def test_materialized_request_holds_the_inputs(sample) -> None:
    for seed, generated, request in sample:
        req, memories, _ = materialize_request(request.request_json, generated.model, generated.inputs)
        try:
            main = generated.model.main
            for arg, value, index in zip(req.inputs, generated.inputs, main.input_indexes):
                if value is None:
                    assert arg.has_no_value, seed
                    continue
                raw = memories[arg.location.pool_index].read(arg.location.offset, arg.location.length)
                stored = np.frombuffer(raw, dtype=numpy_dtype(main.operands[index].type)).reshape(value.shape)
                assert np.array_equal(stored, value, equal_nan=True), seed
        finally:
            for memory in memories:
                memory.close()


def test_read_outputs_reads_what_the_buffers_hold(sample) -> None:
    for seed, generated, request in sample[:100]:
        req, memories, read_outputs = materialize_request(request.request_json, generated.model, generated.inputs)
        try:
            for k, (arg, value) in enumerate(zip(req.outputs, request.expected.outputs)):
                if k not in request.insufficient:
                    memories[arg.location.pool_index].write(arg.location.offset, np.ascontiguousarray(value).tobytes())
            got = read_outputs([list(np.shape(v)) for v in request.expected.outputs])
            for k, (a, b) in enumerate(zip(got, request.expected.outputs)):
                if k in request.insufficient:
                    assert a is None or b.size == 0, seed
                else:
                    assert np.array_equal(a, b, equal_nan=True), seed
        finally:
            for memory in memories:
                memory.close()


def test_inputs_with_unknown_dimensions_are_given_their_dimensions(sample) -> None:
    for seed, generated, request in sample:
        main = generated.model.main
        for arg, value, index in zip(request.request_json["inputs"], generated.inputs, main.input_indexes):
            dims = main.operands[index].dimensions
            if value is not None and value.ndim and (not dims or 0 in dims):
                assert arg["dimensions"] == list(value.shape), seed


def test_request_layouts_cover_every_memory_kind_and_feature(sample) -> None:
    counts: Counter = Counter()
    for _, generated, request in sample:
        pools = request.request_json["pools"]
        counts.update(p["kind"] for p in pools)
        counts["mmap_offset"] += any(p.get("offset") for p in pools)
        counts["several_pools"] += len(pools) > 1
        regions = _regions(request.request_json)
        counts["shared_pool"] += len({p for p, *_ in regions}) < len(regions)
        counts["omitted_dims"] += any(not a["dimensions"] for a in request.request_json["inputs"])
        counts["given_dims"] += any(a["dimensions"] for a in request.request_json["inputs"])
        counts["unknown_output_left"] += any(
            not a["dimensions"] and 0 in generated.model.main.operands[i].dimensions
            for a, i in zip(request.request_json["outputs"], generated.model.main.output_indexes)
        )
        counts["no_value_input"] += any(a["hasNoValue"] for a in request.request_json["inputs"])
    wanted = [k.value for k in (MemoryKind.ASHMEM, MemoryKind.MMAP_FD, MemoryKind.HARDWARE_BUFFER_BLOB)]
    wanted += ["mmap_offset", "several_pools", "shared_pool", "omitted_dims", "given_dims", "unknown_output_left"]
    wanted += ["no_value_input"]
    assert [k for k in wanted if counts[k] == 0] == []


def test_fully_specified_requests_pass_the_fenced_rules(sample) -> None:
    checked = 0
    for seed, generated, request in sample:
        main = generated.model.main
        outputs = request.request_json["outputs"]
        specified = all(
            _fully_specified(main.operands[i].dimensions) or _fully_specified(a["dimensions"])
            for a, i in zip(outputs, main.output_indexes)
        )
        if not specified or any(np.size(v) == 0 for v in request.expected.outputs):
            continue
        req, memories, _ = materialize_request(request.request_json, generated.model, generated.inputs)
        try:
            assert validate_fenced_request(generated.model, req) == [], seed
        finally:
            for memory in memories:
                memory.close()
        checked += 1
    assert checked > 0


def _fully_specified(dims: list[int]) -> bool:
    return bool(dims) and 0 not in dims


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(models_with_requests())
def test_hypothesis_requests_are_valid(pair) -> None:
    generated, request = pair
    req, memories, _ = materialize_request(request.request_json, generated.model, generated.inputs)
    try:
        assert validate_request(generated.model, req) == []
    finally:
        for memory in memories:
            memory.close()


def test_request_configuration_limits_kinds_and_small_outputs() -> None:
    config = RequestConfig(kinds=(MemoryKind.MMAP_FD.value,), too_small_probability=0.0, max_pools=1)
    for seed, _, request in _pairs(range(60), config):
        assert [p["kind"] for p in request.request_json["pools"]] == ["mmap_fd"], seed
        assert not request.insufficient, seed


def test_requests_draw_every_boundary_loop_timeout_and_the_reference_runs_with_it() -> None:
    config = RequestConfig(loop_timeouts=BOUNDARY_LOOP_TIMEOUTS)
    drawn = Counter()
    for _, generated, request in _pairs(range(80), config):
        drawn[request.loop_timeout_ns] += 1
        if request.loop_timeout_ns == 0 and request.expected.status == ErrorStatus.NONE:
            # No WHILE ran out of time: the same outputs as with no loop timeout given.
            plain = run_model(generated.model, generated.inputs)
            assert all(np.array_equal(a, b) for a, b in zip(plain.outputs, request.expected.outputs))
    assert set(drawn) == set(BOUNDARY_LOOP_TIMEOUTS)


def test_without_drawn_loop_timeouts_the_configured_one_applies() -> None:
    for _, _, request in _pairs(range(10), RequestConfig(loop_timeout_ns=5)):
        assert request.loop_timeout_ns == 5

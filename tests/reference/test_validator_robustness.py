"""Property: the validator answers every model, however malformed, with registered violations and never raises.

The oracle judges fuzzed models; an exception in it would be a harness failure posing as a finding.
"""

from __future__ import annotations

import copy
import functools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.case import model_from_json
from harness.case.conformance import iter_vector_json, normalize_vector_model
from harness.hal import DataLocation, Model, Request, RequestArgument, SymmPerChannelQuantParams
from harness.hal.memory import create_ashmem
from harness.reference import RULES, Violation, validate_fenced_request, validate_model, validate_request
from tests.reference.conftest import add_model, chain_model, if_model, per_channel_conv_model, pool_model

EDGE_INTS = [-(2**31), -1, 0, 1, 2, 3, 4, 5, 6, 15, 16, 255, 256, 9999, 10000, 10001, 65535, 65536, 2**32 - 1, 2**32]


@functools.cache
def seed_models() -> tuple[Model, ...]:
    """Hand-built models (all lifetimes, control flow, per-channel) and every 50th conformance model."""
    vectors = [model_from_json(normalize_vector_model(d["model"])) for d, _ in list(iter_vector_json())[::50]]
    return (add_model(), chain_model(), pool_model(), per_channel_conv_model(), if_model(), *vectors)


edge_int = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-4, 40))


@st.composite
def mutated_models(draw: st.DrawFn) -> Model:
    seed = draw(st.sampled_from(seed_models()))
    model = copy.deepcopy(seed, {id(p): p for p in seed.pools})  # shared memory is shared, not copied
    graphs = [model.main, *model.referenced]
    for _ in range(draw(st.integers(1, 3))):
        graph = draw(st.sampled_from(graphs))
        o = draw(st.sampled_from(graph.operands))
        op = draw(st.sampled_from(graph.operations))
        field = draw(st.sampled_from(["type", "dims", "lifetime", "location", "quant", "params", "op", "io"]))
        if field == "type":
            o.type = draw(edge_int)
        elif field == "dims":
            o.dimensions = draw(st.lists(edge_int, max_size=5))
        elif field == "lifetime":
            o.lifetime = draw(st.integers(-1, 8))
        elif field == "location":
            o.location = DataLocation(draw(edge_int), draw(edge_int), draw(edge_int))
        elif field == "quant":
            o.scale = draw(st.sampled_from([0.0, -1.0, 0.5, math.nan, math.inf]))
            o.zero_point = draw(edge_int)
        elif field == "params":
            scales = draw(st.lists(st.sampled_from([0.5, 0.0, -1.0]), max_size=4))
            o.extra_params = draw(st.sampled_from([None, b"\x00", SymmPerChannelQuantParams(scales, draw(edge_int))]))
        elif field == "op":
            op.type = draw(st.one_of(edge_int, st.integers(0, 101)))
        else:
            target = draw(st.sampled_from([op.inputs, op.outputs, graph.input_indexes, graph.output_indexes]))
            if target and draw(st.booleans()):
                target[draw(st.integers(0, len(target) - 1))] = draw(edge_int)
            else:
                target.append(draw(edge_int))
    return model


def assert_well_formed(found: list[Violation]) -> None:
    for v in found:
        assert v.rule in RULES
        assert v.message
        if v.rule != "model.operation.signature":  # its V number depends on the mismatch
            assert v.v == RULES[v.rule].v


@settings(max_examples=300, deadline=None)
@given(mutated_models())
def test_validate_model_answers_any_mutated_model_with_registered_rules(model: Model) -> None:
    assert_well_formed(validate_model(model))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), edge_int, edge_int, edge_int, st.lists(edge_int, max_size=3)), min_size=0, max_size=4
    ),
    st.integers(0, 3),
)
def test_validate_request_answers_any_request_with_registered_rules(
    args: list[tuple[bool, int, int, int, list[int]]], split: int
) -> None:
    arguments = [
        RequestArgument(no_value, DataLocation(pool, offset, length), dims)
        for no_value, pool, offset, length, dims in args
    ]
    request = Request(inputs=arguments[:split], outputs=arguments[split:], pools=[create_ashmem(16)])
    model = add_model(a_dims=(0,), out_dims=())
    assert_well_formed(validate_request(model, request))
    assert_well_formed(validate_fenced_request(model, request))

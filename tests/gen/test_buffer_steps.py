"""Steps on a driver-managed buffer (harness.gen.buffer_steps): plain JSON, copies of the right size, legal
executions within the buffer's roles, and each misuse breaking D16 the way its label says."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from harness.gen import GenerationRejected, RandomSource, generate_model
from harness.gen.buffer_steps import (
    BAD_TOKENS,
    COPY_KINDS,
    DEFAULT_STEPS,
    declared_roles,
    plan_steps,
    role_candidates,
    value_shapes,
)
from harness.gen.model import ModelConfig
from harness.gen.roles import INPUT, OUTPUT, Allocation, break_roles, generate_roles
from harness.hal import has_unknown_dimensions, is_scalar_type, merge_dimensions
from harness.paths import PATHS
from tests.driver.models import add_model

CONFIG = ModelConfig(max_operations=2, control_flow=False)
SEEDS = range(200)


def _plan(seed: int, kinds=DEFAULT_STEPS, max_steps: int = 8, broken: bool = False):
    """(generated models, allocation, steps) for a seed, or None when generation is rejected."""
    src = RandomSource(seed)
    try:
        generated = [generate_model(src, CONFIG)]
        if src.boolean():
            generated.append(generate_model(src, CONFIG))
        models = [g.model for g in generated]
        allocation = generate_roles(src, models, candidates=role_candidates(generated), shapes=value_shapes(generated))
        if broken:
            allocation = break_roles(src, models, allocation)
    except GenerationRejected:
        return None
    try:
        return generated, allocation, plan_steps(src, generated, allocation, tuple(PATHS), kinds, max_steps)
    finally:
        for g in generated:
            g.close()


@pytest.fixture(scope="module")
def planned():
    return [p for p in map(_plan, SEEDS) if p is not None]


def test_an_invalid_allocation_gets_no_steps() -> None:
    found = [p for p in (_plan(seed, broken=True) for seed in range(40)) if p is not None]
    assert found
    for _, allocation, steps in found:
        assert not allocation.valid and steps == []


def test_steps_are_json_drawn_the_same_from_the_same_choices(planned) -> None:
    assert len(planned) > 150
    for seed in range(20):
        first, again = _plan(seed), _plan(seed)
        if first is not None:
            assert json.dumps(first[2], allow_nan=False) == json.dumps(again[2], allow_nan=False)
    for _, _, steps in planned:
        assert 1 <= len(steps) <= 8
        assert json.loads(json.dumps(steps, allow_nan=False)) == steps


def test_the_kinds_and_the_step_budget_are_honoured() -> None:
    for seed in range(40):
        plan = _plan(seed, kinds=(("copy_to", 1.0),), max_steps=3)
        if plan is not None:
            assert [s["op"] for s in plan[2]] == ["copyTo"] * len(plan[2]) and 1 <= len(plan[2]) <= 3


def test_copies_come_out_the_right_size(planned) -> None:
    checked = 0
    for _, allocation, steps in planned:
        allocated = allocation.dimensions
        scalar = is_scalar_type(allocation.operand_type)
        for step in steps:
            if step["op"] == "copyTo":
                assert step["kind"] in COPY_KINDS and step["fallbackBytes"] > 0
                continue
            if step["op"] != "copyFrom":
                continue
            assert step["kind"] in COPY_KINDS
            dims = step["dims"]
            if step["sizeDelta"] or (scalar and dims):
                continue  # a wrong size or dimensions on purpose
            if not dims:
                if scalar or not has_unknown_dimensions(allocated):  # the allocated dimensions
                    assert len(step["value"]) == (1 if scalar else math.prod(allocated))
                    checked += 1
            elif 0 not in dims and merge_dimensions(allocated, dims) is not None:
                assert len(step["value"]) == math.prod(dims)
                checked += 1
    assert checked > 100


def test_legal_executions_stay_within_the_roles_and_misuses_break_d16(planned) -> None:
    seen = set()
    for generated, allocation, steps in planned:
        declared = declared_roles(allocation, len(generated))
        for step in (s for s in steps if s["op"] == "execute"):
            k, ins, outs = step["model"], step["inputs"], step["outputs"]
            main = generated[k].model.main
            assert step["path"] in PATHS
            assert all(0 <= i < len(main.input_indexes) for i in ins)
            assert all(0 <= o < len(main.output_indexes) for o in outs)
            misuse = step.get("misuse")
            seen.add(misuse)
            if misuse is None:
                assert set(ins) <= declared[k][INPUT] and set(outs) <= declared[k][OUTPUT]
                assert not (ins and outs) and len(outs) <= 1
            elif misuse == "wrong_role":
                assert not (set(ins) <= declared[k][INPUT] and set(outs) <= declared[k][OUTPUT])
            elif misuse == "wrong_model":
                assert step["prepared"] == "other"
            elif misuse == "bad_token":
                assert step["token"] in BAD_TOKENS
            elif misuse == "input_and_output":
                assert ins and outs
            elif misuse == "two_outputs":
                assert len(outs) == 2 and outs[0] != outs[1]
            elif misuse == "conflicting_dims":
                # with the allocated dimensions, or (unknown rank) with the content an input would give
                assert merge_dimensions(allocation.dimensions, step["dims"]) is None or (
                    not allocation.dimensions and ins
                )
    assert seen >= {None, "wrong_role", "wrong_model", "bad_token", "input_and_output", "conflicting_dims"}


def test_declared_roles_name_io_indexes_of_case_models_only() -> None:
    allocation = Allocation(
        desc=[],
        prepared=[{"model": 1}, {"foreign": True}, {"model": 0}],
        input_roles=[
            {"modelIndex": 0, "ioIndex": 2, "frequency": 1.0},
            {"modelIndex": 1, "ioIndex": 5, "frequency": 1.0},  # another device's prepared model
            {"modelIndex": 7, "ioIndex": 0, "frequency": 1.0},  # past the list
        ],
        output_roles=[{"modelIndex": 2, "ioIndex": 0, "frequency": 1.0}],
    )
    assert declared_roles(allocation, 2) == [{INPUT: set(), OUTPUT: {0}}, {INPUT: {2}, OUTPUT: set()}]


def test_roles_may_name_outputs_and_the_inputs_generated_with_a_value() -> None:
    a = np.zeros((2, 2), np.float32)
    generated = [SimpleNamespace(model=add_model(), inputs=[a, None], outputs=[np.zeros((2, 3), np.float32)])]
    assert [io.key for io in role_candidates(generated)] == [(0, INPUT, 0), (0, OUTPUT, 0)]
    assert value_shapes(generated) == {(0, INPUT, 0): (2, 2), (0, OUTPUT, 0): (2, 3)}

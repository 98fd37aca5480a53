"""Buffer roles (harness.gen.roles): valid allocations meet every clause of D15, each invalid one breaks the clause
it is labelled with, unknown dimensions and ranks appear, and allocations survive JSON.

The clauses are checked by `d15_breaches`, written here from the text of D15 (not from the generator).
"""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from harness.gen import GenerationRejected, RandomSource, generate_model
from harness.gen.model import ModelConfig
from harness.gen.roles import (
    DEVICE,
    DIMENSIONS,
    FREQUENCY,
    INVALID_ROLE_MUTATIONS,
    IO_INDEX,
    MODEL_INDEX,
    NO_ROLES,
    OPERANDS_AGREE,
    UNIQUE,
    Allocation,
    break_roles,
    generate_roles,
    io_operands,
)
from harness.hal import BufferDesc, BufferRole, Model, SymmPerChannelQuantParams, is_scalar_type

CONFIG = ModelConfig(max_operations=2, control_flow=False)
SEEDS = range(250)


def _models(seed: int) -> list[Model] | None:
    """One model, the same model twice, or two different ones."""
    try:
        first = generate_model(RandomSource(seed), CONFIG)
        if seed % 3 == 0:
            return [first.model]
        if seed % 3 == 1:
            return [first.model, first.model]
        return [first.model, generate_model(RandomSource(10_000 + seed), CONFIG).model]
    except GenerationRejected:
        return None


@pytest.fixture(scope="module")
def sample() -> list[tuple[int, list[Model], Allocation]]:
    out = []
    for seed in SEEDS:
        models = _models(seed)
        if models is not None:
            out.append((seed, models, generate_roles(RandomSource(seed), models)))
    return out


def _extra(operand: object) -> object:
    extra = operand.extra_params  # type: ignore[attr-defined]
    if isinstance(extra, SymmPerChannelQuantParams):
        return (tuple(extra.scales), extra.channel_dim)
    return extra


def _merge(a: list[int], b: list[int]) -> list[int] | None:
    if not a or not b:
        return list(a or b)
    if len(a) != len(b) or any(x and y and x != y for x, y in zip(a, b)):
        return None
    return [x or y for x, y in zip(a, b)]


def d15_breaches(models: list[Model], a: Allocation) -> set[str]:
    """The clauses of D15 an allocation breaks (a prepared model listed twice is one prepared model)."""
    found = set()
    if not a.input_roles and not a.output_roles:
        found.add(NO_ROLES)
    if any("model" not in p for p in a.prepared):
        found.add(DEVICE)
    seen, operands = set(), []
    for output, roles in ((False, a.input_roles), (True, a.output_roles)):
        for role in roles:
            if not 0 < role["frequency"] <= 1:  # NaN fails too
                found.add(FREQUENCY)
            if not 0 <= role["modelIndex"] < len(a.prepared):
                found.add(MODEL_INDEX)
                continue
            entry = a.prepared[role["modelIndex"]]
            if "model" not in entry:
                continue
            main = models[entry["model"]].main
            indexes = main.output_indexes if output else main.input_indexes
            if not 0 <= role["ioIndex"] < len(indexes):
                found.add(IO_INDEX)
                continue
            key = (entry["model"], output, role["ioIndex"])
            if key in seen:
                found.add(UNIQUE)
            seen.add(key)
            operands.append(main.operands[indexes[role["ioIndex"]]])
    if len({(int(o.type), o.scale, o.zero_point, repr(_extra(o))) for o in operands}) > 1:
        found.add(OPERANDS_AGREE)
    dims: list[int] | None = list(a.desc)
    for operand in operands:
        dims = _merge(dims, list(operand.dimensions)) if dims is not None else None
    if dims is None or (operands and is_scalar_type(operands[0].type) and a.desc):
        found.add(DIMENSIONS)
    return found


def test_valid_allocations_meet_every_clause_of_d15(sample) -> None:
    assert len(sample) > 150
    for seed, models, a in sample:
        assert a.valid and a.rule is None, seed
        assert d15_breaches(models, a) == set(), (seed, a)
        assert a.prepared == [{"model": k} for k in range(len(models))]


def test_the_allocated_dimensions_merge_the_descriptor_and_every_role(sample) -> None:
    for seed, models, a in sample:
        operands = [
            models[r["modelIndex"]].main.operands[
                (models[r["modelIndex"]].main.output_indexes if out else models[r["modelIndex"]].main.input_indexes)[
                    r["ioIndex"]
                ]
            ]
            for out, roles in ((False, a.input_roles), (True, a.output_roles))
            for r in roles
        ]
        dims: list[int] = list(a.desc)
        for operand in operands:
            dims = _merge(dims, list(operand.dimensions))  # type: ignore[assignment]
        assert a.dimensions == dims, seed
        assert a.operand_type == int(operands[0].type), seed


def test_unknown_dimensions_and_ranks_appear(sample) -> None:
    seen = Counter()
    for _, _, a in sample:
        if is_scalar_type(a.operand_type):
            seen["scalar"] += 1
            continue
        seen["desc of unknown rank"] += a.desc == []
        seen["desc with an unknown dimension"] += 0 in a.desc
        seen["allocated rank unknown"] += a.dimensions == []
        seen["allocated dimension unknown"] += 0 in (a.dimensions or [])
        seen["several roles"] += len(a.input_roles) + len(a.output_roles) > 1
        seen["input and output roles"] += bool(a.input_roles and a.output_roles)
        seen["roles on two models"] += len({r["modelIndex"] for r in a.input_roles + a.output_roles}) > 1
    for what in (
        "desc of unknown rank",
        "desc with an unknown dimension",
        "allocated dimension unknown",
        "several roles",
        "input and output roles",
        "roles on two models",
    ):
        assert seen[what] > 0, (what, seen)


def test_roles_name_only_the_candidates_given() -> None:
    models = _models(1)
    assert models is not None
    outputs = [io for io in io_operands(models) if io.direction == "output"]
    for seed in range(30):
        a = generate_roles(RandomSource(seed), models, candidates=outputs)
        assert a.input_roles == [] and a.output_roles, seed


def test_no_candidate_rejects_generation() -> None:
    models = _models(0)
    assert models is not None
    with pytest.raises(GenerationRejected):
        generate_roles(RandomSource(0), models, candidates=[])


# Clauses a mutation may break next to its own: a role of another type may also disagree on dimensions.
ALSO = {"operand_mismatch": {DIMENSIONS}}


@pytest.mark.parametrize("name", sorted(INVALID_ROLE_MUTATIONS))
def test_each_invalid_allocation_breaks_the_clause_it_is_labelled_with(name: str, sample) -> None:
    mutation = INVALID_ROLE_MUTATIONS[name][0]
    applied = 0
    for seed, models, a in sample:
        try:
            broken = break_roles(RandomSource(seed), models, a, names=[name])
        except GenerationRejected:
            continue
        applied += 1
        assert not broken.valid and broken.rule == mutation.rule, (seed, broken)
        assert broken.mutation is not None
        breaches = d15_breaches(models, broken)
        assert mutation.rule in breaches, (seed, broken, breaches)
        assert breaches <= {mutation.rule} | ALSO.get(name, set()), (seed, broken, breaches)
        assert d15_breaches(models, a) == set(), "break_roles changed its argument"
    assert applied > 0, f"{name} never applied"


def test_operand_mismatches_are_labelled_by_the_first_field_that_differs(sample) -> None:
    names = Counter()
    for seed, models, a in sample:
        try:
            broken = break_roles(RandomSource(seed), models, a, names=["operand_mismatch"])
        except GenerationRejected:
            continue
        names[broken.mutation] += 1
    assert names["type_mismatch"] > 0, names
    assert set(names) <= {"type_mismatch", "scale_mismatch", "zero_point_mismatch", "extra_params_mismatch"}


def test_break_roles_refuses_an_invalid_allocation(sample) -> None:
    seed, models, a = sample[0]
    broken = break_roles(RandomSource(seed), models, a, names=["no_roles"])
    with pytest.raises(ValueError):
        break_roles(RandomSource(seed), models, broken)


def _same(a: Allocation, b: Allocation) -> bool:
    def key(x: Allocation) -> str:
        d = x.to_json()
        return json.dumps(d, sort_keys=True)

    return key(a) == key(b)


def test_allocations_survive_strict_json_with_non_finite_frequencies(sample) -> None:
    for seed, models, a in sample[:60]:
        for name in ("frequency_nan", "frequency_above_one", "no_roles", "foreign_prepared_model"):
            broken = break_roles(RandomSource(seed), models, a, names=[name])
            text = json.dumps(broken.to_json(), allow_nan=False)
            back = Allocation.from_json(json.loads(text))
            assert _same(back, broken), seed
            freqs = [r["frequency"] for r in back.input_roles + back.output_roles]
            assert all(isinstance(f, float) for f in freqs)
            if name == "frequency_nan":
                assert any(math.isnan(f) for f in freqs)


def test_hal_gives_the_descriptor_and_roles_as_hal_structures() -> None:
    a = Allocation(
        desc=[2, 0],
        prepared=[{"model": 0}],
        input_roles=[{"modelIndex": 0, "ioIndex": 1, "frequency": 0.5}],
        output_roles=[{"modelIndex": 0, "ioIndex": 0, "frequency": 1.0}],
    )
    assert a.hal() == (BufferDesc([2, 0]), [BufferRole(0, 1, 0.5)], [BufferRole(0, 0, 1.0)])

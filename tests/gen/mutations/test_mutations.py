"""The invalid-input mutations: the registry, coverage of the V catalogue, the oracle's agreement with every
mutation, and that a mutation never touches its input."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.case import model_from_json, model_to_json
from harness.gen import ModelConfig, RandomSource, generate_model
from harness.gen.mutations import (
    KINDS,
    MUTATIONS,
    Mutation,
    _registry,
    apply_mutation,
    apply_random,
    mutations_for,
    operation_mutations,
)
from harness.gen.mutations._registry import mutation, register
from harness.gen.source import GenerationRejected
from harness.hal import Model, OperandType
from harness.reference import validate_model
from tests.gen.mutations.test_mutation_support import (
    DataSource,
    SeededSource,
    agrees,
    hand_built_models,
    hand_built_requests,
    model_subjects,
    request_subjects,
    verdict,
)
from tests.reference.conftest import add_model, add_request

EXPECTED_RULES = {
    "model": {f"V{n}" for n in (*range(1, 21), 23, 24, 25)},
    "preparation": {"V21", "V22"},
    "request": {f"V{n}" for n in range(30, 37)},
    "fenced_request": {"V37"},
}
# Mutations that find a place in every valid subject (every model has an operand, an operation, a main subgraph;
# every request subject has an input and an output with a value in shared memory).
UNIVERSAL = {
    "operand_type_negative",
    "operand_type_after_subgraph",
    "operand_type_below_oem",
    "operand_type_after_oem",
    "operand_type_undeclared_extension",
    "consumer_count_wrong",
    "location_on_non_constant",
    "model_output_unlisted",
    "non_input_listed_as_input",
    "non_output_listed_as_output",
    "operation_duplicated",
    "operation_type_after_rank",
    "operation_type_below_oem",
    "operation_type_after_oem",
    "operation_type_undeclared_extension",
    "operation_input_index_out_of_range_added",
    "operation_output_index_out_of_range",
    "operation_output_index_out_of_range_added",
    "unwritten_temporary_added",
    "unwritten_model_output_added",
    "operation_removed",
    "every_operation_removed",
    "dangling_subgraph_operand_added",
    "preference_out_of_range",
    "priority_out_of_range",
    "argument_removed",
    "argument_added",
    "argument_pool_index_out_of_range",
    "no_value_with_dimensions",
}
# Seeds per subject: the conformance sample is wide, the hand-built subjects are few and varied.
CONFORMANCE_SEEDS = 1
HAND_BUILT_SEEDS = 4


def subjects_for(m: Mutation) -> list[tuple[str, Any, int]]:
    """(name, subject, seed) pairs a mutation is tried on."""
    if m.kind == "preparation":
        return [("preparation", None, seed) for seed in range(20)]
    if m.kind == "model":
        hand = set(hand_built_models())
        pairs = [(name, model) for name, model in model_subjects()]
    else:
        hand = {s.name for s in hand_built_requests()}
        pairs = [(s.name, (s.model, s.request)) for s in request_subjects() if m.kind == "request" or s.fenced_valid]
    return [
        (name, subject, seed)
        for name, subject in pairs
        for seed in range(HAND_BUILT_SEEDS if name in hand else CONFORMANCE_SEEDS)
    ]


def snapshot(m: Mutation, subject: Any) -> Any:
    """A comparable picture of a subject (the case-format JSON of a model; a request's full repr)."""
    if subject is None:
        return None
    if isinstance(subject, Model):
        return model_to_json(subject)
    model, request = subject
    return model_to_json(model), repr(request)


# ---------------------------------------------------------------------------------------------------------------
# The registry


def test_every_rule_of_the_v_catalogue_has_a_mutation_of_its_kind() -> None:
    for kind, rules in EXPECTED_RULES.items():
        assert {m.v for m in mutations_for(kind)} == rules, kind


def test_rules_with_distinct_forms_have_a_mutation_per_form() -> None:
    forms = Counter(m.v for m in MUTATIONS.values())
    assert forms["V2"] >= 4 and forms["V4"] >= 3 and forms["V23"] >= 3 and forms["V34"] >= 2
    # V2: the four out-of-range numbers of the catalogue are all produced.
    produced = set()
    for m in mutations_for("model"):
        if m.v == "V2":
            mutated = m.apply(add_model(), SeededSource(0))
            produced |= {int(o.type) for o in mutated.main.operands} - {int(t) for t in OperandType}
    assert {-1, 16, 9999, 10002} <= produced


def test_every_mutation_is_labelled_and_described() -> None:
    for name, m in MUTATIONS.items():
        assert m.name == name and m.kind in KINDS and m.v.startswith("V") and m.description
        assert name.isidentifier() and name.islower()


def test_registering_a_name_twice_is_an_error() -> None:
    existing = next(iter(MUTATIONS.values()))
    with pytest.raises(RuntimeError, match="registered twice"):
        register(existing)
    with pytest.raises(RuntimeError, match="registered twice"):
        mutation(existing.name, "V1", "model", "again")(lambda model, source: model)
    assert MUTATIONS[existing.name] is existing


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(ValueError):
        mutations_for("burst")
    with pytest.raises(ValueError):
        register(Mutation("x_unknown_kind", "V1", "burst", "no such kind", lambda: None))  # type: ignore[arg-type]
    assert "x_unknown_kind" not in MUTATIONS


# ---------------------------------------------------------------------------------------------------------------
# The oracle agrees with every mutation


def test_every_subject_is_valid_before_mutation() -> None:
    from harness.reference import validate_fenced_request, validate_request

    for name, model in model_subjects():
        assert validate_model(model) == [], name
    for s in request_subjects():
        assert validate_request(s.model, s.request) == [], s.name
        if s.fenced_valid:
            assert validate_fenced_request(s.model, s.request) == [], s.name


@pytest.mark.parametrize("m", list(MUTATIONS.values()), ids=list(MUTATIONS))
def test_each_mutation_is_rejected_by_the_reference_validator_under_its_rule(m: Mutation) -> None:
    applied, disagreements = 0, []
    subjects = subjects_for(m)
    for name, subject, seed in subjects:
        try:
            mutated = apply_mutation(m, subject, SeededSource(seed))
        except GenerationRejected:
            assert m.name not in UNIVERSAL, f"{m.name} found no place in {name}"
            continue
        applied += 1
        found = verdict(m, subject, mutated)
        if not agrees(m, found):
            disagreements.append((name, seed, [(v.rule, v.v) for v in found]))
    assert applied > 0, f"{m.name} applies to none of {len(subjects)} subjects"
    assert disagreements == [], f"{len(disagreements)} of {applied}: {disagreements[:5]}"


SUBJECT_MUTATIONS = [m for m in MUTATIONS.values() if m.kind != "preparation"]


@pytest.mark.parametrize("m", SUBJECT_MUTATIONS, ids=[m.name for m in SUBJECT_MUTATIONS])
def test_mutations_never_modify_their_input(m: Mutation) -> None:
    if m.kind == "model":
        subjects = [*hand_built_models().values(), *(model for _, model in model_subjects()[::25])]
    else:
        subjects = [(s.model, s.request) for s in (*hand_built_requests(), *request_subjects()[::10])]
    for subject in subjects:
        for seed in range(3):
            before = snapshot(m, subject)
            try:
                apply_mutation(m, subject, SeededSource(seed))
            except GenerationRejected:
                pass
            assert snapshot(m, subject) == before


@pytest.mark.parametrize("m", mutations_for("model"), ids=[m.name for m in mutations_for("model")])
def test_mutated_models_survive_the_case_format(m: Mutation) -> None:
    # Findings are stored as case JSON: a mutated model must come back the same and still be rejected the same way.
    for name, model in [*hand_built_models().items(), *model_subjects()[::40]]:
        try:
            mutated = m.apply(model, SeededSource(3))
        except GenerationRejected:
            continue
        back = model_from_json(model_to_json(mutated))
        assert model_to_json(back) == model_to_json(mutated), name
        assert sorted(v.rule for v in validate_model(back)) == sorted(v.rule for v in validate_model(mutated)), name


def test_pool_memories_are_shared_not_copied() -> None:
    model, request = add_request()
    model.pools = list(request.pools)
    mutated = MUTATIONS["consumer_count_wrong"].apply(model, SeededSource(0))
    assert mutated.pools[0] is model.pools[0]
    mutated_request = MUTATIONS["argument_dimension_conflict"].apply(model, request, SeededSource(0))
    assert mutated_request.pools[0] is request.pools[0]


# ---------------------------------------------------------------------------------------------------------------
# Forms a check is most likely to get wrong


def test_each_location_field_alone_is_drawn_off_zero_often() -> None:
    # A check comparing pool, offset and length with 0 together is wrong first on a single field.
    m = MUTATIONS["location_on_non_constant"]
    model = add_model()
    before = [o.location for o in model.main.operands]
    alone: Counter = Counter()
    draws = 400
    for seed in range(draws):
        after = [o.location for o in m.apply(model, SeededSource(seed)).main.operands]
        (moved,) = [b for a, b in zip(before, after) if a != b]
        fields = [f for f in ("pool_index", "offset", "length") if getattr(moved, f) != 0]
        if len(fields) == 1:
            alone[fields[0]] += 1
    assert all(alone[f] >= draws // 8 for f in ("pool_index", "offset", "length")), alone


def test_a_subgraph_emptied_of_operations_keeps_only_operands_to_be_written() -> None:
    from harness.gen.mutations._common import WRITTEN_LIFETIMES

    for name, model in hand_built_models().items():
        mutated = MUTATIONS["every_operation_removed"].apply(model, SeededSource(0))
        main = mutated.main
        assert main.operations == [] and main.input_indexes == [] and mutated.referenced == [], name
        assert main.operands and all(int(o.lifetime) in WRITTEN_LIFETIMES for o in main.operands), name
        assert all(o.number_of_consumers == 0 for o in main.operands), name
        # Refused for what it is: nothing writes those operands (V14), in a subgraph without operations.
        assert {v.rule for v in validate_model(mutated)} == {"model.operand.never_written", "model.subgraph.empty"}


def test_a_scale_that_is_not_a_number_is_drawn_in_several_kinds() -> None:
    kinds = set()
    for seed in range(60):
        mutated = MUTATIONS["scale_not_a_number"].apply(add_model(), SeededSource(seed))
        kinds |= {type(o.scale).__name__ for o in mutated.main.operands if not isinstance(o.scale, float)}
    assert kinds == {"NoneType", "str", "list"}


# ---------------------------------------------------------------------------------------------------------------
# apply_random


def _subject_for(kind: str, index: int) -> Any:
    if kind == "model":
        return list(hand_built_models().values())[index % len(hand_built_models())]
    if kind == "preparation":
        return None
    subjects = [s for s in hand_built_requests() if kind == "request" or s.fenced_valid]
    s = subjects[index % len(subjects)]
    return s.model, s.request


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["model", "request", "preparation"]), index=st.integers(0, 20), data=st.data())
def test_a_randomly_applied_mutation_is_rejected_by_the_reference_validator(kind: str, index: int, data: Any) -> None:
    subject = _subject_for(kind, index)
    m, mutated = apply_random(kind, subject, DataSource(data))
    assert m.kind == kind
    assert agrees(m, verdict(m, subject, mutated))


def test_apply_random_rejects_a_subject_no_mutation_of_the_kind_fits() -> None:
    # Fenced mutations need an output of unknown dimensions; add_model's are all known.
    with pytest.raises(GenerationRejected):
        apply_random("fenced_request", add_request(), SeededSource(0))


def test_apply_random_tries_another_mutation_when_the_chosen_one_rejects(monkeypatch: pytest.MonkeyPatch) -> None:
    def reject(model: Model, source: Any) -> Model:
        raise GenerationRejected("never fits")

    never = Mutation("never_fits", "V1", "model", "rejects every subject", reject)
    fits = Mutation("always_fits", "V2", "model", "accepts every subject", lambda model, source: model)
    monkeypatch.setattr(_registry, "MUTATIONS", {"never_fits": never, "always_fits": fits})
    for seed in range(10):
        assert apply_random("model", add_model(), SeededSource(seed))[0] is fits


def test_apply_random_terminates_when_the_source_is_exhausted() -> None:
    for kind in ("model", "request", "preparation"):
        subject = _subject_for(kind, 0)
        m, mutated = apply_random(kind, subject, SeededSource(0, budget=0))
        assert agrees(m, verdict(m, subject, mutated))


def test_a_mutation_of_particular_operations_finds_a_place_in_most_models_made_of_them() -> None:
    assert {m.name for m in operation_mutations()} >= {"bias_quantization_off", "parameter_out_of_range"}
    for m in operation_mutations():
        applied = 0
        for seed in range(60):
            g = generate_model(RandomSource(seed), ModelConfig(operations=m.operations))
            try:
                mutated = apply_mutation(m, g.model, SeededSource(seed))
            except GenerationRejected:
                g.close()
                continue
            applied += 1
            assert agrees(m, verdict(m, g.model, mutated)), (m.name, seed)
            g.close()
        assert applied > 20, (m.name, applied)

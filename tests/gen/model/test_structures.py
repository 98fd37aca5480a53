"""Valid structures the HAL allows and the generator now draws: an IF that passes no data to its branches, and
models declaring extensions they never use. Each is drawn over the seeds, accepted and run by the reference, and
refused by a validator that wrongly takes the structure for invalid."""

from __future__ import annotations

from dataclasses import replace

from harness import ops
from harness.case import model_from_json, model_to_json
from harness.gen import ModelConfig
from harness.hal import Model, OperationType
from harness.reference import validate_model
from tests.gen.model.generated import generated, reference_failures

O = OperationType
SEEDS = range(300)
# IF and WHILE drawn often, so that a few hundred seeds show the rarer shapes.
CONTROL = ModelConfig(control_flow_probability=0.5)


def _inputless_ifs(model: Model) -> list[int]:
    """Positions in main of the IF operations that pass no data operand (condition and branches only)."""
    return [j for j, op in enumerate(model.main.operations) if op.type == O.IF and len(op.inputs) == 3]


def _catalogue_requiring_if_data(op_type: int) -> ops.OpSpec | None:
    """The catalogue, except that IF needs at least one data input (a validator that misreads the HAL)."""
    spec = ops.get(op_type)
    if spec is None or op_type != O.IF:
        return spec
    return replace(spec, signatures=[replace(s, min_inputs=None) for s in spec.signatures])


def test_ifs_without_data_inputs_are_drawn_valid_and_run_on_the_reference() -> None:
    drawn = []
    for seed, g in generated(SEEDS, CONTROL):
        if _inputless_ifs(g.model):
            drawn.append(seed)
            assert validate_model(g.model) == [], seed
            assert reference_failures(seed, g) == [], seed
            # Each branch then has no input: it computes from constants of its own.
            for j in _inputless_ifs(g.model):
                op = g.model.main.operations[j]
                for k in op.inputs[1:3]:
                    branch = g.model.referenced[g.model.main.operands[k].location.offset]
                    assert branch.input_indexes == [] and branch.operations, seed
        g.close()
    assert len(drawn) >= 5, drawn


def test_a_validator_requiring_if_data_inputs_refuses_the_drawn_ifs() -> None:
    refused = 0
    for seed, g in generated(SEEDS, CONTROL):
        if _inputless_ifs(g.model):
            found = validate_model(g.model, catalogue=_catalogue_requiring_if_data)
            assert any(v.rule == "model.operation.signature" and "(IF)" in v.message for v in found), seed
            refused += 1
        g.close()
    assert refused > 0


def test_models_declaring_unused_extensions_are_drawn_and_valid() -> None:
    declaring = 0
    for seed, g in generated(SEEDS):
        entries = g.model.extension_name_to_prefix
        assert bool(entries) == ("declared_extensions" in g.features), seed
        if entries:
            declaring += 1
            names, prefixes = [e.name for e in entries], [e.prefix for e in entries]
            assert len(set(names)) == len(names) and len(set(prefixes)) == len(prefixes), seed
            assert all(0 < p <= 0xFFFF for p in prefixes), seed
            assert validate_model(g.model) == [], seed
            # The declarations travel with the case.
            assert model_from_json(model_to_json(g.model)).extension_name_to_prefix == entries, seed
        g.close()
    assert 3 <= declaring <= len(SEEDS) // 5, declaring


def test_a_declared_extension_repeated_is_refused_by_the_reference() -> None:
    for seed, g in generated(SEEDS):
        entries = g.model.extension_name_to_prefix
        if entries:
            repeated = replace(g.model, extension_name_to_prefix=[*entries, entries[0]])
            assert {v.rule for v in validate_model(repeated)} == {"model.extension.declaration"}, seed
            g.close()
            return
        g.close()
    raise AssertionError("no model declared an extension")


def test_turned_off_no_model_declares_extensions_and_every_if_passes_data() -> None:
    config = ModelConfig(
        control_flow_probability=0.5, unused_extension_probability=0.0, if_without_inputs_probability=0.0
    )
    for seed, g in generated(range(150), config):
        assert not g.model.extension_name_to_prefix, seed
        assert not _inputless_ifs(g.model), seed
        g.close()

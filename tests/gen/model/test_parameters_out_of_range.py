"""Parameters out of their ranges: drawn as run-time inputs by the generator (the model stays valid, the
reference refuses the execution with INVALID_ARGUMENT) and as constants by the V10 mutation parameter_out_of_range
(the reference validator refuses the model)."""

from __future__ import annotations

from collections import Counter

from harness.gen import ModelConfig, RandomSource
from harness.gen.mutations import MUTATIONS, apply_mutation
from harness.gen.source import GenerationRejected
from harness.hal import ErrorStatus, OperandLifeTime, OperationType
from harness.ops.parameters import bounded_positions
from harness.reference import run_model, validate_model
from tests.gen.model.generated import generated

SEEDS = range(600)
O = OperationType
WINDOWED = ModelConfig(operations=frozenset({O.CONV_2D, O.DEPTHWISE_CONV_2D, O.AVERAGE_POOL_2D, O.MAX_POOL_2D}))


def _kind(name: str) -> str:
    """stride, dilation, pad, padding_scheme or activation."""
    return name if name == "padding_scheme" else name.split("_")[0]


def _bad_runtime_parameters(g) -> list[tuple[str, int]]:
    """(parameter name, value) of every model input that is a bounded parameter given a value outside its range."""
    main = g.model.main
    found = []
    for op in main.operations:
        types = [int(main.operands[k].type) for k in op.inputs]
        for position, name, domain in bounded_positions(int(op.type), types):
            k = op.inputs[position]
            if k in main.input_indexes:
                value = g.inputs[main.input_indexes.index(k)]
                if value is not None and not domain.holds(value):
                    found.append((name, int(value)))
    return found


def test_run_time_parameters_out_of_range_are_drawn_and_refused_by_the_reference() -> None:
    drawn: Counter = Counter()
    models = 0
    for _seed, g in generated(SEEDS, WINDOWED):
        models += 1
        bad = _bad_runtime_parameters(g)
        assert bool(bad) == ("parameter_out_of_range_input" in g.features)
        if not bad:
            continue
        for name, value in bad:
            drawn[_kind(name)] += 1
            drawn[f"value:{value}"] += 1
        # The model itself is valid; its execution is refused as an invalid argument.
        assert validate_model(g.model) == []
        result = run_model(g.model, g.inputs)
        assert result.status == ErrorStatus.INVALID_ARGUMENT, result.message
        g.close()
    share = sum(v for k, v in drawn.items() if k.startswith("value:")) / models
    assert 0.05 < share < 0.5, share  # about a quarter of the models with a windowed operation
    for kind in ("stride", "pad", "padding_scheme", "activation"):
        assert drawn[kind] > 0, drawn
    assert drawn["value:0"] > 0 and drawn["value:-1"] > 0, drawn  # a stride of 0, a padding of -1


def test_turned_off_no_parameter_is_drawn_out_of_range() -> None:
    config = ModelConfig(operations=WINDOWED.operations, parameter_out_of_range_probability=0.0)
    for _seed, g in generated(range(150), config):
        assert not _bad_runtime_parameters(g)
        g.close()


def test_the_constant_mutation_puts_a_bounded_parameter_out_of_range_and_the_validator_refuses_it() -> None:
    m = MUTATIONS["parameter_out_of_range"]
    names: Counter = Counter()
    for seed, g in generated(range(300), WINDOWED):
        source = RandomSource(seed + 10_000)
        try:
            model = apply_mutation(m, g.model, source)
        except GenerationRejected:
            continue
        violations = validate_model(model)
        assert violations and {v.v for v in violations} <= set(m.allowed), violations
        for graph in (model.main, *model.referenced):
            for op in graph.operations:
                types = [int(graph.operands[k].type) for k in op.inputs]
                for position, name, domain in bounded_positions(int(op.type), types):
                    o = graph.operands[op.inputs[position]]
                    if int(o.lifetime) != OperandLifeTime.CONSTANT_COPY:
                        continue
                    raw = model.operand_values[o.location.offset : o.location.offset + 4]
                    if not domain.holds(int.from_bytes(raw, "little", signed=True)):
                        names[(OperationType(op.type).name, _kind(name))] += 1
    assert sum(names.values()) > 30, names
    assert {n for _, n in names} >= {"stride", "pad", "padding_scheme", "activation"}, names


BLOCKS = ModelConfig(operations=frozenset({O.SPACE_TO_BATCH_ND, O.BATCH_TO_SPACE_ND}), control_flow=False)


def test_run_time_block_sizes_below_one_are_drawn_and_refused_by_the_reference() -> None:
    values: Counter = Counter()
    for seed, g in generated(SEEDS, BLOCKS):
        main = g.model.main
        for op in main.operations:
            k = op.inputs[1]  # the block shape
            if k not in main.input_indexes:
                continue
            block = [int(b) for b in g.inputs[main.input_indexes.index(k)]]
            if min(block) >= 1:
                continue
            assert "parameter_out_of_range_input" in g.features, seed
            # One element leaves the range, the other keeps its drawn value.
            assert sum(b < 1 for b in block) == 1 and max(block) >= 1, (seed, block)
            values[min(block)] += 1
            assert validate_model(g.model) == [], seed
            result = run_model(g.model, g.inputs)
            assert result.status == ErrorStatus.INVALID_ARGUMENT and "block_shape must be" in result.message, seed
        g.close()
    assert sum(values.values()) >= 10 and values[0] > 0, values  # a block size of 0 among them


BIDIRECTIONAL = ModelConfig(operations=frozenset({O.BIDIRECTIONAL_SEQUENCE_LSTM}), control_flow=False)


def test_merge_outputs_given_false_without_a_backward_output_is_drawn_and_refused_by_the_reference() -> None:
    drawn = 0
    for seed, g in generated(range(200), BIDIRECTIONAL):
        main = g.model.main
        for op in main.operations:
            k = op.inputs[51]  # merge_outputs
            backward_declared = len(op.outputs) in (2, 6)
            if k not in main.input_indexes or bool(g.inputs[main.input_indexes.index(k)]) or backward_declared:
                continue
            # Only the forward output is declared: it was drawn for merged outputs (the form without final states).
            assert len(op.outputs) == 1 and "parameter_out_of_range_input" in g.features, seed
            drawn += 1
            assert validate_model(g.model) == [], seed
            result = run_model(g.model, g.inputs)
            assert result.status == ErrorStatus.INVALID_ARGUMENT and "merge_outputs must be" in result.message, seed
        g.close()
    assert drawn >= 3, drawn

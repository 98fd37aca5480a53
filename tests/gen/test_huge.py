"""Models of a huge size: every entry is drawn, constant and at run time, with sizes past what any buffer holds."""

from __future__ import annotations

import math

from harness.gen.huge import HUGE_MODELS, HUGE_SHAPES, generate_huge
from harness.gen.sources import RandomSource
from harness.reference import validate_model


def test_every_model_and_size_is_drawn_constant_and_at_run_time() -> None:
    drawn = set()
    for seed in range(300):
        huge = generate_huge(RandomSource(seed))
        drawn.add((huge.name, tuple(huge.output_shape), huge.at_run_time))
    assert {(n, r) for n, _, r in drawn} == {(n, r) for n in HUGE_MODELS for r in (False, True)}
    assert {s for _, s, _ in drawn} == set(HUGE_SHAPES)


def test_sizes_reach_past_int32_and_int64_and_start_at_half_a_gib() -> None:
    counts = [math.prod(s) for s in HUGE_SHAPES]
    assert min(counts) * 4 >= 2**29
    assert any(c > 2**31 for c in counts) and any(c * 4 > 2**63 for c in counts)


def test_models_are_valid_and_their_output_is_left_to_the_driver() -> None:
    for seed in range(40):
        huge = generate_huge(RandomSource(seed))
        assert validate_model(huge.model) == [], (seed, huge.name)
        main = huge.model.main
        assert [main.operands[i].dimensions for i in main.output_indexes] == [[0, 0]]
        assert len(huge.request_json["inputs"]) == len(main.input_indexes) == len(huge.inputs)
        (output,) = huge.request_json["outputs"]
        assert output["length"] * 1000 < math.prod(huge.output_shape) * 4

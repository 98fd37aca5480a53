"""Each rule catches what it claims: a driver started with a catalogued fault fails the target with that rule.

A fault counts as found when a case fails on the faulty driver with one of the expected rules and passes on a
fault-free one (so an unrelated disagreement between driver and reference cannot pass for the fault). Faults that
kill or hang the process (abort_on_*, hang_on_*) need an isolated runner and are not exercised here.
"""

from __future__ import annotations

import pytest

from driver_under_test import create_device
from harness.gen.model import ModelConfig
from harness.gen.source import GenerationRejected
from harness.gen.sources import RandomSource
from harness.hal import OperationType as Op
from harness.targets import TARGETS
from harness.targets.base import Target
from harness.targets.execution import ExecutionTarget

ACCURACY = {f"accuracy.{c}" for c in ("float32", "float16", "int32", "quant8", "quant16", "bool")}


def focused(*operations: Op) -> ExecutionTarget:
    """The execution target drawing only these operations (a fault in one kernel is then quick to reach)."""
    return ExecutionTarget(model_config=ModelConfig().with_operations(operations))


# (fault, target, rules that report it, seeds to try)
CASES = [
    ("scalar_dims_unchecked", TARGETS["validation"], {"status.invalid_model_rejected"}, 500),
    ("zero_point_range_unchecked", TARGETS["validation"], {"status.invalid_model_rejected"}, 1500),
    ("constant_lifetime_check_skipped", TARGETS["validation"], {"status.invalid_model_rejected"}, 1500),
    ("consumer_count_unchecked", TARGETS["validation"], {"status.invalid_model_rejected"}, 500),
    ("bias_scale_unchecked", TARGETS["validation"], {"status.invalid_model_rejected"}, 500),
    ("q16_lstm_quantization_unchecked", TARGETS["validation"], {"status.invalid_model_rejected"}, 1500),
    ("same_quantization_unchecked", TARGETS["validation"], {"status.invalid_model_rejected"}, 500),
    ("pool_bounds_off_by_one", TARGETS["request"], {"status.invalid_request_rejected"}, 1000),
    ("timing_when_not_asked", TARGETS["execution"], {"timing.absent_unless_measured"}, 100),
    ("insufficient_marks_wrong_output", TARGETS["execution"], {"shapes.reported"}, 300),
    ("unknown_shape_not_reported", TARGETS["execution"], {"shapes.reported"}, 100),
    ("softmax_beta_ignored", focused(Op.SOFTMAX), ACCURACY, 100),
    ("conv_bias_dropped_when_nchw", focused(Op.CONV_2D, Op.GROUPED_CONV_2D), ACCURACY, 300),
    ("broadcast_wrong_axis", focused(Op.ADD, Op.SUB, Op.MUL, Op.DIV), ACCURACY, 500),
    ("quant_add_uses_first_zero_point", focused(Op.ADD, Op.SUB), {"accuracy.quant8"}, 300),
    ("avg_pool_counts_padding", focused(Op.AVERAGE_POOL_2D), ACCURACY, 300),
    ("arg_index_second_half_off_by_one", focused(Op.ARGMAX, Op.ARGMIN), {"accuracy.exact"}, 300),
    ("q16_lstm_real_gates", focused(Op.QUANTIZED_16BIT_LSTM), {"accuracy.quant16"}, 200),
    (
        "quant_conv_truncates",
        focused(Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D, Op.TRANSPOSE_CONV_2D),
        {"accuracy.rounding_bias"},
        300,
    ),
    ("hardware_buffer_header_unchecked", TARGETS["request"], {"memory.unusable_refused"}, 300),
]


def first_finding(target: Target, fault: str, seeds: int) -> tuple[int, str] | None:
    """(seed, rule) of the first case that fails with the fault and passes without it."""
    faulty, clean = create_device(faults=[fault]), create_device(faults=[])
    for seed in range(seeds):
        try:
            case = target.decode(RandomSource(seed))
        except GenerationRejected:
            continue
        verdict = target.run(case, faulty)
        if not verdict.ok and target.run(case, clean).ok:
            return seed, verdict.rule
    return None


@pytest.mark.parametrize(("fault", "target", "rules", "seeds"), CASES, ids=[c[0] for c in CASES])
def test_the_fault_is_found_with_its_rule(fault: str, target: Target, rules: set[str], seeds: int) -> None:
    found = first_finding(target, fault, seeds)
    assert found is not None, f"{fault} not found by {target.name} within {seeds} seeds"
    assert found[1] in rules, f"{fault} found at seed {found[0]} as {found[1]}, expected one of {sorted(rules)}"

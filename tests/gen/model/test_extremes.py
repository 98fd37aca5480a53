"""Valid but extreme models: quantization parameters across the HAL's range, values at saturation, sizes around
the vector widths of optimized kernels and the large-graph preset. Each extreme appears over the seeds with the
default configuration, and models drawn with the extremes forced stay valid and run on the reference."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from harness.gen import ModelConfig, RandomSource
from harness.gen.model._values import QUANT_ASYMM, QUANTIZED, STORED_RANGE, VECTOR_WIDTH_BANDS, off_fit_quant
from harness.hal import OperandType, OperationType, SymmPerChannelQuantParams
from harness.reference import validate_model
from tests.gen.model.generated import generated, reference_failures

T = OperandType
O = OperationType
SEEDS = range(2000)
WIDE_BANDS = [band for band in VECTOR_WIDTH_BANDS if band[0] > 4]
_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_WEIGHTED = (O.CONV_2D, O.DEPTHWISE_CONV_2D, O.GROUPED_CONV_2D, O.TRANSPOSE_CONV_2D, O.FULLY_CONNECTED)
# Deliberate out-of-range run-time values (a batch index of INT32_MIN) are not the saturation extremes counted here.
NO_EXTREMES = ModelConfig(
    extreme_quant_probability=0.0,
    saturation_probability=0.0,
    vector_width_probability=0.0,
    parameter_out_of_range_probability=0.0,
)


def _band(size: int) -> tuple[int, int] | None:
    return next((band for band in VECTOR_WIDTH_BANDS if band[0] <= size <= band[1]), None)


def _statistics(models) -> Counter:
    """How many models show each extreme, read from the models themselves (operands, values, operations)."""
    counts: Counter = Counter()
    for _, g in models:
        seen: set[str] = set()
        for graph in (g.model.main, *g.model.referenced):
            operands = graph.operands
            for op in operands:
                if op.type in QUANTIZED and isinstance(op.extra_params, SymmPerChannelQuantParams):
                    scales = op.extra_params.scales
                    if max(scales) >= 100 * min(scales):
                        seen.add("channel_spread>=100")
                elif op.type in QUANTIZED:
                    if op.scale < 1e-6:
                        seen.add("scale<1e-6")
                    if op.scale < 1e-8:
                        seen.add("scale<1e-8")
                    if op.scale > 1e3:
                        seen.add("scale>1e3")
                    if op.scale > 1e6:
                        seen.add("scale>1e6")
                    if op.type in QUANT_ASYMM:
                        lo, hi = STORED_RANGE[op.type]
                        if op.zero_point == lo:
                            seen.add(f"zero_point_min:{T(op.type).name}")
                        if op.zero_point == hi:
                            seen.add(f"zero_point_max:{T(op.type).name}")
                if op.dimensions and op.dimensions[-1] and _band(op.dimensions[-1]) in WIDE_BANDS:
                    seen.add(f"innermost:{_band(op.dimensions[-1])}")
            for operation in graph.operations:
                ins = [operands[i] for i in operation.inputs]
                outs = [operands[i] for i in operation.outputs]
                x, y = (ins[0] if ins else None), outs[0]
                if operation.type in _WEIGHTED and len(ins) > 1 and ins[1].dimensions:
                    # Filters are [out, ..., in] ([1, h, w, out] for a depthwise one), weights [units, input size].
                    for channels in (ins[1].dimensions[0], ins[1].dimensions[-1]):
                        if _band(channels) in WIDE_BANDS:
                            seen.add(f"channels:{_band(channels)}")
                if x is not None and x.type in QUANTIZED and y.type in QUANTIZED and x.scale and y.scale:
                    ratio = x.scale / y.scale
                    if ratio < 1e-6:
                        seen.add("ratio<1e-6")
                    if ratio > 1e6:
                        seen.add("ratio>1e6")
        for value, index in zip(g.inputs, g.model.main.input_indexes):
            op = g.model.main.operands[index]
            if value is None or not value.size:
                continue
            if op.type == T.TENSOR_INT32 and (value.min() == -(2**31) or value.max() == 2**31 - 1):
                seen.add("int32_extreme")
            if op.type in _FLOATS and float(np.abs(value).max()) >= 100.0:
                seen.add("float>=100")
            if op.type in QUANTIZED and op.type != T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
                lo, hi = STORED_RANGE[op.type]
                if value.min() == lo and value.max() == hi:
                    seen.add("quantized_at_both_bounds")
        counts.update(seen)
    return counts


@pytest.fixture(scope="module")
def statistics() -> Counter:
    """The extremes of the default configuration over seeds 0..1999, without the run-time draw of parameters out
    of range, IFs without data inputs or declared extensions (per-model choices that would only shift the seeded
    choices these counts were set on)."""
    config = replace(
        ModelConfig(),
        parameter_out_of_range_probability=0.0,
        if_without_inputs_probability=0.0,
        unused_extension_probability=0.0,
    )
    return _statistics(generated(SEEDS, config))


def test_quantization_parameters_reach_the_extremes_of_the_hal(statistics) -> None:
    for extreme in ("scale<1e-6", "scale<1e-8", "scale>1e3", "scale>1e6", "ratio<1e-6", "ratio>1e6"):
        assert statistics[extreme] >= 5, extreme
    for t in ("TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"):
        assert statistics[f"zero_point_min:{t}"] >= 5, t
        assert statistics[f"zero_point_max:{t}"] >= 5, t
    assert statistics["channel_spread>=100"] >= 1


def test_values_reach_saturation(statistics) -> None:
    assert statistics["int32_extreme"] >= 3
    assert statistics["float>=100"] >= 10
    assert statistics["quantized_at_both_bounds"] >= 20


def test_sizes_reach_every_vector_width_band(statistics) -> None:
    for band in WIDE_BANDS:
        assert statistics[f"innermost:{band}"] >= 5, band
    assert sum(statistics[f"channels:{band}"] for band in WIDE_BANDS) >= 5


def test_channel_counts_reach_every_vector_width_band() -> None:
    config = ModelConfig(operations=frozenset(int(o) for o in _WEIGHTED), control_flow=False)
    statistics = _statistics(generated(range(600), config))
    for band in WIDE_BANDS:
        assert statistics[f"channels:{band}"] >= 3, band


def test_the_extremes_stay_a_modest_share_of_the_models() -> None:
    models = list(generated(range(500)))
    extreme = sum(1 for _, g in models if any(f.split(":")[0] in ("extreme_quant", "saturation") for f in g.features))
    wide = sum(1 for _, g in models if any(f.startswith("vector_width:") for f in g.features))
    assert 0.05 * len(models) <= extreme <= 0.4 * len(models)
    assert 0.02 * len(models) <= wide <= 0.25 * len(models)


def test_the_extremes_can_be_switched_off() -> None:
    statistics = _statistics(generated(range(400), NO_EXTREMES))
    for extreme in ("scale<1e-6", "scale>1e3", "ratio<1e-6", "ratio>1e6", "int32_extreme", "channel_spread>=100"):
        assert statistics[extreme] == 0, extreme
    for _, g in generated(range(400), NO_EXTREMES):
        assert not any(f.split(":")[0] in ("extreme_quant", "saturation", "vector_width") for f in g.features)


FORCED = {
    "quantization": ModelConfig(extreme_quant_probability=1.0),
    "saturation": ModelConfig(saturation_probability=1.0),
    "vector_width": ModelConfig(vector_width_probability=1.0),
    "quantized_all": ModelConfig(
        extreme_quant_probability=0.5, saturation_probability=0.5, vector_width_probability=0.5, quantized_bias=0.8
    ),
    "large": ModelConfig.large(),
}


@pytest.mark.parametrize("name", sorted(FORCED))
def test_extreme_models_are_valid_and_run_on_the_reference(name: str) -> None:
    config = FORCED[name]
    failures = []
    count = 0
    for seed, g in generated(range(120), config):
        count += 1
        try:
            problems = validate_model(g.model)
            if problems:
                failures.append((seed, problems[:1]))
                continue
            failures += reference_failures(seed, g)
        finally:
            g.close()
    assert failures == []
    assert count >= 110


def test_extreme_models_give_the_oracle_only_values_it_judges() -> None:
    # A model that drew an extreme keeps every float result within judged_abs_value (the oracle skips larger ones).
    config = ModelConfig(extreme_quant_probability=0.5, saturation_probability=0.5)
    checked = 0
    for seed, g in generated(range(300), config):
        if not any(f.split(":")[0] in ("extreme_quant", "saturation") for f in g.features):
            continue
        main = g.model.main
        for value, index in zip(g.outputs, main.output_indexes):
            if main.operands[index].type in _FLOATS and value.size:
                checked += 1
                assert float(np.abs(value.astype(np.float64)).max()) <= config.judged_abs_value, seed
    assert checked >= 50


def test_wide_sizes_raise_the_element_limit_only_when_drawn() -> None:
    config = ModelConfig(vector_width_probability=1.0)
    largest = 0
    for seed, g in generated(range(150), config):
        for value in g.inputs:
            if value is not None:
                assert math.prod(value.shape) <= config.vector_width_max_elements, seed
                largest = max(largest, math.prod(value.shape))
    assert largest > config.max_elements


def test_the_large_preset_draws_larger_graphs() -> None:
    large = ModelConfig.large()
    assert large.max_operations > ModelConfig().max_operations and large.max_elements > ModelConfig().max_elements
    assert replace(ModelConfig.large(max_operations=5), max_operations=large.max_operations) == large
    default_ops = [len(g.model.main.operations) for _, g in generated(range(150))]
    large_ops = [len(g.model.main.operations) for _, g in generated(range(150), large)]
    assert sum(large_ops) > 2 * sum(default_ops)
    assert max(large_ops) > ModelConfig().max_operations


def test_the_targets_keep_the_default_sizes() -> None:
    from harness.targets import TARGETS

    assert TARGETS["execution"].model_config == ModelConfig()
    assert TARGETS["validation"].config == ModelConfig()


def test_quantized_add_and_sub_keep_their_output_scale_within_the_rescale_headroom() -> None:
    # The HAL's reference arithmetic resolves ADD/SUB inputs to 2^-20 of twice the larger input scale (the
    # catalogue's rescale_headroom hint): an output scale below max(input scales) / 2^19 is never drawn.
    config = ModelConfig(
        operations=frozenset({int(O.ADD), int(O.SUB)}), extreme_quant_probability=1.0, quantized_bias=1.0
    )
    checked = 0
    for seed, g in generated(range(300), config):
        for graph in (g.model.main, *g.model.referenced):
            for operation in graph.operations:
                if operation.type not in (O.ADD, O.SUB):
                    continue
                a, b = (graph.operands[i] for i in operation.inputs[:2])
                y = graph.operands[operation.outputs[0]]
                if y.type in QUANTIZED:
                    checked += 1
                    assert np.float32(y.scale) > np.float32(max(a.scale, b.scale) / 2**19), seed
    assert checked >= 100


def test_outputs_of_computed_quantized_inputs_are_never_moved_finer_than_their_fit() -> None:
    # A computed quantized input may be a step off in any correct implementation: an output scale moved off its fit
    # for it only ever gets coarser (the rescale factor never grows beyond the fitted one), while outputs of exact
    # inputs (model inputs, constants) get factors both ways.
    finer = coarser = 0
    for seed in range(400):
        src = RandomSource(seed)
        for t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM):
            moved, _, what = off_fit_quant(src, t, 0.05, 0, None, coarser=True)
            if what == "off_fit_scale":
                assert moved >= 0.05
            moved, _, what = off_fit_quant(src, t, 0.05, 0, 0.05)
            if what == "off_fit_scale":
                finer += moved < 0.05 * 1e-3
                coarser += moved > 0.05 * 1e3
    assert finer >= 50 and coarser >= 50

"""ModelConfig: the knobs of the model generator (sizes, operation set, how often each feature appears)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from harness.hal.memory import MemoryKind


@dataclass(frozen=True)
class ModelConfig:
    """What generate_model may produce. Probabilities are per decision (per operand, per operation slot...)."""

    max_operations: int = 3  # operations of main (an IF or WHILE counts as one)
    max_dim: int = 4  # largest drawn dimension
    max_rank: int = 4  # largest drawn rank (operations accepting "rank >= 1" are capped here)
    max_elements: int = 256  # largest tensor an operation may produce (larger draws are retried)
    # Operation types to draw from (None = every catalogued operation with a reference kernel). Operations without
    # a kernel are never drawn: each operation is executed while it is drawn.
    operations: frozenset[int] | None = None
    control_flow: bool = True  # IF/WHILE with referenced subgraphs
    control_flow_probability: float = 0.12  # per operation slot
    subgraph_max_operations: int = 2  # operations of each referenced subgraph
    if_without_inputs_probability: float = 0.15  # an IF passes no data operand: its branches read only constants
    relaxed_probability: float = 0.15  # relaxComputationFloat32toFloat16
    unknown_dims_probability: float = 0.15  # an operation output (temporary or model output) declares 0 dimensions
    unknown_input_dims_probability: float = 0.05  # a model input declares 0 dimensions (the request gives them)
    constant_probability: float = 0.3  # a new data tensor is a constant rather than a model input
    reference_probability: float = 0.35  # a constant is CONSTANT_REFERENCE (in a pool) rather than CONSTANT_COPY
    reuse_probability: float = 0.6  # a data input reuses an earlier value when one fits
    omit_optional_probability: float = 0.5  # an optional input gets no value
    absent_input_probability: float = 0.1  # an omitted optional input is a model input given no value at execution
    param_input_probability: float = 0.03  # a parameter that need not be constant is a model input
    extra_output_probability: float = 0.2  # a consumed result is also a model output
    permute_io_probability: float = 0.2  # inputIndexes/outputIndexes not in operand order
    unused_extension_probability: float = 0.05  # the model declares extensions (extensionNameToPrefix) it never uses
    max_abs_value: float = 1e4  # float results beyond this (or not finite) make the operation be redrawn
    max_attempts: int = 4  # draws per operation slot before giving up on it
    model_pool_kinds: tuple[str, ...] = (MemoryKind.ASHMEM.value, MemoryKind.MMAP_FD.value)
    quantized_bias: float = 0.0  # probability of preferring a quantized typing (0 = uniform over signatures)

    # Valid but extreme models. Optimized kernels (LiteRT's, XNNPACK's, an NPU's) break on valid models whose
    # parameters, values and sizes sit far from the comfortable middle the rest of the generator keeps to. Each knob
    # below is a probability per decision it applies to (0 turns it off); the defaults put each extreme in a modest
    # share of the models, so every target meets them.
    #
    # Quantization parameters across the range the HAL allows (V4 and V5 ask only for a positive scale and a zero
    # point inside the type), per quantization drawn: a new quantized data operand gets a tiny scale (1e-12..1e-6,
    # positive and normal as float32, and so are products of two) or a huge one (1e3..1e8), and an asymmetric one
    # may get its zero point at a bound of its type (0 or 255, -128 or 127, 0 or 65535), with stored values over the
    # whole range of the type; a fitted quantized output gets its scale moved off the fit by a factor of 1e-8..1e8
    # (the multiplier input_scale * filter_scale / output_scale that fixed-point kernels normalize into an integer
    # and a shift then spans that range: outputs all at the zero point, all saturated, and everything between) or
    # its zero point at a bound; a per-channel filter gets scales up to three orders of magnitude either side of
    # the usual one, so channels differ by up to six.
    extreme_quant_probability: float = 0.15
    # Values at saturation, per new data value: quantized stored values piled on the bounds of their type (outputs
    # then reach their clamp bounds), TENSOR_INT32 values at the int32 extremes (a result outside int32 is left
    # unspecified by the HAL, so such a draw is redrawn: the extremes stay where the operation is exact, in
    # comparisons, selections, data movement, MAXIMUM/MINIMUM, arithmetic that does not overflow), float values up
    # to the magnitude the oracle still judges (`judged_abs_value`) for operations that round each result once
    # (element-wise, activations, data movement; not in relaxed models: see _operation._ROUNDING_ONCE). Positions
    # whose values the operation or its recipe restricts (explicit ranges, indices, biases) keep their ranges.
    saturation_probability: float = 0.06
    # The largest float magnitude the oracle judges (REQUIREMENTS O2 skips expected values above 1e3): in a model
    # that drew an extreme (parameter or value), every float result must stay within it, or its operation is
    # redrawn, so that no extreme reaches the oracle as a value it would skip.
    judged_abs_value: float = 1e3
    # Sizes around the vector widths of optimized kernels, per innermost dimension or channel count drawn (a new
    # tensor's last dimension; a convolution's input and output channels, a fully connected layer's units): one of
    # 1-4, 7-9, 15-17, 31-33 or 63-65 (a full SIMD vector, one short of it, one past it), where remainder loops and
    # lane masks go wrong. Once one is drawn, the model's tensors may hold up to `vector_width_max_elements`.
    vector_width_probability: float = 0.06
    vector_width_max_elements: int = 4096

    # Parameter values outside their ranges, given at run time. Per model: its bounded parameters (strides,
    # dilations, paddings, padding schemes, fused activations of the windowed operations: harness.ops.parameters)
    # become model inputs, each with even odds, and one of them is given a value outside its range in the request
    # (0 or a negative stride, a negative padding, an unknown code...). The model stays valid; the execution must
    # fail with INVALID_ARGUMENT. (Constants out of range are the V10 mutation parameter_out_of_range.)
    parameter_out_of_range_probability: float = 0.3
    # Long sizes, per size a recipe draws where code runs longer on longer inputs (OpDraw.long): the time steps of
    # the sequence RNNs and LSTMs, the units of the recurrent cells, the rows LSH_PROJECTION hashes (past 64 bytes,
    # FarmHash's loop over 64-byte blocks). Once one is drawn, the model's tensors may hold up to
    # `vector_width_max_elements`.
    long_size_probability: float = 0.08

    def with_operations(self, operations: Iterable[int]) -> ModelConfig:
        """A copy restricted to these operation types."""
        return replace(self, operations=frozenset(int(o) for o in operations))

    @classmethod
    def large(cls, **overrides: object) -> ModelConfig:
        """Larger graphs with larger tensors, for backends where an execution is cheap (the targets keep the
        defaults): up to 12 operations in main and 4 in each referenced subgraph, dimensions up to 8, tensors up
        to 4096 elements (16384 once a vector-width size is drawn). Keyword arguments override any knob.

        Such graphs stretch the oracle's random-graph criterion for quantized outputs, made for the default
        sizes: a one-step difference the HAL allows each quantized operation compounds through a WHILE body run
        several times (its operations are counted once) and through operations that amplify it, and a quantized
        result converted to float (DEQUANTIZE, CAST) carries such a step into the float criterion. On the
        fault-free driver about one execution case in a thousand is judged a failure for these reasons."""
        large = cls(
            max_operations=12,
            max_dim=8,
            max_elements=4096,
            subgraph_max_operations=4,
            vector_width_max_elements=16384,
        )
        return replace(large, **overrides)  # type: ignore[arg-type]

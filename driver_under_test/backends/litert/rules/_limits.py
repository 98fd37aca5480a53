"""LiteRT's kernel limits: quantization parameters the HAL allows that a LiteRT kernel refuses before computing.

A kernel checks its operands when the interpreter allocates tensors (its Prepare) or, for the XNNPACK delegate,
when the delegate builds its runtime; a refusal there fails every execution of the model, so the translation must
not claim such an operation. Each limit is a condition on one builtin operator a rule emits, described by a
`Kernel` (its operands as the builtin sees them), computed as LiteRT computes it: float32 where the kernel divides
in float32, double where it does, the exponent of QuantizeMultiplier where it checks that exponent. `refusal` gives
the reason of the first limit a kernel breaks; the table `LIMITS` says which limits each builtin has.

Support cannot depend on the kernel set (one translation serves all three, see _translate), so a limit of one
kernel set makes the operation unsupported on all three, and each reason says which kernel sets refuse. Where the
XNNPACK delegate takes an operator (`Kernel.xnnpack`), the builtin kernel never sees it: a builtin kernel's limit
is then met on the optimized and reference kernel sets, an XNNPACK limit on the XNNPACK kernel set only.

Most limits are deliberate checks of a kernel's implementation. Two kinds look like LiteRT's bugs rather than
documented limits, and their reasons say so: a fused activation bound too far out to quantize (it lies beyond every
value the output holds, so clamping to it changes nothing), and the XNNPACK delegate taking an operator its runtime
then refuses (instead of leaving it to the builtin kernel, which runs it).

Not here: conditions on which LiteRT aborts the process (a failed TFLITE_CHECK, as in the reference SOFTMAX for a
tiny input scale or ADD for a tiny output scale). A crash is the engine's bug, for the harness to find.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from driver_under_test.backends.litert._graph import TensorSpec

# Which kernel sets a limit holds on (the reasons' wording).
EVERY_KERNEL_SET = "every kernel set"
BUILTIN_KERNELS = (
    "the optimized and reference kernel sets, and the XNNPACK one where its delegate leaves the operator to the "
    "builtin kernel; refused on all three, as support cannot depend on the kernel set"
)
XNNPACK_ONLY = "the XNNPACK kernel set only; refused on all three, as support cannot depend on the kernel set"

EIGHT_BIT = frozenset({"UINT8", "INT8"})
# The real bounds of the fused activations (RELU, RELU1, RELU6) that LiteRT quantizes into the output's integers.
ACTIVATION_BOUNDS = {1: (0.0,), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
ACTIVATION_NAMES = {1: "RELU", 2: "RELU1", 3: "RELU6"}
INT32_LIMIT = 2.0**31  # float(INT32_MAX) and -float(INT32_MIN) in float32
BIAS_SCALE_TOLERANCE = 0.02  # |input * filter scale - bias scale| / output scale allowed by kernel_util.cc
XNNPACK_MAX_REQUANTIZATION = 256.0  # XNNPACK's quantized convolutions and fully connected need a scale below it


@dataclass(frozen=True)
class Kernel:
    """One builtin operator a rule emits, as the limits see it: its name and operands as the builtin gets them."""

    op: str  # the HAL operation's name, for messages
    builtin: str
    input: TensorSpec
    output: TensorSpec
    activation: int = 0  # fused activation code (NONE 0, RELU 1, RELU1 2, RELU6 3)
    filter: TensorSpec | None = None
    bias: TensorSpec | None = None
    xnnpack: bool = False  # the XNNPACK delegate takes the operator (constant weights, shapes it accepts)


Limit = Callable[[Kernel], "str | None"]


def _f32(value: float) -> np.float32:
    return np.float32(value)


def multiplier_exponent(multiplier: float) -> int:
    """The exponent LiteRT's QuantizeMultiplier gives a real multiplier: multiplier = q * 2^exponent with q in
    [0.5, 1) rounded to 31 bits (a q rounding up to 1 raises the exponent by one); below 2^-31 it is flushed to
    0 with exponent 0."""
    if multiplier == 0.0:
        return 0
    fraction, exponent = math.frexp(multiplier)
    if math.floor(fraction * 2.0**31 + 0.5) == 2.0**31:  # std::round, half away from zero (fraction > 0)
        exponent += 1
    return 0 if exponent < -31 else exponent


def quantized(kernel: Kernel) -> bool:
    """True when the builtin computes on 8-bit quantized input and output."""
    return kernel.input.type in EIGHT_BIT and kernel.output.type in EIGHT_BIT


def hard_swish_multiplier(kernel: Kernel) -> str | None:
    """activations.cc HardSwishPrepare: the output multiplier (input scale / 128) / output scale, in float32, must
    have a QuantizeMultiplier exponent of at most 0."""
    if not quantized(kernel):
        return None
    with np.errstate(over="ignore"):
        multiplier = (_f32(kernel.input.scales[0]) * _f32(1 / 128)) / _f32(kernel.output.scales[0])
    exponent = multiplier_exponent(float(multiplier))
    if exponent <= 0:
        return None
    return (
        f"{kernel.op}: LiteRT's quantized HARD_SWISH (activations.cc, HardSwishPrepare) refuses an output scale at "
        f"or below input scale / 128: the multiplier (input scale / 128) / output scale, {float(multiplier):.7g}, "
        f"has exponent {exponent}, above 0 ({EVERY_KERNEL_SET})"
    )


def int8_filter_zero_point(kernel: Kernel) -> str | None:
    """conv.cc Prepare: an int8 convolution's filter must have zero point 0 (LiteRT's int8 kernels are symmetric);
    the XNNPACK delegate, where it takes the operator, fails to define it instead."""
    if kernel.input.type != "INT8" or kernel.filter is None or not any(kernel.filter.zero_points):
        return None
    return (
        f"{kernel.op}: LiteRT's int8 CONV_2D refuses a filter with a zero point other than 0 (here "
        f"{kernel.filter.zero_points[0]}): the builtin kernel in Prepare (conv.cc), the XNNPACK delegate when it "
        f"defines the operator ({EVERY_KERNEL_SET})"
    )


def bias_scale(kernel: Kernel) -> str | None:
    """kernel_util.cc GetQuantizedConvolutionMultipler: |input scale * filter scale - bias scale| / output scale,
    in double, must be at most 0.02 (the HAL allows a relative difference of 1e-6, which a large multiplier
    input * filter / output scale turns into more). The fully connected kernel checks it for any 8-bit input,
    the convolutions (PopulateConvolutionQuantizationParams) for a uint8 one."""
    if kernel.bias is None or kernel.filter is None or len(kernel.filter.scales) != 1 or not quantized(kernel):
        return None
    if kernel.builtin != "FULLY_CONNECTED" and kernel.input.type != "UINT8":
        return None
    product = float(_f32(kernel.input.scales[0])) * float(_f32(kernel.filter.scales[0]))
    ratio = abs(product - float(_f32(kernel.bias.scales[0]))) / float(_f32(kernel.output.scales[0]))
    if ratio <= BIAS_SCALE_TOLERANCE:
        return None
    return (
        f"{kernel.op}: LiteRT's quantized {kernel.builtin} (kernel_util.cc, GetQuantizedConvolutionMultipler) "
        f"refuses a bias scale differing from input scale * filter scale by more than 0.02 output scales (here "
        f"{ratio:.3g}) ({BUILTIN_KERNELS})"
    )


def _bound_fits(bound: float, scale: float) -> bool:
    """True when round(bound / scale), divided in float32, lies within int32 as LiteRT compares it."""
    with np.errstate(over="ignore", divide="ignore"):
        quotient = float(_f32(bound) / _f32(scale))
    if not math.isfinite(quotient):
        return False
    rounded = math.copysign(math.floor(abs(quotient) + 0.5), quotient)
    return -INT32_LIMIT <= rounded <= INT32_LIMIT


def activation_range(kernel: Kernel) -> str | None:
    """kernel_util.cc CalculateActivationRangeQuantized: each bound of a fused RELU1/RELU6, divided by the output
    scale and rounded, must fit int32 (a tiny output scale does not)."""
    if not quantized(kernel) or kernel.activation not in ACTIVATION_BOUNDS:
        return None
    scale = kernel.output.scales[0]
    if all(_bound_fits(bound, scale) for bound in ACTIVATION_BOUNDS[kernel.activation]):
        return None
    return (
        f"{kernel.op}: LiteRT's quantized {kernel.builtin} (kernel_util.cc, CalculateActivationRangeQuantized) "
        f"refuses a fused {ACTIVATION_NAMES[kernel.activation]} whose bounds divided by the output scale "
        f"{scale:.7g} do not fit int32, an engine bug rather than a documented limit: such a bound lies beyond "
        f"every value the output holds ({BUILTIN_KERNELS})"
    )


def average_pool_activation_range(kernel: Kernel) -> str | None:
    """pooling.cc AverageEvalQuantizedUint8: the same bound check as activation_range, for a uint8 output only, at
    every invoke (the int8 kernel ignores its result); XNNPACK takes no quantized average pool."""
    if kernel.output.type != "UINT8" or activation_range(kernel) is None:
        return None
    return (
        f"{kernel.op}: LiteRT's uint8 AVERAGE_POOL_2D (pooling.cc, AverageEvalQuantizedUint8, at every invoke) "
        f"refuses a fused {ACTIVATION_NAMES[kernel.activation]} whose bounds divided by the output scale "
        f"{kernel.output.scales[0]:.7g} do not fit int32, an engine bug rather than a documented limit: such a "
        f"bound lies beyond every value the output holds ({EVERY_KERNEL_SET})"
    )


def xnnpack_requantization(kernel: Kernel) -> str | None:
    """XNNPACK's quantized convolution, deconvolution and fully connected operators (convolution-nhwc.c,
    deconvolution-nhwc.c, fully-connected-nc.c): input scale * filter scale / output scale, in float32, must be
    below 256 for every output channel."""
    if not kernel.xnnpack or kernel.filter is None or not quantized(kernel):
        return None
    x, out = _f32(kernel.input.scales[0]), _f32(kernel.output.scales[0])
    with np.errstate(over="ignore"):
        worst = max(float((x * _f32(s)) / out) for s in kernel.filter.scales)
    if worst < XNNPACK_MAX_REQUANTIZATION:
        return None
    return (
        f"{kernel.op}: XNNPACK's quantized {kernel.builtin} refuses a requantization scale input scale * filter "
        f"scale / output scale of 256 or more (here {worst:.7g}) when it builds its runtime, an engine bug rather "
        f"than a documented limit: its delegate took the operator instead of leaving it to the builtin kernel, "
        f"which runs it ({XNNPACK_ONLY})"
    )


def xnnpack_filter_zero_point(kernel: Kernel) -> str | None:
    """XNNPACK's depthwise convolution (xnn_define_depthwise_convolution_2d) takes an int8 filter with zero point 0
    only; the delegate fails instead of leaving the operator to the builtin kernel."""
    if not kernel.xnnpack or kernel.input.type != "INT8" or kernel.filter is None:
        return None
    if not any(kernel.filter.zero_points):
        return None
    return (
        f"{kernel.op}: XNNPACK's int8 {kernel.builtin} refuses a filter with a zero point other than 0 (here "
        f"{kernel.filter.zero_points[0]}) when its delegate defines the operator, an engine bug rather than a "
        f"documented limit: the delegate took the operator instead of leaving it to the builtin kernel, which runs "
        f"it ({XNNPACK_ONLY})"
    )


# Per builtin the limits its quantized kernels have, those of every kernel set first.
LIMITS: dict[str, tuple[Limit, ...]] = {
    "HARD_SWISH": (hard_swish_multiplier,),
    "ADD": (activation_range,),
    "SUB": (activation_range,),
    "MUL": (activation_range,),
    "AVERAGE_POOL_2D": (average_pool_activation_range,),
    "CONV_2D": (int8_filter_zero_point, bias_scale, activation_range, xnnpack_requantization),
    "DEPTHWISE_CONV_2D": (bias_scale, activation_range, xnnpack_filter_zero_point, xnnpack_requantization),
    "TRANSPOSE_CONV": (bias_scale, activation_range, xnnpack_requantization),
    "FULLY_CONNECTED": (bias_scale, activation_range, xnnpack_requantization),
}


def refusal(kernel: Kernel) -> str | None:
    """Why LiteRT refuses this builtin operator before computing, or None when no limit of it is met."""
    for limit in LIMITS.get(kernel.builtin, ()):
        reason = limit(kernel)
        if reason is not None:
            return reason
    return None

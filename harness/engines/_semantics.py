"""What each HAL operation computes, in the words of the HAL's types.hal (NN HAL 1.3), shortened to the part a bug
report needs: the rule that defines the expected values. The reference executor (harness.reference) implements
these rules; a reproducer's README quotes them for the operations of its model."""

from __future__ import annotations

from harness.hal import OperationType as O

_ELEMENTWISE = "element-wise, with NumPy-style broadcasting of the two inputs"

SEMANTICS: dict[int, str] = {
    O.ADD: f"output = input0 + input1, {_ELEMENTWISE}, then the fused activation",
    O.SUB: f"output = input0 - input1, {_ELEMENTWISE}, then the fused activation",
    O.MUL: f"output = input0 * input1, {_ELEMENTWISE}, then the fused activation",
    O.DIV: f"output = input0 / input1, {_ELEMENTWISE}, then the fused activation; for TENSOR_INT32 the quotient "
    "is rounded down (towards negative infinity: -5 / 2 = -3), and division by zero is undefined",
    O.MAXIMUM: f"output = max(input0, input1), {_ELEMENTWISE}",
    O.MINIMUM: f"output = min(input0, input1), {_ELEMENTWISE}",
    O.POW: f"output = input0 raised to the power input1, {_ELEMENTWISE}",
    O.ABS: "output = |input|, element-wise",
    O.NEG: "output = -input, element-wise",
    O.EXP: "output = e^input, element-wise",
    O.LOG: "output = the natural logarithm of input, element-wise",
    O.SQRT: "output = the square root of input, element-wise",
    O.RSQRT: "output = 1 / sqrt(input), element-wise",
    O.SIN: "output = sin(input), element-wise",
    O.FLOOR: "output = the largest integer not greater than input, element-wise",
    O.RELU: "output = max(0, input), element-wise",
    O.RELU1: "output = min(1, max(-1, input)), element-wise",
    O.RELU6: "output = min(6, max(0, input)), element-wise",
    O.LOGISTIC: "output = 1 / (1 + exp(-input)), element-wise; a quantized output has scale 1/256 and zero point 0 "
    "(-128 for the signed type)",
    O.TANH: "output = tanh(input), element-wise; a quantized output has scale 1/128 and zero point 128 (0 signed)",
    O.ELU: "output = input if input > 0, else alpha * (exp(input) - 1), element-wise",
    O.HARD_SWISH: "output = input * min(6, max(0, input + 3)) / 6, element-wise",
    O.PRELU: "output = input if input >= 0, else alpha * input, element-wise with alpha broadcast to the input",
    O.SOFTMAX: "output = exp(beta * (x - max(x))) / sum(exp(beta * (x - max(x)))) along the axis (the last one by "
    "default); a quantized output has scale 1/256 and zero point 0 (-128 signed)",
    O.LOG_SOFTMAX: "output = beta * x - log(sum(exp(beta * x))) along the axis",
    O.L2_NORMALIZATION: "output = x / sqrt(max(sum(x^2), epsilon)) along the axis (the last one by default); a "
    "quantized output has scale 1/128 and zero point 128 (0 signed)",
    O.LOCAL_RESPONSE_NORMALIZATION: "output = x / (bias + alpha * sum(x^2 over the depth window of the given "
    "radius))^beta along the axis (the last one by default)",
    O.INSTANCE_NORMALIZATION: "output = gamma * (x - mean) / sqrt(variance + epsilon) + beta, mean and variance "
    "taken per batch and channel over height and width",
    O.CONCATENATION: "output = the inputs joined along the axis, in input order",
    O.CONV_2D: "2-D convolution of the input (NHWC unless the layout flag says NCHW) with the filter [depth_out, "
    "filter_h, filter_w, depth_in], plus the bias, with the padding, strides and dilation given, then the fused "
    "activation",
    O.DEPTHWISE_CONV_2D: "depth-wise 2-D convolution: each input channel convolved with its own depth_multiplier "
    "filters [1, filter_h, filter_w, depth_out], plus the bias, with the padding, strides and dilation given, then "
    "the fused activation",
    O.GROUPED_CONV_2D: "2-D convolution in groups: the input's channels split into num_groups groups, each "
    "convolved with its own part of the filter, plus the bias, then the fused activation",
    O.TRANSPOSE_CONV_2D: "transposed 2-D convolution (the gradient of CONV_2D with respect to its input) with the "
    "filter, padding and strides given, plus the bias, then the fused activation",
    O.FULLY_CONNECTED: "output = activation(input x weights^T + bias), the input flattened to [batch, input_size]",
    O.AVERAGE_POOL_2D: "the mean of each filter window (padding excluded from the count), with the padding and "
    "strides given, then the fused activation",
    O.MAX_POOL_2D: "the maximum of each filter window, with the padding and strides given, then the fused activation",
    O.L2_POOL_2D: "sqrt(mean of x^2 over each filter window), with the padding and strides given, then the fused "
    "activation",
    O.RESHAPE: "the input's values in the same order, with the shape given (one dimension may be -1: inferred)",
    O.SQUEEZE: "the input without the size-1 dimensions listed (all of them when none are listed)",
    O.EXPAND_DIMS: "the input with a size-1 dimension inserted at the axis",
    O.TRANSPOSE: "the input with its dimensions permuted by perm (reversed when perm is omitted)",
    O.DEPTH_TO_SPACE: "blocks of depth rearranged into spatial blocks of block_size x block_size",
    O.SPACE_TO_DEPTH: "spatial blocks of block_size x block_size rearranged into depth",
    O.BATCH_TO_SPACE_ND: "the batch dimension rearranged into spatial blocks of the block shape",
    O.SPACE_TO_BATCH_ND: "spatial blocks of the block shape, after the padding, rearranged into the batch dimension",
    O.PAD: "the input padded with zeros (the zero point for quantized types) by the paddings given per dimension",
    O.PAD_V2: "the input padded with the pad value by the paddings given per dimension",
    O.SLICE: "the part of the input starting at begin, of the size given (-1: to the end)",
    O.STRIDED_SLICE: "the elements from begin to end (exclusive) with the strides given, with the begin, end and "
    "shrink masks applied",
    O.SPLIT: "the input split along the axis into num_splits equal parts",
    O.TILE: "the input repeated multiples[i] times along each dimension i",
    O.GATHER: "the slices of the input along the axis at the indices given",
    O.MEAN: "the mean over the dimensions listed (kept as size 1 when keep_dims is set)",
    O.REDUCE_SUM: "the sum over the dimensions listed (kept as size 1 when keep_dims is set)",
    O.REDUCE_PROD: "the product over the dimensions listed (kept as size 1 when keep_dims is set)",
    O.REDUCE_MAX: "the maximum over the dimensions listed (kept as size 1 when keep_dims is set)",
    O.REDUCE_MIN: "the minimum over the dimensions listed (kept as size 1 when keep_dims is set)",
    O.REDUCE_ALL: "the logical AND over the dimensions listed (kept as size 1 when keep_dims is set)",
    O.REDUCE_ANY: "the logical OR over the dimensions listed (kept as size 1 when keep_dims is set)",
    O.ARGMAX: "the index of the largest value along the axis (the first one on ties)",
    O.ARGMIN: "the index of the smallest value along the axis (the first one on ties)",
    O.TOPK_V2: "the k largest values of the last dimension, in descending order, and their indices",
    O.EQUAL: f"output = (input0 == input1), {_ELEMENTWISE}; quantized inputs compare their real values",
    O.NOT_EQUAL: f"output = (input0 != input1), {_ELEMENTWISE}; quantized inputs compare their real values",
    O.GREATER: f"output = (input0 > input1), {_ELEMENTWISE}; quantized inputs compare their real values",
    O.GREATER_EQUAL: f"output = (input0 >= input1), {_ELEMENTWISE}; quantized inputs compare their real values",
    O.LESS: f"output = (input0 < input1), {_ELEMENTWISE}; quantized inputs compare their real values",
    O.LESS_EQUAL: f"output = (input0 <= input1), {_ELEMENTWISE}; quantized inputs compare their real values",
    O.LOGICAL_AND: f"output = input0 AND input1, {_ELEMENTWISE}",
    O.LOGICAL_OR: f"output = input0 OR input1, {_ELEMENTWISE}",
    O.LOGICAL_NOT: "output = NOT input, element-wise",
    O.SELECT: "output = input1 where the condition is true, else input2, element-wise",
    O.CAST: "each value converted to the output type (float to integer truncates; quantized values convert as "
    "their stored integers)",
    O.QUANTIZE: "output = round(input / scale) + zeroPoint, clamped to the output type's range",
    O.DEQUANTIZE: "output = scale * (input - zeroPoint)",
    O.EMBEDDING_LOOKUP: "the rows of values at the indices given by lookups",
    O.HASHTABLE_LOOKUP: "the rows of values whose keys match the lookups (zeros and hit = 0 for a missing key)",
    O.LSH_PROJECTION: "locality-sensitive hashing of the input by the signs of the hash functions",
    O.RESIZE_BILINEAR: "the input resized to the output's height and width by bilinear interpolation (with the "
    "align_corners and half_pixel_centers flags)",
    O.RESIZE_NEAREST_NEIGHBOR: "the input resized to the output's height and width by the nearest neighbour (with "
    "the align_corners and half_pixel_centers flags)",
    O.CHANNEL_SHUFFLE: "the channels along the axis split into num_groups groups and interleaved",
    O.FILL: "a tensor of the shape given with every element equal to the value",
    O.RANK: "the number of dimensions of the input",
    O.IF: "runs the then-subgraph when the condition is true, else the else-subgraph, on the inputs",
    O.WHILE: "runs the body subgraph while the condition subgraph answers true, starting from the inputs",
    O.LSTM: "one step of a long short-term memory cell (input, forget, cell and output gates, optional peephole, "
    "projection and layer normalization)",
    O.RNN: "one step of a basic recurrent cell: output = activation(input x weights^T + state x "
    "recurrent_weights^T + bias)",
    O.SVDF: "one step of a singular value decomposition filter over a state of past activations",
    O.UNIDIRECTIONAL_SEQUENCE_LSTM: "an LSTM cell run over a sequence",
    O.UNIDIRECTIONAL_SEQUENCE_RNN: "a basic RNN cell run over a sequence",
    O.BIDIRECTIONAL_SEQUENCE_LSTM: "two LSTM cells run over a sequence, one forwards and one backwards",
    O.BIDIRECTIONAL_SEQUENCE_RNN: "two RNN cells run over a sequence, one forwards and one backwards",
    O.QUANTIZED_16BIT_LSTM: "one step of an LSTM cell on quantized values with 16-bit cell state",
    O.QUANTIZED_LSTM: "one step of an LSTM cell on quantized values with layer normalization",
    O.AXIS_ALIGNED_BBOX_TRANSFORM: "the boxes moved and resized by the deltas, clipped to the image",
    O.BOX_WITH_NMS_LIMIT: "per class, boxes above the score threshold kept by non-maximum suppression",
    O.DETECTION_POSTPROCESSING: "boxes decoded from anchors, then non-maximum suppression",
    O.GENERATE_PROPOSALS: "region proposals from anchors, deltas and scores, with non-maximum suppression",
    O.HEATMAP_MAX_KEYPOINT: "the location and score of the maximum of each heatmap, refined",
    O.ROI_ALIGN: "each region of interest resized to the output size by bilinear sampling",
    O.ROI_POOLING: "the maximum of each bin of each region of interest",
    O.RANDOM_MULTINOMIAL: "samples drawn from the categorical distributions the input's logits define",
}

QUANTIZED_VALUES = (
    "A quantized tensor stores integers q that stand for the real values scale * (q - zeroPoint); an operation "
    "computes on the real values and rounds the result to the nearest value its output's scale and zero point can "
    "hold, clamped to the type's range (TENSOR_QUANT8_ASYMM: 0..255, TENSOR_QUANT8_ASYMM_SIGNED: -128..127)."
)
FUSED_ACTIVATION = (
    "Fused activation codes: 0 none, 1 RELU (max(0, x)), 2 RELU1 (clamp to [-1, 1]), 3 RELU6 (clamp to [0, 6])."
)
RELAXED = (
    "The model allows relaxed computation (relaxComputationFloat32toFloat16): float32 may be computed with float16 "
    "range and precision."
)


def semantics(operation: int) -> str:
    """What the HAL says an operation computes ("" for an operation not described here)."""
    return SEMANTICS.get(operation, "")

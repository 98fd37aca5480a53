"""Operations decided unmappable onto ONNX operators, with the reason (the UNSUPPORTED table)."""

from __future__ import annotations

from driver_under_test.backends.onnxruntime._registry import declare_unsupported
from harness.hal import OperationType as O

_DETECTION = (
    "ONNX has no operator for this detection/ROI operation and no short composition of standard operators "
    "computes it (ONNX Runtime's RoiAlign differs in its sampling and layout contract)"
)
for _op in (
    O.AXIS_ALIGNED_BBOX_TRANSFORM,
    O.BOX_WITH_NMS_LIMIT,
    O.DETECTION_POSTPROCESSING,
    O.GENERATE_PROPOSALS,
    O.HEATMAP_MAX_KEYPOINT,
    O.ROI_ALIGN,
    O.ROI_POOLING,
):
    declare_unsupported(_op, _DETECTION)

declare_unsupported(
    O.HASHTABLE_LOOKUP,
    "no ONNX operator looks keys up and reports hits; a composition (Equal against every key, ArgMax, Gather, "
    "misses zeroed) is possible but not written",
)
declare_unsupported(O.LSH_PROJECTION, "ONNX has no hashing operator matching the HAL's farmhash-based signatures")
declare_unsupported(
    O.RANDOM_MULTINOMIAL, "ONNX Multinomial draws from its own generator; the HAL's seeds cannot be honoured"
)
declare_unsupported(O.OEM_OPERATION, "OEM operations are vendor-defined and have no ONNX counterpart")
declare_unsupported(
    O.QUANTIZED_16BIT_LSTM,
    "the HAL computes this cell in fixed point, rounding the gate pre-activations (Q3.12), the gate activations "
    "(Q0.15) and the cell state (Q4.11) half away from zero and saturating; ONNX LSTM has no quantized form and a "
    "QDQ composition of the cell step (QuantizeLinear rounds half to even) is not written",
)
declare_unsupported(
    O.QUANTIZED_LSTM,
    "ONNX LSTM has no quantized form; a QDQ composition of the HAL's integer cell (intermediate gate scales, "
    "layer normalization, projection) is not written, and the harness's reference has no kernel to check one "
    "against",
)

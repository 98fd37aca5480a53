"""Operations decided unmappable onto LiteRT's builtins, with the reason (the UNSUPPORTED table)."""

from __future__ import annotations

from driver_under_test.backends.litert._registry import declare_unsupported
from harness.hal import OperationType as O

_NO_BUILTIN = (
    "LiteRT has no builtin for this detection/ROI operation and no short composition of builtins computes it "
    "(the TFLite NNAPI delegate maps no TFLite operator to it either)"
)

for _op in (
    O.AXIS_ALIGNED_BBOX_TRANSFORM,
    O.BOX_WITH_NMS_LIMIT,
    O.GENERATE_PROPOSALS,
    O.HEATMAP_MAX_KEYPOINT,
    O.ROI_ALIGN,
    O.ROI_POOLING,
):
    declare_unsupported(_op, _NO_BUILTIN)

declare_unsupported(O.OEM_OPERATION, "OEM operations are vendor-defined and have no TFLite counterpart")

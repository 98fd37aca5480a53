"""The LiteRT backend of the driver: a validated HAL model translated into one TFLite flatbuffer, run by LiteRT.

Public surface (the driver's integration depends on these names):

- `unsupported_reason(model, subgraph, operation, constants)`: why an operation cannot be translated, or None
  (getSupportedOperations answers from it; IF/WHILE also check their referenced subgraphs, recursively).
- `translate(model, constants, absent=()) -> bytes`: the flatbuffer (deterministic for the same model);
  UnsupportedModel when some operation cannot be translated. `absent` names main inputs an execution gives no
  value (omitted optional operands): the backend runs such an execution with the translation made without them.
- `LiteRTProgram(flatbuffer, kernel_set, threads).run(inputs) -> outputs`: one interpreter, safe for concurrent
  runs; inputs and outputs in HAL storage dtypes and actual shapes.
- `KernelSet`: OPTIMIZED (default), XNNPACK, REFERENCE: the three kernel sets of one engine.
- `engine_version()`, `ConstantReader`, `UnsupportedModel`, `LiteRTMissing`, `RULES`, `UNSUPPORTED`.

LiteRT (`pip install 'nnfuzz[litert]'`) is imported only when a translation or a run needs it; support checks
work without it. The package imports only the standard library, numpy, harness.hal, flatbuffers and
ai_edge_litert, and nothing of the driver's numpy kernels.

Coverage: `RULES` holds one translation rule per translated operation (rules/: elementwise, shape, nn, recurrent,
detection, control_flow), `UNSUPPORTED` the operations decided unmappable, with the reason (rules/unsupported.py);
`NOT_YET_WRITTEN` lists the rest (none). The recurrent operations map to TFLite's builtins with their state in
variable tensors (rules/recurrent.py), DETECTION_POSTPROCESSING to LiteRT's custom TFLite_Detection_PostProcess,
RANDOM_MULTINOMIAL to MULTINOMIAL.

Kernel limits: quantization parameters the HAL allows but a LiteRT kernel refuses before computing (in its Prepare,
or the XNNPACK delegate when it builds its runtime) make the operation unsupported, on all three kernel sets since
support cannot depend on the kernel set; each rule describes the builtins it emits to the table of limits
(rules/_limits.py), whose reasons name the kernel and the kernel sets that refuse.

Float16: rules whose LiteRT kernels take TENSOR_FLOAT16 on all three kernel sets translate it as it is; the others
(`Rule.half`) compute it in float32: float16 inputs converted (constants at translation time, others by CAST), the
float32 builtin, CAST of the results back to float16, which stays within the HAL's float16 tolerance.

WHILE's loop timeout is not in the translation: LiteRT's WHILE has none, so the driver must enforce it.
"""

from __future__ import annotations

from driver_under_test.backends.litert._engine import KernelSet, LiteRTMissing, engine_version
from driver_under_test.backends.litert._graph import ConstantReader, UnsupportedModel
from driver_under_test.backends.litert._program import LiteRTProgram
from driver_under_test.backends.litert._registry import RULES, TABLE, UNSUPPORTED, Rule
from driver_under_test.backends.litert._translate import translate, unsupported_reason
from harness.hal import OperationType

# HAL operations with neither a rule nor a decision that they cannot be mapped: not written yet.
NOT_YET_WRITTEN: frozenset[OperationType] = TABLE.not_yet_written()

__all__ = [
    "NOT_YET_WRITTEN",
    "RULES",
    "UNSUPPORTED",
    "ConstantReader",
    "KernelSet",
    "LiteRTMissing",
    "LiteRTProgram",
    "Rule",
    "UnsupportedModel",
    "engine_version",
    "translate",
    "unsupported_reason",
]

"""The ONNX Runtime backend of the driver: a validated HAL model translated into one ONNX model, run by ONNX
Runtime's CPU provider.

Public surface (the driver's integration depends on these names):

- `unsupported_reason(model, subgraph, operation, constants)`: why an operation cannot be translated, or None
  (getSupportedOperations answers from it).
- `translate(model, constants, absent=()) -> bytes`: the serialized ONNX model (deterministic for the same model);
  UnsupportedModel when some operation cannot be translated. `absent` names main inputs an execution gives no
  value (omitted optional operands): the backend runs such an execution with the translation made without them.
- `OrtProgram(onnx_model, level, threads).run(inputs) -> outputs`: one InferenceSession, safe for concurrent
  runs; inputs and outputs in HAL storage dtypes and actual shapes.
- `OptLevel`: DISABLED, BASIC, EXTENDED, ALL (the default): ONNX Runtime's graph optimization levels, the
  backend's kernel sets.
- `engine_version()`, `ConstantReader`, `UnsupportedModel`, `OnnxRuntimeMissing`, `RULES`, `UNSUPPORTED`,
  `NOT_YET_WRITTEN`.

ONNX Runtime and onnx (`pip install 'nnfuzz[onnxruntime]'`) are imported only when a translation or a run needs
them; support checks work without them. The package imports only the standard library, numpy, harness.hal, onnx
and onnxruntime, and of the driver its error type (driver_under_test.errors, for an execution stopped at its time
limit) and nothing of its numpy kernels.

Coverage: `RULES` holds one translation rule per translated operation (rules/: elementwise, shape, nn,
reduction, recurrent, control_flow), `UNSUPPORTED` the operations decided unmappable, with the reason
(rules/unsupported.py); `NOT_YET_WRITTEN` lists the rest, which getSupportedOperations refuses as "no translation
rule written yet".

Types: float32 is computed as it is; float16 in float32 (Cast in, Cast of the result back: ONNX Runtime's CPU
provider has few float16 kernels, and one rounding of a float32 result is within the HAL's float16 tolerance);
quantized operands as QDQ (DequantizeLinear of each with its own scale and zero point, per channel along the
channel dimension, the float operator, QuantizeLinear into the output's parameters). Rules that only move data
move the stored values when the output stores them as the input does.
"""

from __future__ import annotations

from driver_under_test.backends.onnxruntime._engine import OnnxRuntimeMissing, OptLevel, engine_version
from driver_under_test.backends.onnxruntime._graph import ConstantReader, UnsupportedModel
from driver_under_test.backends.onnxruntime._program import OrtProgram
from driver_under_test.backends.onnxruntime._registry import RULES, TABLE, UNSUPPORTED, Rule
from driver_under_test.backends.onnxruntime._translate import translate, unsupported_reason
from harness.hal import OperationType

# HAL operations with neither a rule nor a decision that they cannot be mapped: not written yet.
NOT_YET_WRITTEN: frozenset[OperationType] = TABLE.not_yet_written()

__all__ = [
    "NOT_YET_WRITTEN",
    "RULES",
    "UNSUPPORTED",
    "ConstantReader",
    "OnnxRuntimeMissing",
    "OptLevel",
    "OrtProgram",
    "Rule",
    "UnsupportedModel",
    "engine_version",
    "translate",
    "unsupported_reason",
]

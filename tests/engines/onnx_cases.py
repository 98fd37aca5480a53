"""Cases to run on ONNX Runtime for the adapter's and the export's tests.

- `qdq_s8_case`: the reduced example of the registered divergence onnxruntime-qdq-s8-propagation (a FULLY_CONNECTED
  over an int8 input given at run time): ONNX Runtime fails to create the session at the extended and all levels,
  and computes the expected values at basic and disabled.
- `add_case` (tests.engines.planted): an ADD ONNX Runtime computes right at every level.
"""

from __future__ import annotations

import numpy as np

from harness.case import Case, inputs_to_json, model_from_json, simple_request_json
from harness.oracle.divergences import DIVERGENCES

QDQ_S8 = "onnxruntime-qdq-s8-propagation"
ORT = "driver_under_test:create_onnxruntime_device"
ORT_EXTENDED = "driver_under_test:create_onnxruntime_extended_device"


def qdq_s8_case() -> Case:
    """An execution case of the divergence's example: its model, its input values, a request over new pools."""
    example = DIVERGENCES[QDQ_S8].example
    model = model_from_json(example["model"])
    main = model.main
    inputs = [np.array(given["value"], np.int8).reshape(given["dimensions"]) for given in example["inputs"]]
    sizes = [int(np.prod(main.operands[i].dimensions)) for i in main.output_indexes]  # int8 outputs: one byte each
    request = simple_request_json(model, inputs, sizes)
    return Case("execution", model=example["model"], inputs=inputs_to_json(inputs), request=request)

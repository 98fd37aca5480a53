"""The ONNX Runtime part of a reproducer script: how ONNX Runtime runs an ONNX model at one graph optimization level.

Everything below the `# --- script ---` line is copied into the repro.py an export writes (EngineAdapter.script),
under a head that imports numpy as np and before the part every engine shares (`_script_check.py`). It may import
only the standard library, numpy and onnxruntime (lazily), and it defines what the shared part calls: ENGINE,
ENGINE_PACKAGE, ENGINE_MODULE, MODEL_FILE, KERNEL_SETS, describe_kernels(kernels) and run_model(model, kernels,
inputs).
"""

import numpy as np

# --- script ---

ENGINE = "ONNX Runtime"
ENGINE_PACKAGE = "onnxruntime"  # the distribution on the package registry
ENGINE_MODULE = "onnxruntime"  # what Python imports
MODEL_FILE = "model.onnx"
# ONNX Runtime's graph optimization levels, by the names this report uses, and the GraphOptimizationLevel of each.
KERNEL_SETS = {
    "all": "ORT_ENABLE_ALL",  # every rewrite, layout transformations included (ONNX Runtime's default)
    "extended": "ORT_ENABLE_EXTENDED",  # node fusions, QDQ groups into quantized kernels
    "basic": "ORT_ENABLE_BASIC",  # constant folding, redundant node elimination
    "disabled": "ORT_DISABLE_ALL",  # the graph as it is, one kernel per node
}
# ONNX Runtime's input type strings -> the numpy dtype a session takes.
INPUT_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(uint8)": np.uint8,
    "tensor(int8)": np.int8,
    "tensor(int16)": np.int16,
    "tensor(uint16)": np.uint16,
    "tensor(bool)": np.bool_,
}


def describe_kernels(kernels):
    """An optimization level as ONNX Runtime names it."""
    return f"{kernels} (GraphOptimizationLevel.{KERNEL_SETS[kernels]})"


def run_model(model, kernels, inputs):
    """Main's outputs for main's inputs, computed by ONNX Runtime's CPU provider at one graph optimization level
    (one thread). Each input is given in the dtype its graph input declares, in its actual shape."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, KERNEL_SETS[kernels])
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # warnings about the model (unused initializers) are not the bug
    session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    details = session.get_inputs()
    if len(details) != len(inputs):
        raise ValueError(f"the model takes {len(details)} inputs, {len(inputs)} given")
    feeds = {}
    for detail, value in zip(details, inputs):
        dtype = INPUT_DTYPES.get(detail.type)
        feeds[detail.name] = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
    return [np.asarray(v) for v in session.run(None, feeds)]

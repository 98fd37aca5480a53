"""The LiteRT part of a reproducer script: how LiteRT runs a TFLite model on one of its kernel sets.

Everything below the `# --- script ---` line is copied into the repro.py an export writes (EngineAdapter.script),
under a head that imports numpy as np and before the part every engine shares (`_script_check.py`). It may import
only the standard library, numpy and ai_edge_litert (lazily), and it defines what the shared part calls: ENGINE,
ENGINE_PACKAGE, ENGINE_MODULE, MODEL_FILE, KERNEL_SETS, describe_kernels(kernels) and run_model(model, kernels,
inputs).
"""

import numpy as np

# --- script ---

ENGINE = "LiteRT"
ENGINE_PACKAGE = "ai-edge-litert"  # the distribution on the package registry
ENGINE_MODULE = "ai_edge_litert"  # what Python imports
MODEL_FILE = "model.tflite"
# LiteRT's three kernel sets, by the names this report uses, and the op resolver type that selects each.
KERNEL_SETS = {
    "optimized": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",  # optimized kernels, no delegate
    "xnnpack": "BUILTIN",  # optimized kernels with the XNNPACK delegate (LiteRT's default)
    "reference": "BUILTIN_REF",  # reference kernels
}


def describe_kernels(kernels):
    """A kernel set as LiteRT names it."""
    return f"{kernels} (OpResolverType.{KERNEL_SETS[kernels]})"


def run_model(model, kernels, inputs):
    """Main's outputs for main's inputs, computed by LiteRT with one kernel set (one thread).

    Each input is given in its tensor's dtype and actual shape: a shape other than the declared one is set with
    resize_tensor_input before the tensors are allocated.
    """
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = getattr(OpResolverType, KERNEL_SETS[kernels])
    interpreter = Interpreter(model_content=model, experimental_op_resolver_type=resolver, num_threads=1)
    details = interpreter.get_input_details()
    if len(details) != len(inputs):
        raise ValueError(f"the model takes {len(details)} inputs, {len(inputs)} given")
    arrays = [np.asarray(value, dtype=detail["dtype"]) for value, detail in zip(inputs, details)]
    for detail, array in zip(details, arrays):
        if tuple(detail["shape"]) != array.shape:
            interpreter.resize_tensor_input(detail["index"], list(array.shape))
    interpreter.allocate_tensors()
    for detail, array in zip(details, arrays):
        interpreter.set_tensor(detail["index"], array if array.flags.c_contiguous else array.copy())
    interpreter.invoke()
    return [np.array(interpreter.get_tensor(d["index"])) for d in interpreter.get_output_details()]

"""The planted engine's part of a reproducer script (see planted_engine.py): LiteRT's reference kernels, and on the
"bad" kernel set the planted bug: a model with ADD gives one too many (or aborts with NNFUZZ_PLANTED_ABORT)."""

import numpy as np

# --- script ---

ENGINE = "planted-engine"
ENGINE_PACKAGE = "ai-edge-litert"
ENGINE_MODULE = "ai_edge_litert"
MODEL_FILE = "model.tflite"
KERNEL_SETS = {"good": "BUILTIN_REF", "bad": "BUILTIN_REF"}


def describe_kernels(kernels):
    """A kernel set by name."""
    return kernels


def run_model(model, kernels, inputs):
    """Main's outputs on LiteRT's reference kernels, with the planted bug on "bad" for models with ADD."""
    import os

    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    parsed = schema.ModelT.InitFromObj(schema.Model.GetRootAs(model, 0))
    has_add = any(code.builtinCode == schema.BuiltinOperator.ADD for code in parsed.operatorCodes or [])
    if kernels == "bad" and has_add and os.environ.get("NNFUZZ_PLANTED_ABORT"):
        os.abort()
    interpreter = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    details = interpreter.get_input_details()
    for detail, value in zip(details, inputs):
        if tuple(detail["shape"]) != np.shape(value):
            interpreter.resize_tensor_input(detail["index"], list(np.shape(value)))
    interpreter.allocate_tensors()
    for detail, value in zip(details, inputs):
        interpreter.set_tensor(detail["index"], np.ascontiguousarray(value, dtype=detail["dtype"]))
    interpreter.invoke()
    outputs = [np.array(interpreter.get_tensor(d["index"])) for d in interpreter.get_output_details()]
    if kernels == "bad" and has_add:
        outputs = [np.asarray(o + 1, o.dtype) for o in outputs]
    return outputs

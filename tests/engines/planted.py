"""Devices over LiteRT whose engine model is planted for the export's tests, each a driver spec of its own
(`tests.engines.planted:wrong_operation_device`), and small cases to export.

- `wrong_operation_device`: the engine model computes SUB where the HAL model says ADD (a wrong result).
- `aborting_device`: the engine model is a uint8 ADD without quantization parameters, on which LiteRT aborts the
  process (FIELD_NOTES: SIGABRT).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from driver_under_test import create_litert_device
from driver_under_test.backends.litert._engine import flatbuffers, schema
from harness.case import Case, inputs_to_json, model_to_json, simple_request_json
from harness.hal import ErrorStatus, Model, OperationType, numpy_dtype
from tests.driver.backends.litert.build import Build, T


def add_case(type_: int = T.TENSOR_FLOAT32, dims=(2, 3), scale: float = 0.0, zero_point: int = 0) -> Case:
    """An execution case of out = ADD(a, b) on two model inputs, with small inputs."""
    b = Build()
    a = b.input(type_, dims, scale, zero_point)
    c = b.input(type_, dims, scale, zero_point)
    out = b.output(type_, dims, scale, zero_point)
    b.op(OperationType.ADD, [a, c, b.i32(0)], [out])
    model = b.model()
    count = int(np.prod(dims))
    dtype = numpy_dtype(type_)
    inputs = [
        (np.arange(count) % 7 + 1).astype(dtype).reshape(dims),
        (np.arange(count) % 5 + 2).astype(dtype).reshape(dims),
    ]
    request = simple_request_json(model, inputs, [count * dtype.itemsize])
    return Case("execution", model=model_to_json(model), inputs=inputs_to_json(inputs), request=request)


def _sub_of_add(model: Model) -> Model:
    main = model.main
    operations = [replace(op, type=OperationType.SUB) if op.type == OperationType.ADD else op for op in main.operations]
    return replace(model, main=replace(main, operations=operations))


def wrong_operation_device(faults=None, **options):
    """A LiteRT device whose engine model of an ADD model computes SUB."""
    device = create_litert_device(faults, **options)
    export = device.export_engine_model
    device.export_engine_model = lambda model: export(_sub_of_add(model))
    return device


def aborting_flatbuffer() -> bytes:
    """ADD of two uint8 [2, 3] tensors with no quantization parameters: LiteRT aborts preparing it."""
    s, fb = schema(), flatbuffers()
    model = s.ModelT()
    model.version = 3
    model.buffers = [s.BufferT()]
    code = s.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = s.BuiltinOperator.ADD
    code.version = 1
    model.operatorCodes = [code]
    graph = s.SubGraphT()
    graph.tensors = []
    for k in range(3):
        tensor = s.TensorT()
        tensor.shape, tensor.buffer, tensor.name, tensor.type = [2, 3], 0, f"t{k}", s.TensorType.UINT8
        graph.tensors.append(tensor)
    graph.inputs, graph.outputs = [0, 1], [2]
    op = s.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, [0, 1], [2]
    op.builtinOptionsType, op.builtinOptions = s.BuiltinOptions.AddOptions, s.AddOptionsT()
    graph.operators = [op]
    model.subgraphs = [graph]
    builder = fb.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def aborting_device(faults=None, **options):
    """A LiteRT device whose engine model of any model is one LiteRT aborts on."""
    device = create_litert_device(faults, **options)
    export = device.export_engine_model

    def planted(model: Model):
        status, engine_model = export(model)
        if status != ErrorStatus.NONE:
            return status, engine_model
        return status, replace(engine_model, data=aborting_flatbuffer())

    device.export_engine_model = planted
    return device

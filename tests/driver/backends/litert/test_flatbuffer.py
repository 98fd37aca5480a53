"""The flatbuffer writer: what it writes reads back field for field through the schema's own reader, every value
sits aligned from the start of the file, options tables keep their defaults out, and LiteRT runs the result."""

from __future__ import annotations

import numpy as np
import pytest

from driver_under_test.backends.litert import KernelSet
from driver_under_test.backends.litert import _flatbuffer as fb
from driver_under_test.backends.litert._engine import make_interpreter, schema

s = schema()
Vi, Vf, Vq = fb.VECTOR + "i", fb.VECTOR + "f", fb.VECTOR + "q"


def tensor(name: str, shape: list[int], type_name: str = "FLOAT32", buffer: int = 0, **more) -> fb.Table:
    values = [
        ("Shape", shape, Vi),
        ("Type", getattr(s.TensorType, type_name), None),
        ("Buffer", buffer, None),
        ("Name", name, fb.STRING),
        ("HasRank", True, None),
    ]
    values += [(k, v, kind) for k, (v, kind) in more.items()]
    return fb.fields(s, "Tensor", values)


def operator(opcode: int, inputs: list[int], outputs: list[int], options: str | None = None, **fields) -> fb.Table:
    values = [("OpcodeIndex", opcode, None), ("Inputs", inputs, Vi), ("Outputs", outputs, Vi)]
    if options is not None:
        values.append(("BuiltinOptionsType", getattr(s.BuiltinOptions, options), None))
        values.append(("BuiltinOptions", fb.recorded(getattr(s, options + "T")(**fields)), fb.TABLE))
    return fb.fields(s, "Operator", values)


def model(subgraph: fb.Table, codes: list[str], buffers: list[bytes]) -> bytes:
    operator_codes = [
        fb.fields(
            s,
            "OperatorCode",
            [("BuiltinCode", getattr(s.BuiltinOperator, c), None), ("Version", 1, None)],
        )
        for c in codes
    ]
    root = fb.fields(
        s,
        "Model",
        [
            ("Version", 3, None),
            ("OperatorCodes", operator_codes, fb.TABLES),
            ("Subgraphs", [subgraph], fb.TABLES),
            ("Description", "written", fb.STRING),
            ("Buffers", [fb.fields(s, "Buffer", [("Data", d or None, fb.ALIGNED16)]) for d in buffers], fb.TABLES),
        ],
    )
    return fb.write_file(root, b"TFL3")


CONSTANT = np.array([0.5, -1.0, 2.0, 4.0, 8.0, -0.25], np.float32)


def add_of_a_constant() -> bytes:
    """main(x) = ADD(x, CONSTANT) with RELU6, then SQUEEZE of the leading 1, with a quantized spare tensor."""
    quant = fb.fields(
        s,
        "QuantizationParameters",
        [("Scale", [0.5, 0.25], Vf), ("ZeroPoint", [-3, 7], Vq), ("QuantizedDimension", 1, None)],
    )
    tensors = [
        tensor("x", [1, 2, 3]),
        tensor("c", [1, 2, 3], buffer=2),
        tensor("sum", [1, 2, 3]),
        tensor("out", [2, 3], ShapeSignature=([-1, 3], Vi)),
        tensor("spare", [3, 2], "INT8", Quantization=(quant, fb.TABLE)),
    ]
    operators = [
        operator(0, [0, 1], [2], "AddOptions", fusedActivationFunction=s.ActivationFunctionType.RELU6),
        operator(1, [2], [3], "SqueezeOptions", squeezeDims=[0]),
    ]
    subgraph = fb.fields(
        s,
        "SubGraph",
        [
            ("Tensors", tensors, fb.TABLES),
            ("Inputs", [0], Vi),
            ("Outputs", [3], Vi),
            ("Operators", operators, fb.TABLES),
            ("Name", "main", fb.STRING),
        ],
    )
    # Buffer 1 holds 3 odd bytes so that buffer 2's data would be misaligned without padding.
    return model(subgraph, ["ADD", "SQUEEZE"], [b"", b"\x01\x02\x03", CONSTANT.tobytes()])


def test_a_written_model_reads_back_field_for_field() -> None:
    data = add_of_a_constant()
    assert s.Model.ModelBufferHasIdentifier(data, 0)
    m = s.ModelT.InitFromPackedBuf(data, 0)
    assert m.version == 3 and m.description == b"written"
    assert [c.builtinCode for c in m.operatorCodes] == [s.BuiltinOperator.ADD, s.BuiltinOperator.SQUEEZE]
    assert bytes(m.buffers[1].data) == b"\x01\x02\x03"
    assert np.frombuffer(bytes(m.buffers[2].data), np.float32).tolist() == CONSTANT.tolist()
    assert m.buffers[0].data is None
    (main,) = m.subgraphs
    assert main.name == b"main" and list(main.inputs) == [0] and list(main.outputs) == [3]
    names = [t.name for t in main.tensors]
    assert names == [b"x", b"c", b"sum", b"out", b"spare"]
    assert [list(t.shape) for t in main.tensors] == [[1, 2, 3], [1, 2, 3], [1, 2, 3], [2, 3], [3, 2]]
    assert main.tensors[1].buffer == 2
    assert list(main.tensors[3].shapeSignature) == [-1, 3]
    spare = main.tensors[4]
    assert spare.type == s.TensorType.INT8
    assert list(spare.quantization.scale) == [0.5, 0.25]
    assert list(spare.quantization.zeroPoint) == [-3, 7]
    assert spare.quantization.quantizedDimension == 1
    add, squeeze = main.operators
    assert add.opcodeIndex == 0 and list(add.inputs) == [0, 1] and list(add.outputs) == [2]
    assert add.builtinOptionsType == s.BuiltinOptions.AddOptions
    assert add.builtinOptions.fusedActivationFunction == s.ActivationFunctionType.RELU6
    assert squeeze.builtinOptionsType == s.BuiltinOptions.SqueezeOptions
    assert list(squeeze.builtinOptions.squeezeDims) == [0]


def test_every_value_sits_aligned_from_the_start_of_the_file() -> None:
    data = add_of_a_constant()
    m = s.Model.GetRootAs(data, 0)
    for k in range(m.BuffersLength()):
        buffer = m.Buffers(k)
        if buffer.DataLength():
            start = buffer._tab.Vector(buffer._tab.Offset(4))
            assert start % 16 == 0, f"buffer {k} data at {start}"
    spare = m.Subgraphs(0).Tensors(4)
    quant = spare.Quantization()
    zero_points = quant._tab.Vector(quant._tab.Offset(10))  # zero_point: int64 elements
    assert zero_points % 8 == 0
    for k in range(m.Subgraphs(0).TensorsLength()):
        assert m.Subgraphs(0).Tensors(k)._tab.Pos % 4 == 0


def test_the_interpreter_runs_a_written_model() -> None:
    interpreter = make_interpreter(add_of_a_constant(), KernelSet.OPTIMIZED, 1)
    interpreter.allocate_tensors()
    x = np.array([[[1.0, 2.0, -9.0], [3.0, 0.0, 1.0]]], np.float32)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    got = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    assert got.tolist() == [[1.5, 1.0, 0.0], [6.0, 6.0, 0.75]]


def test_recorded_options_keep_defaults_out_and_vectors_in() -> None:
    conv = fb.recorded(s.Conv2DOptionsT(strideW=2, dilationWFactor=1))
    layout = fb.slots(s, "Conv2DOptions")
    assert conv.fields == [(layout["StrideW"][0], "i", 2)]
    squeeze = fb.recorded(s.SqueezeOptionsT(squeezeDims=[2, 0]))
    assert squeeze.fields == [(fb.slots(s, "SqueezeOptions")["SqueezeDims"][0], Vi, [2, 0])]


def test_slots_are_the_schema_field_ids() -> None:
    # Field ids as schema.fbs numbers them.
    assert fb.slots(s, "Tensor")["ShapeSignature"] == (7, "")
    assert fb.slots(s, "Tensor")["Type"] == (1, "b")
    assert fb.slots(s, "Tensor")["Buffer"] == (2, "I")
    assert fb.slots(s, "Operator")["BuiltinOptionsType"] == (3, "B")
    assert fb.slots(s, "Buffer")["Data"] == (0, "")


def test_an_offset_field_without_its_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="Tensor.Name is an offset field"):
        fb.fields(s, "Tensor", [("Name", "x", None)])


def test_a_file_identifier_has_four_bytes() -> None:
    with pytest.raises(ValueError, match="4 bytes"):
        fb.write_file(fb.Table(), b"TFL")

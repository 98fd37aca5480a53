"""The reference executor on hand-built models; every expected value is computed by hand in the comments."""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest

import harness.ops
from harness.hal import (
    DataLocation,
    ErrorStatus,
    Model,
    Operand,
    Operation,
    Subgraph,
)
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.hal.memory import create_ashmem
from harness.ops import KernelContext, OpSpec
from harness.reference.executor import (
    NoKernelError,
    effective_loop_timeout,
    judge_output_sizes,
    missing_kernels,
    run_model,
)


class ModelBuilder:
    """Builds a Model operand by operand; constants go into one shared operandValues blob."""

    def __init__(self) -> None:
        self.values = bytearray()

    def const(self, operand_type: T, dims: list[int], data: bytes) -> Operand:
        """A CONSTANT_COPY operand whose bytes are appended to operandValues (4-byte aligned)."""
        while len(self.values) % 4:
            self.values.append(0)
        location = DataLocation(pool_index=0, offset=len(self.values), length=len(data))
        self.values += data
        return Operand(type=operand_type, dimensions=dims, lifetime=L.CONSTANT_COPY, location=location)

    def model(self, main: Subgraph, referenced: list[Subgraph] | None = None, relaxed: bool = False) -> Model:
        return Model(
            main=main,
            referenced=referenced or [],
            operand_values=bytes(self.values),
            relax_computation_float32_to_float16=relaxed,
        )


def tensor(operand_type: T, dims: list[int], lifetime: L) -> Operand:
    return Operand(type=operand_type, dimensions=dims, lifetime=lifetime)


def i32(value: int) -> bytes:
    return struct.pack("<i", value)


def f32s(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def subgraph_ref(index: int) -> Operand:
    return Operand(type=T.SUBGRAPH, lifetime=L.SUBGRAPH, location=DataLocation(offset=index))


def require(*ops: Op) -> None:
    """Skip until the catalogue provides kernels for these operations (it is filled family by family)."""
    missing = [op.name for op in ops if (spec := harness.ops.get(op)) is None or spec.kernel is None]
    if missing:
        pytest.skip(f"catalogue has no kernel yet for {', '.join(missing)}")


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


# ---------------------------------------------------------------- ADD then MUL through a temporary


def add_mul_model(activation: int = 0) -> Model:
    """out = (a + b) * c, the sum living in a TEMPORARY_VARIABLE; MUL applies `activation`."""
    b = ModelBuilder()
    none, act = b.const(T.INT32, [], i32(0)), b.const(T.INT32, [], i32(activation))
    main = Subgraph(
        operands=[
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),  # 0 a
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),  # 1 b
            none,  # 2
            tensor(T.TENSOR_FLOAT32, [2], L.TEMPORARY_VARIABLE),  # 3 a + b
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),  # 4 c
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_OUTPUT),  # 5 out
            act,  # 6
        ],
        operations=[Operation(Op.ADD, [0, 1, 2], [3]), Operation(Op.MUL, [3, 4, 6], [5])],
        input_indexes=[0, 1, 4],
        output_indexes=[5],
    )
    return b.model(main)


def test_add_then_mul_through_a_temporary() -> None:
    require(Op.ADD, Op.MUL)
    # ([1, 2] + [3, 4]) * [10, -1] = [4, 6] * [10, -1] = [40, -6]
    result = run_model(add_mul_model(), [f32(1, 2), f32(3, 4), f32(10, -1)])
    assert result.status == ErrorStatus.NONE, result.message
    assert len(result.outputs) == 1
    assert result.outputs[0].dtype == np.float32
    np.testing.assert_array_equal(result.outputs[0], f32(40, -6))


def test_fused_relu_clamps_the_negative_product() -> None:
    require(Op.ADD, Op.MUL)
    # Same as above with RELU (code 1) on MUL: [40, -6] -> [40, 0].
    result = run_model(add_mul_model(activation=1), [f32(1, 2), f32(3, 4), f32(10, -1)])
    np.testing.assert_array_equal(result.outputs[0], f32(40, 0))


def test_constant_reference_is_read_from_its_pool() -> None:
    require(Op.ADD)
    pool = create_ashmem(64)
    try:
        pool.write(16, f32s(0.5, -0.25))
        b = ModelBuilder()
        main = Subgraph(
            operands=[
                tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),
                Operand(T.TENSOR_FLOAT32, [2], lifetime=L.CONSTANT_REFERENCE, location=DataLocation(0, 16, 8)),
                b.const(T.INT32, [], i32(0)),
                tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_OUTPUT),
            ],
            operations=[Operation(Op.ADD, [0, 1, 2], [3])],
            input_indexes=[0],
            output_indexes=[3],
        )
        model = b.model(main)
        model.pools = [pool]
        # [1, 1] + [0.5, -0.25] = [1.5, 0.75]
        result = run_model(model, [f32(1, 1)])
        np.testing.assert_array_equal(result.outputs[0], f32(1.5, 0.75))
    finally:
        pool.close()


def test_unknown_output_dimensions_take_the_actual_shape() -> None:
    require(Op.ADD)
    b = ModelBuilder()
    main = Subgraph(
        operands=[
            tensor(T.TENSOR_FLOAT32, [0, 0], L.SUBGRAPH_INPUT),
            tensor(T.TENSOR_FLOAT32, [0, 0], L.SUBGRAPH_INPUT),
            b.const(T.INT32, [], i32(0)),
            tensor(T.TENSOR_FLOAT32, [], L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(Op.ADD, [0, 1, 2], [3])],
        input_indexes=[0, 1],
        output_indexes=[3],
    )
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    result = run_model(b.model(main), [x, x])
    assert result.outputs[0].shape == (2, 3)
    np.testing.assert_array_equal(result.outputs[0], 2 * x)


def test_input_conflicting_with_declared_dimensions_is_invalid() -> None:
    require(Op.ADD, Op.MUL)
    result = run_model(add_mul_model(), [f32(1, 2, 3), f32(3, 4), f32(10, -1)])
    assert result.status == ErrorStatus.INVALID_ARGUMENT
    assert result.outputs == []
    assert "input 0" in result.message


def test_wrong_number_of_inputs_is_invalid() -> None:
    require(Op.ADD, Op.MUL)
    result = run_model(add_mul_model(), [f32(1, 2)])
    assert result.status == ErrorStatus.INVALID_ARGUMENT


def test_operation_without_kernel_raises_no_kernel_error() -> None:
    b = ModelBuilder()
    main = Subgraph(
        operands=[tensor(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT), tensor(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_OUTPUT)],
        operations=[Operation(Op.OEM_OPERATION, [0], [1])],
        input_indexes=[0],
        output_indexes=[1],
    )
    model = b.model(main)
    assert missing_kernels(model) == ["OEM_OPERATION"]
    with pytest.raises(NoKernelError) as info:
        run_model(model, [f32(1)])
    assert info.value.op == "OEM_OPERATION"


# ---------------------------------------------------------------- what kernels are given (a recording kernel)


def test_kernels_see_no_value_subgraph_operands_and_the_relaxed_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[KernelContext] = []

    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        seen.append(ctx)
        return [np.asarray(ctx.inputs[0]) * 2]

    spec = OpSpec(op=Op.OEM_OPERATION, family="test", signatures=[], kernel=kernel)
    real_get = harness.ops.get
    monkeypatch.setattr(harness.ops, "get", lambda op: spec if op == Op.OEM_OPERATION else real_get(op))
    main = Subgraph(
        operands=[
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),
            Operand(T.TENSOR_FLOAT32, [2], lifetime=L.NO_VALUE),
            subgraph_ref(0),
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(Op.OEM_OPERATION, [0, 1, 2], [3])],
        input_indexes=[0],
        output_indexes=[3],
    )
    referenced = Subgraph(
        operands=[tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT), tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_OUTPUT)],
        operations=[Operation(Op.OEM_OPERATION, [0], [1])],
        input_indexes=[0],
        output_indexes=[1],
    )
    model = ModelBuilder().model(main, [referenced], relaxed=True)
    result = run_model(model, [f32(1, 2)])
    assert result.status == ErrorStatus.NONE
    ctx = seen[0]
    assert ctx.relaxed is True
    assert ctx.inputs[1] is None and not ctx.has(1)
    assert ctx.input_operands[2].type == T.SUBGRAPH and ctx.input_operands[2].location.offset == 0
    assert ctx.loop_deadline_ns is None  # only WHILE gets a loop deadline
    # run_subgraph(0, ...) runs the referenced subgraph: its OEM kernel doubles [3, 4] -> [6, 8].
    np.testing.assert_array_equal(ctx.run_subgraph(0, [f32(3, 4)])[0], f32(6, 8))
    np.testing.assert_array_equal(result.outputs[0], f32(2, 4))


def test_a_kernel_rejecting_its_data_fails_the_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    def kernel(ctx: KernelContext) -> list[np.ndarray]:
        raise IndexError("lookup index 7 out of range")

    spec = OpSpec(op=Op.OEM_OPERATION, family="test", signatures=[], kernel=kernel)
    monkeypatch.setattr(harness.ops, "get", lambda op: spec)
    main = Subgraph(
        operands=[tensor(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT), tensor(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_OUTPUT)],
        operations=[Operation(Op.OEM_OPERATION, [0], [1])],
        input_indexes=[0],
        output_indexes=[1],
    )
    result = run_model(ModelBuilder().model(main), [f32(1)])
    assert result.status == ErrorStatus.GENERAL_FAILURE
    assert "lookup index 7" in result.message


# ---------------------------------------------------------------- IF and WHILE with referenced subgraphs


def binary_subgraph(op: Op, b: ModelBuilder) -> Subgraph:
    """x op y for two float32 [2] inputs."""
    return Subgraph(
        operands=[
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),
            b.const(T.INT32, [], i32(0)),
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(op, [0, 1, 2], [3])],
        input_indexes=[0, 1],
        output_indexes=[3],
    )


def if_model() -> Model:
    """IF(cond, then = a + b, else = a * b)."""
    b = ModelBuilder()
    then_branch, else_branch = binary_subgraph(Op.ADD, b), binary_subgraph(Op.MUL, b)
    main = Subgraph(
        operands=[
            tensor(T.TENSOR_BOOL8, [1], L.SUBGRAPH_INPUT),  # 0 cond
            subgraph_ref(0),  # 1 then
            subgraph_ref(1),  # 2 else
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),  # 3 a
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_INPUT),  # 4 b
            tensor(T.TENSOR_FLOAT32, [2], L.SUBGRAPH_OUTPUT),  # 5 out
        ],
        operations=[Operation(Op.IF, [0, 1, 2, 3, 4], [5])],
        input_indexes=[0, 3, 4],
        output_indexes=[5],
    )
    return b.model(main, [then_branch, else_branch])


@pytest.mark.parametrize(("condition", "expected"), [(True, [6.0, 8.0]), (False, [8.0, 15.0])])
def test_if_runs_the_branch_the_condition_selects(condition: bool, expected: list[float]) -> None:
    require(Op.IF, Op.ADD, Op.MUL)
    # a = [2, 3], b = [4, 5]: then a + b = [6, 8]; else a * b = [8, 15].
    result = run_model(if_model(), [np.array([condition]), f32(2, 3), f32(4, 5)])
    assert result.status == ErrorStatus.NONE, result.message
    np.testing.assert_array_equal(result.outputs[0], f32(*expected))


def while_model(factor: float, limit: float) -> Model:
    """x = start; while x < limit: x = x * factor. One loop-carried float32 [1] operand."""
    b = ModelBuilder()
    cond = Subgraph(
        operands=[
            tensor(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT),
            b.const(T.TENSOR_FLOAT32, [1], f32s(limit)),
            tensor(T.TENSOR_BOOL8, [1], L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(Op.LESS, [0, 1], [2])],
        input_indexes=[0],
        output_indexes=[2],
    )
    body = Subgraph(
        operands=[
            tensor(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT),
            b.const(T.TENSOR_FLOAT32, [1], f32s(factor)),
            b.const(T.INT32, [], i32(0)),
            tensor(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(Op.MUL, [0, 1, 2], [3])],
        input_indexes=[0],
        output_indexes=[3],
    )
    main = Subgraph(
        operands=[
            subgraph_ref(0),
            subgraph_ref(1),
            tensor(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_INPUT),
            tensor(T.TENSOR_FLOAT32, [1], L.SUBGRAPH_OUTPUT),
        ],
        operations=[Operation(Op.WHILE, [0, 1, 2], [3])],
        input_indexes=[2],
        output_indexes=[3],
    )
    return b.model(main, [cond, body])


def test_while_iterates_until_the_condition_is_false() -> None:
    require(Op.WHILE, Op.LESS, Op.MUL)
    # 1 -> 2 -> 4 -> ... -> 64 -> 128; 128 < 100 is false, so the loop ends at 128.
    result = run_model(while_model(factor=2.0, limit=100.0), [f32(1)])
    assert result.status == ErrorStatus.NONE, result.message
    np.testing.assert_array_equal(result.outputs[0], f32(128))


def test_while_whose_condition_is_false_at_once_returns_its_input() -> None:
    require(Op.WHILE, Op.LESS, Op.MUL)
    # 500 < 100 is false: zero iterations, the output is the initial value.
    result = run_model(while_model(factor=2.0, limit=100.0), [f32(500)])
    np.testing.assert_array_equal(result.outputs[0], f32(500))


def test_endless_while_misses_the_loop_deadline() -> None:
    require(Op.WHILE, Op.LESS, Op.MUL)
    # x * 1 stays 1 < 100 forever; a 50 ms loop timeout must end it.
    start = time.monotonic()
    result = run_model(while_model(factor=1.0, limit=100.0), [f32(1)], loop_timeout_ns=50_000_000)
    assert result.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT
    assert result.outputs == []
    assert time.monotonic() - start < 5.0


def test_loop_timeout_defaults_to_2s_and_is_capped_at_15s() -> None:
    assert effective_loop_timeout(None) == 2_000_000_000
    assert effective_loop_timeout(30_000_000_000) == 15_000_000_000
    assert effective_loop_timeout(1_000) == 1_000


# ---------------------------------------------------------------- D7: output buffer sizes


def three_output_model() -> Model:
    main = Subgraph(
        operands=[
            tensor(T.TENSOR_FLOAT32, [2, 3], L.SUBGRAPH_OUTPUT),
            Operand(T.TENSOR_QUANT8_ASYMM, [5], scale=1.0, lifetime=L.SUBGRAPH_OUTPUT),
            tensor(T.TENSOR_INT32, [0], L.SUBGRAPH_OUTPUT),
        ],
        output_indexes=[0, 1, 2],
    )
    return Model(main=main)


def test_judge_output_sizes_marks_exactly_the_too_small_outputs() -> None:
    outputs = [np.zeros((2, 3), np.float32), np.zeros(5, np.uint8), np.zeros(3, np.int32)]
    # Needs: 6 * 4 = 24 bytes (given 24: enough), 5 * 1 = 5 (given 4: short), 3 * 4 = 12 (given 8: short).
    status, shapes = judge_output_sizes(three_output_model(), [24, 4, 8], outputs)
    assert status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [s.is_sufficient for s in shapes] == [True, False, False]
    assert [s.dimensions for s in shapes] == [[2, 3], [5], [3]]


def test_judge_output_sizes_accepts_large_enough_buffers() -> None:
    outputs = [np.zeros((2, 3), np.float32), np.zeros(5, np.uint8), np.zeros(0, np.int32)]
    status, shapes = judge_output_sizes(three_output_model(), [100, 5, 0], outputs)
    assert status == ErrorStatus.NONE
    assert all(s.is_sufficient for s in shapes)
    assert shapes[2].dimensions == [0]


def test_an_overflowing_int32_add_is_unspecified_not_a_crash() -> None:
    import struct

    from harness.hal import (
        DataLocation,
        Model,
        Operand,
        OperandLifeTime,
        OperandType,
        Operation,
        OperationType,
        Subgraph,
    )
    from harness.reference.executor import run_model

    i32 = OperandType.TENSOR_INT32
    operands = [
        Operand(i32, [1], 1, lifetime=OperandLifeTime.SUBGRAPH_INPUT),
        Operand(i32, [1], 1, lifetime=OperandLifeTime.SUBGRAPH_INPUT),
        Operand(OperandType.INT32, [], 1, lifetime=OperandLifeTime.CONSTANT_COPY, location=DataLocation(0, 0, 4)),
        Operand(i32, [1], 0, lifetime=OperandLifeTime.SUBGRAPH_OUTPUT),
    ]
    model = Model(
        main=Subgraph(operands, [Operation(OperationType.ADD, [0, 1, 2], [3])], [0, 1], [3]),
        operand_values=struct.pack("<i", 0),
    )
    big = np.array([2**31 - 1], dtype=np.int32)
    result = run_model(model, [big, np.array([1], dtype=np.int32)])
    assert result.unspecified and result.outputs == []
    fine = run_model(model, [big, np.array([-1], dtype=np.int32)])
    assert not fine.unspecified and fine.outputs[0].tolist() == [2**31 - 2]

"""The reference executor: runs a model's operations in order with the catalogue's reference kernels.

It is the oracle's answer to "what should these inputs produce": a status, the output values in their stored
form with their actual shapes, and a message when the status is not NONE. It trusts the model to be valid
(the reference validator decides that) but still fails cleanly on data-dependent problems a kernel reports.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness import ops
from harness.hal import (
    LOOP_TIMEOUT_DEFAULT_NS,
    LOOP_TIMEOUT_MAXIMUM_NS,
    ErrorStatus,
    Model,
    Operand,
    OperandLifeTime,
    Operation,
    OperationType,
    OutputShape,
    Subgraph,
    element_size,
    numpy_dtype,
)
from harness.hal.sizes import SCALAR_TYPES
from harness.hal.values import constant_bytes, constant_value
from harness.ops import KernelContext, LoopTimeoutError
from harness.ops.common import (
    InvalidParameter,
    UnspecifiedResult,
    native_float32,
    quantization_lean,
    quantization_nudge,
    scattered_signs,
)

# Exceptions a kernel raises for bad data (an index out of range, a division by zero...): the execution fails
# with GENERAL_FAILURE, as a driver's would. Anything else escaping a kernel is a catalogue bug and propagates.
_DATA_ERRORS = (ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError, FloatingPointError)


class NoKernelError(Exception):
    """The catalogue has no reference kernel for an operation the model uses."""

    def __init__(self, op: str) -> None:
        super().__init__(f"no reference kernel for {op}")
        self.op = op


@dataclass
class ReferenceResult:
    """The reference's outcome: a status and, when it is NONE, the outputs (stored dtype, actual shapes)."""

    status: ErrorStatus
    outputs: list[np.ndarray] = field(default_factory=list)
    message: str = ""
    # The HAL leaves this execution's result unspecified (e.g. int32 overflow): any driver answer is acceptable,
    # so status and outputs must not be judged.
    unspecified: bool = False


class _ExecutionFailed(Exception):
    """Ends a reference execution with a status (converted to a ReferenceResult at the boundary)."""

    def __init__(self, status: ErrorStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# Relative nudge of a value about to be quantized, per unit of perturbation: far above float64 noise (1e-16) so a
# tie is pushed to one side, far below a quantization step (at least 1 / 65536 of the value) so nothing else moves.
QUANTIZATION_NUDGE_PER_STEP = 1e-9


def run_model(
    model: Model,
    inputs: Sequence[np.ndarray | None],
    *,
    loop_timeout_ns: int | None = None,
    perturbation: int = 0,
    lean: float = 0.0,
    native: bool = False,
    scatter: bool = False,
) -> ReferenceResult:
    """Execute `model` on `inputs` (one per main input, None = no value) with the reference kernels.

    `perturbation` (in units of the result type's epsilon, signed) nudges every float result of every operation,
    every float tensor the model is given (main's inputs, constants) one epsilon up or down by a scattered pattern,
    and values about to be quantized by QUANTIZATION_NUDGE_PER_STEP per unit: a probe of whether the outputs are
    stable under the per-step rounding differences any correct implementation may have. `lean` (in quantization
    steps, signed) is added to every value about to be quantized: the rounding-bias probe (harness.oracle.bias).
    `native` runs the kernels' arithmetic on float32 tensors in float32: a probe of whether the outputs survive the
    precision a float32 implementation computes at. `scatter` sends the nudge of values about to be quantized up or
    down element by element (a fixed pattern) instead of all one way: ties resolved element by element.
    Raises NoKernelError, before running anything, if an operation of any subgraph has no reference kernel.
    """
    kernels = _kernels(model)
    runner = _Runner(model, effective_loop_timeout(loop_timeout_ns), perturbation, kernels)
    try:
        # NaN and infinity are legitimate float results; numpy must not turn them into warnings (or, under
        # warnings-as-errors, into exceptions).
        with (
            np.errstate(all="ignore"),
            quantization_nudge(perturbation * QUANTIZATION_NUDGE_PER_STEP, scattered=scatter),
            quantization_lean(lean),
            native_float32(native),
        ):
            outputs = runner.run(model.main, list(inputs), depth=0)
    except LoopTimeoutError as exc:
        return ReferenceResult(ErrorStatus.MISSED_DEADLINE_PERSISTENT, message=f"WHILE loop timed out: {exc}")
    except _ExecutionFailed as exc:
        return ReferenceResult(exc.status, message=exc.message)
    except UnspecifiedResult as exc:
        return ReferenceResult(ErrorStatus.NONE, message=f"result unspecified by the HAL: {exc}", unspecified=True)
    return ReferenceResult(ErrorStatus.NONE, outputs)


def effective_loop_timeout(loop_timeout_ns: int | None) -> int:
    """The loop timeout that applies: the default when not given, capped at the HAL maximum."""
    if loop_timeout_ns is None:
        return LOOP_TIMEOUT_DEFAULT_NS
    return max(0, min(int(loop_timeout_ns), LOOP_TIMEOUT_MAXIMUM_NS))


def missing_kernels(model: Model) -> list[str]:
    """Names of the operations (main first, then referenced subgraphs) that have no reference kernel."""
    missing: list[str] = []
    for subgraph in [model.main, *model.referenced]:
        for operation in subgraph.operations:
            name = _op_name(operation.type)
            spec = ops.get(operation.type)
            if (spec is None or spec.kernel is None) and name not in missing:
                missing.append(name)
    return missing


def require_kernels(model: Model) -> None:
    """Raise NoKernelError naming the first operation of the model without a reference kernel."""
    _kernels(model)


_Kernel = Callable[[KernelContext], list[np.ndarray]]


def _kernels(model: Model) -> dict[int, _Kernel]:
    """The kernel of every operation type the model uses, looked up once per run; NoKernelError (naming the first
    operation, main first, then referenced subgraphs) if one has none."""
    kernels: dict[int, _Kernel] = {}
    for subgraph in (model.main, *model.referenced):
        for operation in subgraph.operations:
            op_type = operation.type
            if op_type not in kernels:
                spec = ops.get(op_type)
                if spec is None or spec.kernel is None:
                    raise NoKernelError(_op_name(op_type))
                kernels[op_type] = spec.kernel
    return kernels


def judge_output_sizes(
    model: Model,
    request_output_lengths: Sequence[int | None],
    outputs: Sequence[np.ndarray],
) -> tuple[ErrorStatus, list[OutputShape]]:
    """D7: the status and output shapes a driver owes for these actual outputs and request buffer lengths.

    An output whose actual byte size exceeds its request length is insufficient; a length of None (an output
    without a buffer of its own) is never judged insufficient. The dimensions reported are the actual ones.
    """
    indexes = model.main.output_indexes
    if not len(indexes) == len(request_output_lengths) == len(outputs):
        raise ValueError(
            f"{len(indexes)} model outputs, {len(request_output_lengths)} lengths and {len(outputs)} outputs"
        )
    shapes = []
    for index, length, value in zip(indexes, request_output_lengths, outputs):
        operand = model.main.operands[index]
        needed = element_size(operand.type) * math.prod(np.shape(value))
        shapes.append(OutputShape(dimensions=list(np.shape(value)), is_sufficient=length is None or needed <= length))
    status = ErrorStatus.NONE if all(s.is_sufficient for s in shapes) else ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    return status, shapes


def _op_name(op_type: int) -> str:
    try:
        return OperationType(op_type).name
    except ValueError:
        return f"operation {op_type}"


class _Runner:
    """Evaluates subgraphs of one model; constants are decoded once per (subgraph, operand)."""

    def __init__(self, model: Model, loop_timeout_ns: int, perturbation: int, kernels: dict[int, _Kernel]) -> None:
        self.model = model
        self.loop_timeout_ns = loop_timeout_ns
        self.perturbation = perturbation
        self.kernels = kernels  # the kernel of every operation type of the model
        self._constants: dict[tuple[int, int], np.ndarray] = {}

    def run(self, subgraph: Subgraph, inputs: list[np.ndarray | None], depth: int) -> list[np.ndarray]:
        """Run one subgraph on its input values and return its output values."""
        # An acyclic chain of references is at most len(referenced) deep; anything deeper is a cycle.
        if depth > len(self.model.referenced):
            raise _ExecutionFailed(ErrorStatus.INVALID_ARGUMENT, "cyclic subgraph references")
        # Bad main inputs are a bad request; bad inputs of a referenced subgraph show up only while executing.
        status = ErrorStatus.INVALID_ARGUMENT if depth == 0 else ErrorStatus.GENERAL_FAILURE
        where = "" if depth == 0 else "referenced subgraph "
        if len(inputs) != len(subgraph.input_indexes):
            raise _ExecutionFailed(
                status, f"{len(inputs)} input values for a {where}subgraph with {len(subgraph.input_indexes)} inputs"
            )
        values: dict[int, np.ndarray | None] = {}
        bitwise = _read_bitwise(subgraph) if self.perturbation and depth == 0 else frozenset()
        for position, (index, value) in enumerate(zip(subgraph.input_indexes, inputs)):
            values[index] = _input_value(subgraph.operands[index], value, position, where, status)
            if self.perturbation and depth == 0 and index not in bitwise:
                values[index] = _nudged_given(values[index], self.perturbation)
        for number, operation in enumerate(subgraph.operations):
            self._execute(subgraph, number, operation, values, depth)
        outputs = []
        for position, index in enumerate(subgraph.output_indexes):
            value = self._value(subgraph, index, values, None)
            if value is None:
                raise _ExecutionFailed(ErrorStatus.GENERAL_FAILURE, f"output {position} (operand {index}) has no value")
            outputs.append(value)
        return outputs

    def _execute(
        self, subgraph: Subgraph, number: int, operation: Operation, values: dict[int, np.ndarray | None], depth: int
    ) -> None:
        kernel = self.kernels[operation.type]
        operands = subgraph.operands
        is_while = operation.type == _WHILE
        context = KernelContext(
            inputs=[self._value(subgraph, i, values, operation, number) for i in operation.inputs],
            input_operands=[operands[i] for i in operation.inputs],
            output_operands=[operands[i] for i in operation.outputs],
            relaxed=self.model.relax_computation_float32_to_float16,
            loop_deadline_ns=time.monotonic_ns() + self.loop_timeout_ns if is_while else None,
        )
        context.run_subgraph = self._subgraph_runner(context.loop_deadline_ns, depth)
        try:
            results = kernel(context)
        except InvalidParameter as exc:
            # An input argument outside what the operation defines: INVALID_ARGUMENT ("if one of the input
            # arguments is invalid"), not an unspecified error.
            raise _ExecutionFailed(
                ErrorStatus.INVALID_ARGUMENT, f"{_op_name(operation.type)} (operation {number}): {exc}"
            ) from exc
        except _DATA_ERRORS as exc:
            raise _ExecutionFailed(
                ErrorStatus.GENERAL_FAILURE, f"{_op_name(operation.type)} (operation {number}) failed: {exc}"
            ) from exc
        if len(results) != len(operation.outputs):
            raise RuntimeError(
                f"{_op_name(operation.type)} kernel returned {len(results)} outputs; "
                f"the operation has {len(operation.outputs)}"
            )
        for position, (index, result) in enumerate(zip(operation.outputs, results)):
            operand = operands[index]
            value = _stored(operand, result)
            if operand.type not in SCALAR_TYPES and shape_conflicts(operand.dimensions, value.shape):
                conflict = _shape_conflict(operand.dimensions, value.shape)
                raise _ExecutionFailed(
                    ErrorStatus.GENERAL_FAILURE,
                    f"{_op_name(operation.type)} (operation {number}) output {position}: {conflict}",
                )
            if self.perturbation and value.dtype.kind == "f":
                # Stability probe: a correct implementation may differ from the reference by an ULP per step.
                value = value * value.dtype.type(1.0 + self.perturbation * np.finfo(value.dtype).eps)
            values[index] = value

    def _subgraph_runner(
        self, loop_deadline_ns: int | None, depth: int
    ) -> Callable[[int, list[np.ndarray]], list[np.ndarray]]:
        def run_subgraph(k: int, inputs: list[np.ndarray]) -> list[np.ndarray]:
            if not 0 <= k < len(self.model.referenced):
                raise _ExecutionFailed(ErrorStatus.INVALID_ARGUMENT, f"referenced subgraph {k} does not exist")
            # The WHILE kernel owns the loop timeout; checking here too keeps a kernel that forgets from hanging.
            if loop_deadline_ns is not None and time.monotonic_ns() > loop_deadline_ns:
                raise LoopTimeoutError(f"loop deadline passed before running subgraph {k}")
            return self.run(self.model.referenced[k], list(inputs), depth + 1)

        return run_subgraph

    def _value(
        self,
        subgraph: Subgraph,
        index: int,
        values: dict[int, np.ndarray | None],
        reader: Operation | None,
        number: int = 0,
    ) -> np.ndarray | None:
        """The value of operand `index` as operation `number` (`reader`; None: the subgraph's outputs) reads it."""
        operand = subgraph.operands[index]
        lifetime = operand.lifetime
        if lifetime in _COMPUTED and index in values:
            return values[index]  # the common case first
        if lifetime == _NO_VALUE:
            return None
        if lifetime == _SUBGRAPH:
            # IF/WHILE kernels read the referenced subgraph's index from the operand's location.offset; the value
            # carries the same index for kernels that prefer ctx.scalar().
            return np.array(operand.location.offset, dtype=np.int64)
        if lifetime in _CONSTANT:
            key = (id(subgraph), index)
            value = self._constants.get(key)
            if value is None:
                value = _plain_constant(self.model, operand)
                if value is None:
                    value = constant_value(self.model, subgraph, index)
                if value is None:
                    raise _ExecutionFailed(
                        ErrorStatus.INVALID_ARGUMENT, f"constant operand {index} cannot be read from its location"
                    )
                if self.perturbation and index not in _read_bitwise(subgraph):
                    value = _nudged_given(value, self.perturbation)
                self._constants[key] = value
            return value
        if index not in values:
            who = "the outputs" if reader is None else f"{_op_name(reader.type)} (operation {number})"
            raise _ExecutionFailed(ErrorStatus.GENERAL_FAILURE, f"{who} reads operand {index} before it is written")
        return values[index]


# Operand lifetimes and types the executor tests per operand and operation, bound once (enum attribute lookups
# cost more than the comparisons themselves).
_NO_VALUE = OperandLifeTime.NO_VALUE
_SUBGRAPH = OperandLifeTime.SUBGRAPH
_CONSTANT = frozenset({OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE})
# Lifetimes whose value is written at run time: a subgraph input or an operation's result.
_COMPUTED = frozenset(
    {OperandLifeTime.TEMPORARY_VARIABLE, OperandLifeTime.SUBGRAPH_INPUT, OperandLifeTime.SUBGRAPH_OUTPUT}
)
_WHILE = OperationType.WHILE


def _plain_constant(model: Model, operand: Operand) -> np.ndarray | None:
    """The value of a constant of a stored type and fully specified dimensions whose location holds exactly its
    bytes, as harness.case.constant_value decodes it; None for anything else (left to constant_value).

    Nearly every constant is one of these; decoding them here skips the general reader's repeated size and dtype
    lookups and one of its copies.
    """
    try:
        dtype = numpy_dtype(operand.type)
    except (ValueError, TypeError):
        return None
    dims = operand.dimensions
    if (not dims) != (operand.type in SCALAR_TYPES):
        return None  # a scalar with dimensions, or a tensor of unknown rank
    count = 1
    for d in dims:
        if d <= 0:
            return None
        count *= d
    raw = constant_bytes(model, operand.lifetime, operand.location)
    if raw is None or len(raw) != count * dtype.itemsize:
        return None
    return np.frombuffer(raw, dtype=dtype).reshape(tuple(dims)).copy()


def _input_value(
    operand: Operand, value: np.ndarray | None, position: int, where: str, status: ErrorStatus
) -> np.ndarray | None:
    """An input value in the operand's stored dtype, checked against the operand's known dimensions."""
    if value is None:
        return None
    array = np.asarray(value).astype(numpy_dtype(operand.type), copy=False)
    if operand.type in SCALAR_TYPES:
        if array.size != 1:
            raise _ExecutionFailed(status, f"{where}input {position}: scalar with {array.size} values")
        return array.reshape(())
    if shape_conflicts(operand.dimensions, array.shape):
        raise _ExecutionFailed(status, f"{where}input {position}: {_shape_conflict(operand.dimensions, array.shape)}")
    return array


# Operation inputs whose bits an implementation reads as they are given (LSH_PROJECTION hashes the bytes of its
# seeds and of its data): no rounding of any implementation touches them, so the stability probe leaves them as given.
_BITWISE_INPUTS = {int(OperationType.LSH_PROJECTION): (0, 1)}


def _read_bitwise(subgraph: Subgraph) -> frozenset[int]:
    """The operands of the subgraph that some operation reads bit by bit."""
    return frozenset(
        op.inputs[k] for op in subgraph.operations for k in _BITWISE_INPUTS.get(int(op.type), ()) if k < len(op.inputs)
    )


def _nudged_given(value: np.ndarray | None, perturbation: int) -> np.ndarray | None:
    """A given float tensor with each element moved by `perturbation` epsilons, up or down by a fixed scattered
    pattern (scalars and other types unchanged)."""
    # A uniform nudge scales a tensor, which normalizations and ratios cancel; scattered nudges show an output that
    # depends on differences of nearly equal values (a layer normalization of equal gates), where the rounding of
    # any float implementation's first steps already moves it beyond the tolerance. The pattern must not repeat
    # with a row (alternating signs do, over rows of even width, and leave equal rows equal).
    if value is None or value.dtype.kind != "f" or value.ndim == 0 or value.size == 0:
        return value
    # One epsilon each, the difference a correct float implementation's rounding makes at a step: larger nudges
    # would call a chain of products ill-conditioned that its tolerance covers.
    steps = scattered_signs(value.size).reshape(value.shape)
    return (value * (1.0 + perturbation * np.finfo(value.dtype).eps * steps)).astype(value.dtype)


def _stored(operand: Operand, result: np.ndarray) -> np.ndarray:
    """A kernel result in the operand's stored dtype (scalars as 0-d arrays)."""
    array = np.asarray(result)
    dtype = numpy_dtype(operand.type)
    if array.dtype is not dtype and array.dtype != dtype:
        array = array.astype(dtype)
    if operand.type in SCALAR_TYPES and array.shape != ():
        array = array.reshape(())
    return array


def shape_conflicts(declared: Sequence[int], actual: tuple[int, ...]) -> bool:
    """True when an actual shape contradicts declared dimensions (0 = unknown, empty = unknown rank)."""
    if not declared:
        return False
    if len(declared) != len(actual):
        return True
    for d, a in zip(declared, actual):
        if d and d != a:
            return True
    return False


def _shape_conflict(declared: Sequence[int], actual: tuple[int, ...]) -> str | None:
    """Why an actual shape contradicts declared dimensions (0 = unknown, empty = unknown rank), or None."""
    if not declared:
        return None
    if len(declared) != len(actual) or any(d and d != a for d, a in zip(declared, actual)):
        return f"shape {list(actual)} conflicts with the operand's dimensions {list(declared)}"
    return None

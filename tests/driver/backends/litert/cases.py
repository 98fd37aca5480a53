"""Generated cases for the LiteRT backend's tests: one-operation models from the harness's public generator,
their ConstantReader, and running them through the backend and the harness's reference."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from driver_under_test.backends.litert import KernelSet, LiteRTProgram, translate, unsupported_reason
from harness.gen import GenerationRejected, ModelConfig, RandomSource, generate_model
from harness.hal import ErrorStatus, Model, OperandLifeTime, OperandType, OperationType, numpy_dtype
from harness.oracle.accuracy import compare
from harness.oracle.outputs import quantized_operations, unspecified_outputs
from harness.reference import run_model

QUANTIZED_TYPES = frozenset(
    {
        OperandType.TENSOR_QUANT8_ASYMM,
        OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
        OperandType.TENSOR_QUANT8_SYMM,
        OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
        OperandType.TENSOR_QUANT16_SYMM,
        OperandType.TENSOR_QUANT16_ASYMM,
    }
)


def constant_reader(model: Model):
    """The ConstantReader of a model: operand_values for CONSTANT_COPY, the pools for CONSTANT_REFERENCE."""

    def read(subgraph: int, index: int) -> np.ndarray:
        graph = model.main if subgraph == 0 else model.referenced[subgraph - 1]
        operand = graph.operands[index]
        location = operand.location
        if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
            raw = model.operand_values[location.offset : location.offset + location.length]
        else:
            raw = model.pools[location.pool_index].read(location.offset, location.length)
        return np.frombuffer(bytes(raw), dtype=numpy_dtype(operand.type)).reshape(operand.dimensions)

    return read


FLAVORS = ("float", "half", "quant")


def flavor_of(model: Model) -> str:
    """"quant" when main has a quantized operand, else "half" when it has a float16 one, else "float"."""
    types = {o.type for o in model.main.operands}
    if types & QUANTIZED_TYPES:
        return "quant"
    if types & {OperandType.TENSOR_FLOAT16, OperandType.FLOAT16}:
        return "half"
    return "float"


def config(operation: OperationType, flavor: str) -> ModelConfig:
    """A one-operation configuration; flavor "quant" prefers quantized typings. The generator's extremes (extreme
    quantization, values at saturation, vector-width sizes, parameters out of range, long sizes) are off: these
    tests pin the translation on the models of the comfortable middle, seed by seed; campaigns and the execution
    target meet the extremes."""
    return ModelConfig(
        operations=frozenset({int(operation)}),
        max_operations=1,
        control_flow=False,
        quantized_bias=1.0 if flavor == "quant" else 0.0,
        extreme_quant_probability=0.0,
        saturation_probability=0.0,
        vector_width_probability=0.0,
        parameter_out_of_range_probability=0.0,
        long_size_probability=0.0,
    )


def model_reason(model: Model) -> str | None:
    """The first unsupported_reason over main's operations (None: all supported)."""
    read = constant_reader(model)
    for index in range(len(model.main.operations)):
        reason = unsupported_reason(model, 0, index, read)
        if reason is not None:
            return reason
    return None


@dataclass(frozen=True)
class Pick:
    """A generated case chosen for a test: its seed and whether it is supported (else the reason)."""

    seed: int
    reason: str | None


def generate(operation: OperationType, flavor: str, seed: int):
    """The generated model of (operation, flavor, seed), or None when generation rejects."""
    try:
        return generate_model(RandomSource(seed), config(operation, flavor))
    except GenerationRejected:
        return None


@functools.cache
def picks(operation: OperationType, flavor: str, wanted: int, limit: int = 80) -> tuple[Pick, ...]:
    """The first `wanted` seeds whose model is supported and has a specified reference result, and the reasons of
    the unsupported ones met on the way (for the float/quantized flavor asked)."""
    found: list[Pick] = []
    supported = 0
    for seed in range(limit):
        generated = generate(operation, flavor, seed)
        if generated is None:
            continue
        model = generated.model
        if flavor_of(model) != flavor:
            continue
        reason = model_reason(model)
        if reason is None:
            result = run_model(model, generated.inputs)
            if result.status != ErrorStatus.NONE or result.unspecified:
                continue
            supported += 1
        found.append(Pick(seed, reason))
        if supported >= wanted:
            break
    return tuple(found)


def supported_seeds(operation: OperationType, flavor: str, wanted: int) -> list[int]:
    """Seeds of supported cases."""
    return [p.seed for p in picks(operation, flavor, wanted) if p.reason is None]


def run_case(operation: OperationType, flavor: str, seed: int, kernel_set: KernelSet) -> list[str]:
    """Translate and run one generated case on one kernel set; the mismatches against the reference (empty:
    all outputs within the HAL's tolerance). A reference that jumps under a one-epsilon perturbation of every
    result (an ill-conditioned case) is not held against the engine."""
    generated = generate(operation, flavor, seed)
    assert generated is not None
    model = generated.model
    expected = run_model(model, generated.inputs)
    assert expected.status == ErrorStatus.NONE and not expected.unspecified
    actual = run_translated(model, generated.inputs, kernel_set)
    return mismatches(model, generated.inputs, expected.outputs, actual)


def run_translated(model: Model, inputs, kernel_set: KernelSet) -> list[np.ndarray]:
    """The model's outputs from LiteRT, as the backend runs it: inputs given no value (None) are absent optional
    operands, run by the translation made without them."""
    absent = [k for k, value in enumerate(inputs) if value is None]
    flatbuffer = translate(model, constant_reader(model), absent)
    return LiteRTProgram(flatbuffer, kernel_set).run([value for value in inputs if value is not None])


def mismatches(model: Model, inputs, expected, actual) -> list[str]:
    """Descriptions of the outputs out of tolerance (empty when all match or the reference is unstable)."""
    types = [model.main.operands[i].type for i in model.main.output_indexes]
    relaxed = model.relax_computation_float32_to_float16
    ignored = unspecified_outputs(model)
    steps = quantized_operations(model)
    bad = []
    for position, (e, a, t) in enumerate(zip(expected, actual, types)):
        c = compare(e, np.asarray(a), t, relaxed, ignore=position in ignored, quantized_operations=steps)
        if not c.ok:
            bad.append(f"output {position}: {c.describe()}")
    if bad and not stable(model, inputs, expected, types, relaxed, steps):
        return []
    return bad


def stable(model: Model, inputs, expected, types, relaxed, steps) -> bool:
    """True when nudging every float result by one epsilon leaves the reference's outputs within tolerance."""
    for perturbation in (1, -1):
        other = run_model(model, inputs, perturbation=perturbation)
        if other.status != ErrorStatus.NONE or other.unspecified:
            return False
        for e, a, t in zip(expected, other.outputs, types):
            if not compare(e, a, t, relaxed, quantized_operations=steps).ok:
                return False
    return True


"""Turning generated subgraphs into a hal.Model: lifetimes, consumer counts and where each constant lives.

The layout is the case format's canonical one (CONSTANT_COPY values packed in operand order, main then referenced
subgraphs, at 4-byte aligned offsets; CONSTANT_REFERENCE values at drawn locations in one or two pools), so the
model's JSON (harness.case.model_to_json) needs no explicit operandValues.
"""

from __future__ import annotations

import functools

from harness.case.pools import deferred_pool_from_json
from harness.gen.model._graph import Gen, GenOperand, Graph
from harness.gen.source import permutation
from harness.hal import (
    DataLocation,
    ExtensionNameAndPrefix,
    Model,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
)
from harness.hal.memory import Memory, MemoryKind

L = OperandLifeTime
T = OperandType
# Enum members used in loops, as module constants (an attribute of an Enum class is several times slower).
_CONSTANT_COPY = L.CONSTANT_COPY
_CONSTANT_REFERENCE = L.CONSTANT_REFERENCE
_SUBGRAPH = L.SUBGRAPH
_SUBGRAPH_OUTPUT = L.SUBGRAPH_OUTPUT
_TEMPORARY_VARIABLE = L.TEMPORARY_VARIABLE
_ALIGN = 4
_OP_TYPES = {int(t): t for t in OperationType}
_MMAP_FD = MemoryKind.MMAP_FD.value


def _aligned(n: int, align: int = _ALIGN) -> int:
    return -(-n // align) * align


def choose_main_outputs(gen: Gen, main: Graph) -> None:
    """Every unconsumed result is a model output; a consumed one sometimes too."""
    outputs = []
    for g in main.operands:
        if not g.produced:
            continue
        if g.consumers == 0 or gen.chance(gen.cfg.extra_output_probability):
            outputs.append(g.index)
            if g.consumers:
                gen.features.add("fan_out")
    if gen.chance(gen.cfg.permute_io_probability) and len(outputs) > 1:
        outputs = [outputs[k] for k in permutation(gen.src, len(outputs))]
        gen.features.add("permuted_io")
    if gen.chance(gen.cfg.permute_io_probability) and len(main.inputs) > 1:
        main.inputs = [main.inputs[k] for k in permutation(gen.src, len(main.inputs))]
        gen.features.add("permuted_io")
    main.outputs = outputs


def _mark_lifetimes(graph: Graph, refs: list[GenOperand]) -> None:
    """Set the final lifetimes and consumer counts of a graph's operands; its CONSTANT_REFERENCE operands are
    appended to `refs`."""
    outputs = set(graph.outputs)
    for g in graph.operands:
        op = g.op
        if g.produced:
            output = g.index in outputs
            op.lifetime = _SUBGRAPH_OUTPUT if output else _TEMPORARY_VARIABLE
            g.model_output = output
        elif op.lifetime == _CONSTANT_REFERENCE:  # results are never constants
            refs.append(g)
        op.number_of_consumers = g.consumers


class _Layout:
    """Where constants go: operandValues for copies, pools for references."""

    def __init__(self, gen: Gen, refs: list[GenOperand]) -> None:
        """Pools for `refs` (the CONSTANT_REFERENCE operands, main's first, in operand order)."""
        self.values = bytearray()
        self.pools: list[dict] = []
        self.pool_data: list[list[tuple[int, bytes]]] = []
        if refs:
            src = gen.src
            count = 1 if len(refs) == 1 or not src.boolean() else 2
            for _ in range(count):
                kind = src.choice(gen.cfg.model_pool_kinds)
                desc: dict = {"kind": kind, "size": 0}
                if kind == _MMAP_FD and src.boolean():
                    desc["offset"] = src.integer(1, 5000)
                    gen.features.add("mmap_offset")
                self.pools.append(desc)
                self.pool_data.append([])
                gen.features.add(f"pool:{kind}")
            ends = [0] * count
            for g in refs:
                k = src.integer(0, count - 1)
                raw = g.value.tobytes()  # type: ignore[union-attr]
                gap = _ALIGN * src.integer(0, 3) if src.integer(0, 3) == 0 else 0
                offset = _aligned(ends[k]) + gap
                g.op.location = DataLocation(k, offset, len(raw))
                g.pool = k
                self.pool_data[k].append((offset, raw))
                ends[k] = offset + len(raw)
            for k, desc in enumerate(self.pools):
                desc["size"] = max(1, _aligned(ends[k]) + _ALIGN * src.integer(0, 2))

    def copy(self, g: GenOperand) -> None:
        """Append a CONSTANT_COPY value to operandValues and point the operand at it."""
        raw = g.value.tobytes()  # type: ignore[union-attr]
        values = self.values
        offset = _aligned(len(values))
        if offset != len(values):
            values.extend(bytes(offset - len(values)))
        values.extend(raw)
        g.op.location = DataLocation(0, offset, len(raw))

    def memories(self) -> list[Memory]:
        """New shared memory pools holding the CONSTANT_REFERENCE values (made when first used, where they can be)."""
        return [
            deferred_pool_from_json(desc, functools.partial(_write_chunks, chunks))
            for desc, chunks in zip(self.pools, self.pool_data)
        ]


def _write_chunks(chunks: list[tuple[int, bytes]], memory: Memory) -> None:
    for offset, raw in chunks:
        memory.write(offset, raw)


def _subgraph(graph: Graph, layout: _Layout) -> Subgraph:
    """The hal.Subgraph of a graph; its CONSTANT_COPY values are appended to operandValues on the way."""
    for g in graph.operands:
        if g.op.lifetime == _CONSTANT_COPY:
            layout.copy(g)
    ops = [
        Operation(_OP_TYPES[t] if t in _OP_TYPES else OperationType(t), list(i), list(o))
        for t, i, o in graph.operations
    ]
    return Subgraph([g.op for g in graph.operands], ops, list(graph.inputs), list(graph.outputs))


def assemble(gen: Gen, main: Graph) -> Model:
    """The hal.Model of a finished generation (main outputs must be chosen): every remaining choice is drawn and
    every location laid out here; its pools are made when first used."""
    refs: list[GenOperand] = []
    _mark_lifetimes(main, refs)
    for graph in gen.referenced:
        _mark_lifetimes(graph, refs)
    layout = _Layout(gen, refs)
    # CONSTANT_COPY values are laid out in operand order, main first: the order harness.case.json_model uses.
    main_sub = _subgraph(main, layout)
    referenced_subs = [_subgraph(graph, layout) for graph in gen.referenced]
    return Model(
        main=main_sub,
        referenced=referenced_subs,
        operand_values=bytes(layout.values),
        pools=layout.memories(),
        relax_computation_float32_to_float16=bool(gen.relaxed),
        extension_name_to_prefix=_declared_extensions(gen),
    )


def _declared_extensions(gen: Gen) -> list[ExtensionNameAndPrefix]:
    """Now and then one to three extensions no operand or operation uses: the HAL only asks that names and
    prefixes map one to one, so declaring an extension is valid whether or not the model uses it."""
    if not gen.chance(gen.cfg.unused_extension_probability):
        return []
    gen.features.add("declared_extensions")
    count = gen.src.integer(1, 3)
    first = gen.src.integer(1, 0xFFFF)
    # Distinct prefixes in 1..65535, consecutive from a drawn one (wrapping past the last); names in the HAL's form
    # (lowercase, dotted).
    return [ExtensionNameAndPrefix(f"com.example.nnfuzz.unused{k}", (first - 1 + k) % 0xFFFF + 1) for k in range(count)]

"""Model mutations that break a subgraph's structure: dataflow (V1, V6, V9, V14, V16), input/output lists (V7),
operation types (V11), operand indexes (V12, V13) and operand counts (V15, V17-V20)."""

from __future__ import annotations

from collections.abc import Callable

from harness.gen.mutations._common import (
    CONSTANT_LIFETIMES,
    UINT32_MAX,
    WRITTEN_LIFETIMES,
    bump_consumers,
    catalogued,
    copy_model,
    copy_operand,
    graphs,
    input_counts,
    operation_sites,
    output_counts,
    paired_operands,
    pick,
)
from harness.gen.mutations._registry import mutation
from harness.gen.source import Source
from harness.hal import (
    DataLocation,
    Model,
    Operand,
    OperandLifeTime,
    Operation,
    Subgraph,
    has_unknown_dimensions,
    is_known_type,
    is_scalar_type,
    operand_byte_size,
)

L = OperandLifeTime
_CONSTANT_ALIGNMENT = 4


def _operand_key(o: Operand) -> tuple:
    """What makes two operands interchangeable to an operation: type, dimensions and quantization."""
    extra = o.extra_params
    extra_key = (tuple(extra.scales), extra.channel_dim) if hasattr(extra, "scales") else extra
    return (int(o.type), tuple(o.dimensions), o.scale, o.zero_point, extra_key)


# ---------------------------------------------------------------------------------------------------------------
# V1 operand read before it is written


@mutation(
    "operation_moved_before_producer",
    "V1",
    "model",
    "an operation is moved to just before the operation that writes one of its inputs",
)
def _moved_before_producer(model: Model, source: Source) -> Model:
    options = []
    for g, graph in enumerate(graphs(model)):
        writer = {k: i for i, op in enumerate(graph.operations) for k in op.outputs}
        for j, op in enumerate(graph.operations):
            producers = sorted({writer[k] for k in op.inputs if k in writer and writer[k] < j})
            options += [(g, j, i) for i in producers]
    g, j, i = pick(source, options, "operation reading another operation's output")
    mutated = copy_model(model)
    operations = graphs(mutated)[g].operations
    operations.insert(i, operations.pop(j))
    return mutated


@mutation(
    "operation_reads_own_output",
    "V1",
    "model",
    "an operation reads its own output in place of an input of the same type and shape",
)
def _reads_own_output(model: Model, source: Source) -> Model:
    options = []
    for g, graph in enumerate(graphs(model)):
        for i, op in enumerate(graph.operations):
            for p, a in enumerate(op.inputs):
                operand = graph.operands[a]
                if int(operand.lifetime) in CONSTANT_LIFETIMES or int(operand.lifetime) in (L.NO_VALUE, L.SUBGRAPH):
                    continue
                key = _operand_key(operand)
                options += [(g, i, p, k) for k in op.outputs if _operand_key(graph.operands[k]) == key]
    g, i, p, k = pick(source, options, "operation input shaped like one of its outputs")
    mutated = copy_model(model)
    graph = graphs(mutated)[g]
    op = graph.operations[i]
    bump_consumers(graph, [op.inputs[p]], -1)
    op.inputs[p] = k
    bump_consumers(graph, [k], +1)
    return mutated


# ---------------------------------------------------------------------------------------------------------------
# V6 lifetime that contradicts the operation writing the operand


def _written_outputs(model: Model, keep: Callable[[int, Operand], bool]) -> list[tuple[int, int]]:
    """(graph, operand) of the operation outputs `keep(graph, operand)` accepts, leaving control flow alone."""
    paired = paired_operands(model)
    found = []
    for g, graph in enumerate(graphs(model)):
        for op in graph.operations:
            found += [(g, k) for k in op.outputs if (g, k) not in paired and keep(g, graph.operands[k])]
    return found


def _main_output_or_temporary(g: int, o: Operand) -> bool:
    """Temporaries anywhere; outputs of main only (a referenced subgraph's outputs must fit its IF/WHILE)."""
    return int(o.lifetime) == L.TEMPORARY_VARIABLE or (g == 0 and int(o.lifetime) == L.SUBGRAPH_OUTPUT)


def _storable(o: Operand) -> bool:
    return is_known_type(o.type) and (is_scalar_type(o.type) or not has_unknown_dimensions(o.dimensions))


@mutation(
    "operation_writes_constant",
    "V6",
    "model",
    "an operand an operation writes becomes a (well-formed) CONSTANT_COPY or CONSTANT_REFERENCE operand (a model "
    "output is also taken out of outputIndexes)",
)
def _writes_constant(model: Model, source: Source) -> Model:
    sites = _written_outputs(
        model,
        lambda g, o: _main_output_or_temporary(g, o) and _storable(o) and operand_byte_size(o.type, o.dimensions) > 0,
    )
    g, k = pick(source, sites, "written operand with a known size")
    mutated = copy_model(model)
    graph = graphs(mutated)[g]
    graph.output_indexes = [x for x in graph.output_indexes if x != k]
    o = graph.operands[k]
    size = operand_byte_size(o.type, o.dimensions)
    pools = [p for p, memory in enumerate(mutated.pools) if int(memory.size) >= size]
    if pools and source.boolean():
        o.lifetime = L.CONSTANT_REFERENCE
        o.location = DataLocation(source.choice(pools), 0, size)
    else:
        o.lifetime = L.CONSTANT_COPY
        values = mutated.operand_values
        if len(values) < size:
            # Only the missing bytes are added; an existing blob is reused where it is long enough.
            values = values + bytes(-len(values) % _CONSTANT_ALIGNMENT + size)
            mutated.operand_values = values
        o.location = DataLocation(0, len(values) - size, size)
    return mutated


@mutation(
    "operation_writes_model_input",
    "V6",
    "model",
    "an operand an operation of main writes becomes a listed SUBGRAPH_INPUT (moved from outputIndexes if there)",
)
def _writes_model_input(model: Model, source: Source) -> Model:
    _, k = pick(source, _written_outputs(model, lambda g, o: g == 0), "operand written by an operation of main")
    mutated = copy_model(model)
    main = mutated.main
    main.operands[k].lifetime = L.SUBGRAPH_INPUT
    main.output_indexes = [x for x in main.output_indexes if x != k]
    main.input_indexes.insert(source.integer(0, len(main.input_indexes)), k)
    return mutated


# ---------------------------------------------------------------------------------------------------------------
# V7 lifetime that contradicts inputIndexes/outputIndexes (main only: a referenced subgraph's lists must also fit
# the IF/WHILE operations using it)


@mutation("model_input_unlisted", "V7", "model", "a SUBGRAPH_INPUT operand of main is left out of inputIndexes")
def _input_unlisted(model: Model, source: Source) -> Model:
    position = pick(source, range(len(model.main.input_indexes)), "model input")
    mutated = copy_model(model)
    del mutated.main.input_indexes[position]
    return mutated


@mutation("model_output_unlisted", "V7", "model", "a SUBGRAPH_OUTPUT operand of main is left out of outputIndexes")
def _output_unlisted(model: Model, source: Source) -> Model:
    position = pick(source, range(len(model.main.output_indexes)), "model output")
    mutated = copy_model(model)
    del mutated.main.output_indexes[position]
    return mutated


def _listed_with_wrong_lifetime(model: Model, source: Source, lifetime: int, outputs: bool) -> Model:
    main = model.main
    sites = [k for k, o in enumerate(main.operands) if int(o.lifetime) != lifetime]
    k = pick(source, sites, "operand of another lifetime")
    mutated = copy_model(model)
    indexes = mutated.main.output_indexes if outputs else mutated.main.input_indexes
    indexes.insert(source.integer(0, len(indexes)), k)
    return mutated


@mutation(
    "non_input_listed_as_input", "V7", "model", "an operand that is not a SUBGRAPH_INPUT is listed in inputIndexes"
)
def _non_input_listed(model: Model, source: Source) -> Model:
    return _listed_with_wrong_lifetime(model, source, L.SUBGRAPH_INPUT, outputs=False)


@mutation(
    "non_output_listed_as_output", "V7", "model", "an operand that is not a SUBGRAPH_OUTPUT is listed in outputIndexes"
)
def _non_output_listed(model: Model, source: Source) -> Model:
    return _listed_with_wrong_lifetime(model, source, L.SUBGRAPH_OUTPUT, outputs=True)


# ---------------------------------------------------------------------------------------------------------------
# V9 operand written twice


@mutation("operation_duplicated", "V9", "model", "an operation is repeated later on, writing its outputs a second time")
def _operation_duplicated(model: Model, source: Source) -> Model:
    site = pick(source, operation_sites(model, lambda _m, _g, op: bool(op.outputs)), "operation with outputs")
    mutated = copy_model(model)
    graph = graphs(mutated)[site.graph]
    op = graph.operations[site.index]
    graph.operations.insert(
        source.integer(site.index + 1, len(graph.operations)), Operation(op.type, list(op.inputs), list(op.outputs))
    )
    bump_consumers(graph, op.inputs, +1)
    return mutated


# ---------------------------------------------------------------------------------------------------------------
# V11 unknown operation type


def _register_bad_operation(name: str, value: int | None, description: str) -> None:
    @mutation(name, "V11", "model", description)
    def apply(model: Model, source: Source) -> Model:
        site = pick(source, operation_sites(model, lambda *_: True), "operation")
        mutated = copy_model(model)
        if value is None:
            declared = {e.prefix for e in model.extension_name_to_prefix}
            prefix = source.integer(1, 0xFFFF)
            while prefix in declared:
                prefix = prefix % 0xFFFF + 1
            new_type = prefix << 16 | source.integer(0, 0xFFFF)
        else:
            new_type = value
        graphs(mutated)[site.graph].operations[site.index].type = new_type
        return mutated


for _name, _value, _description in (
    ("operation_type_after_rank", 102, "an operation's type is 102, one past RANK"),
    ("operation_type_below_oem", 9999, "an operation's type is 9999, just below OEM_OPERATION"),
    ("operation_type_after_oem", 10001, "an operation's type is 10001, one past OEM_OPERATION"),
    ("operation_type_undeclared_extension", None, "an operation's type is an extension type of an undeclared prefix"),
):
    _register_bad_operation(_name, _value, _description)


# ---------------------------------------------------------------------------------------------------------------
# V12/V13 operand index out of range


def _bad_index(graph: Subgraph, source: Source) -> int:
    n = len(graph.operands)
    # -1: the HAL's indexes are unsigned, but a driver that indexes a list with it silently reads the last operand.
    return source.choice([n, n + source.integer(1, 1000), UINT32_MAX, -1])


@mutation(
    "operation_input_index_out_of_range", "V12", "model", "an operation input names an operand that does not exist"
)
def _input_index_out_of_range(model: Model, source: Source) -> Model:
    site = pick(source, operation_sites(model, lambda _m, _g, op: bool(op.inputs)), "operation with inputs")
    mutated = copy_model(model)
    graph = graphs(mutated)[site.graph]
    op = graph.operations[site.index]
    p = source.integer(0, len(op.inputs) - 1)
    bump_consumers(graph, [op.inputs[p]], -1)
    op.inputs[p] = _bad_index(graph, source)
    return mutated


@mutation(
    "operation_input_index_out_of_range_added",
    "V12",
    "model",
    "an operation gets an extra input naming an operand that does not exist",
)
def _input_index_added(model: Model, source: Source) -> Model:
    site = pick(source, operation_sites(model, lambda *_: True), "operation")
    mutated = copy_model(model)
    graph = graphs(mutated)[site.graph]
    op = graph.operations[site.index]
    op.inputs.insert(source.integer(0, len(op.inputs)), _bad_index(graph, source))
    return mutated


@mutation(
    "operation_output_index_out_of_range",
    "V13",
    "model",
    "an operation output names an operand that does not exist (the operand it wrote is left unwritten)",
    also={"V14", "V1"},
)
def _output_index_out_of_range(model: Model, source: Source) -> Model:
    site = pick(source, operation_sites(model, lambda _m, _g, op: bool(op.outputs)), "operation with outputs")
    mutated = copy_model(model)
    graph = graphs(mutated)[site.graph]
    op = graph.operations[site.index]
    op.outputs[source.integer(0, len(op.outputs) - 1)] = _bad_index(graph, source)
    return mutated


@mutation(
    "operation_output_index_out_of_range_added",
    "V13",
    "model",
    "an operation gets an extra output naming an operand that does not exist",
)
def _output_index_added(model: Model, source: Source) -> Model:
    site = pick(source, operation_sites(model, lambda *_: True), "operation")
    mutated = copy_model(model)
    graph = graphs(mutated)[site.graph]
    op = graph.operations[site.index]
    op.outputs.insert(source.integer(0, len(op.outputs)), _bad_index(graph, source))
    return mutated


# ---------------------------------------------------------------------------------------------------------------
# V14 operand never written


def _unwritten_like(model: Model, source: Source, lifetime: int) -> tuple[Model, Subgraph, int]:
    """A copy of the model with a new operand (described like an existing one) of `lifetime`, appended to main or,
    for a temporary, to any subgraph."""
    sites = [
        (g, k)
        for g, graph in enumerate(graphs(model) if lifetime == L.TEMPORARY_VARIABLE else graphs(model)[:1])
        for k, o in enumerate(graph.operands)
        if is_known_type(o.type) and int(o.lifetime) != L.SUBGRAPH
    ]
    g, k = pick(source, sites, "operand to describe the new one after")
    mutated = copy_model(model)
    graph = graphs(mutated)[g]
    new = copy_operand(graph.operands[k])
    new.lifetime, new.location, new.number_of_consumers = lifetime, DataLocation(), 0
    graph.operands.append(new)
    return mutated, graph, len(graph.operands) - 1


@mutation("unwritten_temporary_added", "V14", "model", "a TEMPORARY_VARIABLE operand no operation writes is added")
def _unwritten_temporary(model: Model, source: Source) -> Model:
    return _unwritten_like(model, source, L.TEMPORARY_VARIABLE)[0]


@mutation(
    "unwritten_model_output_added", "V14", "model", "a listed SUBGRAPH_OUTPUT no operation writes is added to main"
)
def _unwritten_output(model: Model, source: Source) -> Model:
    mutated, graph, k = _unwritten_like(model, source, L.SUBGRAPH_OUTPUT)
    graph.output_indexes.insert(source.integer(0, len(graph.output_indexes)), k)
    return mutated


# ---------------------------------------------------------------------------------------------------------------
# V15 operand removed; V16 operation removed


def _count_breaking_operands(model: Model) -> list[int]:
    """Operands of main whose removal leaves some catalogued operation with fewer operands than it can take."""
    paired = paired_operands(model)
    found: set[int] = set()
    for op in model.main.operations:
        spec = catalogued(op)
        if spec is None:
            continue
        ins, outs = input_counts(spec), output_counts(spec)
        found.update(k for k in set(op.inputs) if len(op.inputs) - op.inputs.count(k) < ins.lo)
        found.update(k for k in set(op.outputs) if len(op.outputs) - op.outputs.count(k) < outs.lo)
    return sorted(k for k in found if (0, k) not in paired)


@mutation(
    "operand_removed",
    "V15",
    "model",
    "an operand of main is removed and later indexes renumbered, leaving an operation short of operands",
    shown_as={"V17", "V18"},
    also={"V10", "V17", "V18", "V19", "V20", "V1", "V14"},
)
def _operand_removed(model: Model, source: Source) -> Model:
    k = pick(source, _count_breaking_operands(model), "operand whose removal breaks an operation")
    mutated = copy_model(model)
    main = mutated.main

    def renumber(indexes: list[int]) -> list[int]:
        return [i - (i > k) for i in indexes if i != k]

    del main.operands[k]
    for op in main.operations:
        op.inputs, op.outputs = renumber(op.inputs), renumber(op.outputs)
    main.input_indexes, main.output_indexes = renumber(main.input_indexes), renumber(main.output_indexes)
    return mutated


@mutation(
    "operation_removed",
    "V16",
    "model",
    "an operation is removed, so nothing writes its outputs",
    shown_as={"V14"},
    also={"V1", None},
)
def _operation_removed(model: Model, source: Source) -> Model:
    site = pick(source, operation_sites(model, lambda _m, _g, op: bool(op.outputs)), "operation with outputs")
    mutated = copy_model(model)
    graph = graphs(mutated)[site.graph]
    op = graph.operations.pop(site.index)
    bump_consumers(graph, op.inputs, -1)
    return mutated


@mutation(
    "every_operation_removed",
    "V16",
    "model",
    "main loses every operation and every operand but those operations wrote (temporaries and model outputs), "
    "and the referenced subgraphs no operand names any more",
    shown_as={"V14"},
    also={None},
)
def _every_operation_removed(model: Model, _source: Source) -> Model:
    # The HAL refuses a subgraph without operations. With none, each operand left is one nothing writes (V14);
    # keeping no input, constant or reference makes every operand one that should have been written, where a
    # validator's shortcut may mistake "everything is written" for "nothing needs writing".
    main = model.main
    kept = [k for k, o in enumerate(main.operands) if int(o.lifetime) in WRITTEN_LIFETIMES]
    new_index = {k: n for n, k in enumerate(kept)}
    operands = [copy_operand(main.operands[k]) for k in kept]
    for o in operands:
        o.number_of_consumers = 0
    mutated = copy_model(model)
    mutated.main = Subgraph(operands, [], [], [new_index[k] for k in main.output_indexes])
    mutated.referenced = []
    return mutated


# ---------------------------------------------------------------------------------------------------------------
# V17-V20 operand counts of one operation


def _counted_operations(model: Model, keep: Callable[[Operation], bool]) -> list:
    return operation_sites(model, lambda _m, _g, op: catalogued(op) is not None and keep(op))


@mutation(
    "required_input_removed",
    "V17",
    "model",
    "a required input of an operation is removed (with any optional inputs after the required ones)",
)
def _required_input_removed(model: Model, source: Source) -> Model:
    sites = _counted_operations(model, lambda op: 0 < input_counts(catalogued(op)).lo <= len(op.inputs))
    site = pick(source, sites, "operation with required inputs")
    mutated = copy_model(model)
    graph = graphs(mutated)[site.graph]
    op = graph.operations[site.index]
    lo = input_counts(catalogued(op)).lo
    drop = source.integer(0, lo - 1)
    kept = [k for p, k in enumerate(op.inputs[:lo]) if p != drop]
    bump_consumers(graph, [op.inputs[drop], *op.inputs[lo:]], -1)
    op.inputs = kept
    return mutated


@mutation(
    "required_output_removed",
    "V18",
    "model",
    "a required output of an operation is removed (the operand it wrote is left unwritten)",
    also={"V14", "V1"},
)
def _required_output_removed(model: Model, source: Source) -> Model:
    sites = _counted_operations(model, lambda op: 0 < output_counts(catalogued(op)).lo <= len(op.outputs))
    site = pick(source, sites, "operation with outputs")
    mutated = copy_model(model)
    op = graphs(mutated)[site.graph].operations[site.index]
    lo = output_counts(catalogued(op)).lo
    drop = source.integer(0, lo - 1)
    op.outputs = [k for p, k in enumerate(op.outputs[:lo]) if p != drop]
    return mutated


@mutation("extra_input", "V19", "model", "an operation gets more inputs than any of its signatures takes")
def _extra_input(model: Model, source: Source) -> Model:
    sites = _counted_operations(model, lambda op: input_counts(catalogued(op)).hi != float("inf") and bool(op.inputs))
    site = pick(source, sites, "operation with a bounded input count")
    mutated = copy_model(model)
    graph = graphs(mutated)[site.graph]
    op = graph.operations[site.index]
    extra = [source.choice(op.inputs) for _ in range(int(input_counts(catalogued(op)).hi) + 1 - len(op.inputs))]
    op.inputs += extra
    bump_consumers(graph, extra, +1)
    return mutated


@mutation("extra_output", "V20", "model", "an operation gets more outputs (new temporaries) than any signature gives")
def _extra_output(model: Model, source: Source) -> Model:
    sites = _counted_operations(model, lambda op: output_counts(catalogued(op)).hi != float("inf") and bool(op.outputs))
    site = pick(source, sites, "operation with a bounded output count")
    mutated = copy_model(model)
    graph = graphs(mutated)[site.graph]
    op = graph.operations[site.index]
    for _ in range(int(output_counts(catalogued(op)).hi) + 1 - len(op.outputs)):
        new = copy_operand(graph.operands[source.choice(op.outputs)])
        new.lifetime, new.location, new.number_of_consumers = L.TEMPORARY_VARIABLE, DataLocation(), 0
        graph.operands.append(new)
        op.outputs.append(len(graph.operands) - 1)
    return mutated

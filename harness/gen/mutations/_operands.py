"""Model mutations that break one operand's description: type (V2, V10), dimensions (V3), scale (V4), zero point (V5),
numberOfConsumers (V8), constant location (V23) and per-channel quantization (V24)."""

from __future__ import annotations

from collections.abc import Callable

from harness.gen.mutations._common import (
    CONSTANT_LIFETIMES,
    LOCATIONLESS_LIFETIMES,
    UINT32_MAX,
    OperandSite,
    accepted_types,
    catalogued,
    copy_model,
    graphs,
    location_is_empty,
    operand_sites,
    paired_operands,
    pick,
)
from harness.gen.mutations._registry import mutation
from harness.gen.source import GenerationRejected, Source
from harness.hal import (
    DataLocation,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    SymmPerChannelQuantParams,
    element_size,
    has_unknown_dimensions,
    is_scalar_type,
    is_tensor_type,
)
from harness.hal.sizes import QUANTIZED_TYPES, ZERO_POINT_RANGES

T = OperandType
L = OperandLifeTime
PER_CHANNEL = int(T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
# Types the HAL gives a fixed size and the usual parameter rules (no SUBGRAPH, OEM or extension types).
_PLAIN_TYPES = frozenset(int(t) for t in T if t not in (T.SUBGRAPH, T.OEM, T.TENSOR_OEM_BYTE))
# Types whose scale must be zero.
_UNQUANTIZED = frozenset(
    int(t)
    for t in (T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_BOOL8)
)
# Quantized types whose scale must be positive (the per-channel type carries its scales in extraParams instead).
_SCALED = frozenset(int(t) for t in QUANTIZED_TYPES if t != T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
# Operations constrain the quantization of their operands (a bias scale equal to input scale x filter scale, an
# output quantized like its input...), so a broken scale or zero point often breaks such a constraint (V10) too.
_QUANTIZATION_CONSTRAINTS = frozenset({"V10"})
_SCALARS = (T.FLOAT32, T.INT32, T.UINT32, T.FLOAT16, T.BOOL)
_TENSORS = tuple(t for t in T if is_tensor_type(t) and t not in (T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.TENSOR_OEM_BYTE))


def _mutate_operand(
    model: Model,
    source: Source,
    eligible: Callable[[Model, int, int, Operand], bool],
    change: Callable[[Model, Operand, Source], None],
    what: str,
    *,
    paired_too: bool = False,
) -> Model:
    """Copy the model, pick an eligible operand, and let `change` edit that operand of the copy in place.

    Operands paired with others through control flow are left alone unless `paired_too` (for changes that no
    control-flow rule compares, such as numberOfConsumers or locations).
    """
    paired = set() if paired_too else paired_operands(model)
    sites = operand_sites(model, lambda m, g, k, o: (g, k) not in paired and eligible(m, g, k, o))
    site: OperandSite = pick(source, sites, what)
    mutated = copy_model(model)
    change(mutated, graphs(mutated)[site.graph].operands[site.index], source)
    return mutated


def _plain(o: Operand) -> bool:
    return int(o.type) in _PLAIN_TYPES


# ---------------------------------------------------------------------------------------------------------------
# V2 operand type out of range


def _register_bad_type(name: str, value: int, description: str) -> None:
    @mutation(name, "V2", "model", description)
    def apply(model: Model, source: Source) -> Model:
        def change(_m: Model, o: Operand, _s: Source) -> None:
            o.type = value

        return _mutate_operand(model, source, lambda *_: True, change, "operand")


for _name, _value, _description in (
    ("operand_type_negative", -1, "an operand's type is -1"),
    ("operand_type_after_subgraph", 16, "an operand's type is 16, one past SUBGRAPH"),
    ("operand_type_below_oem", 9999, "an operand's type is 9999, just below OEM"),
    ("operand_type_after_oem", 10002, "an operand's type is 10002, one past TENSOR_OEM_BYTE"),
):
    _register_bad_type(_name, _value, _description)


@mutation(
    "operand_type_undeclared_extension", "V2", "model", "an operand's type is an extension type of an undeclared prefix"
)
def _undeclared_extension_type(model: Model, source: Source) -> Model:
    declared = {e.prefix for e in model.extension_name_to_prefix}

    def change(_m: Model, o: Operand, s: Source) -> None:
        prefix = s.integer(1, 0xFFFF)
        while prefix in declared:
            prefix = prefix % 0xFFFF + 1
        o.type = prefix << 16 | s.integer(0, 0xFFFF)

    return _mutate_operand(model, source, lambda *_: True, change, "operand")


# ---------------------------------------------------------------------------------------------------------------
# V3 scalar with dimensions


@mutation("scalar_with_dimensions", "V3", "model", "a scalar operand has non-empty dimensions")
def _scalar_with_dimensions(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        o.dimensions = [s.integer(1, 4) for _ in range(s.integer(1, 3))]

    return _mutate_operand(model, source, lambda _m, _g, _k, o: is_scalar_type(o.type), change, "scalar operand")


# ---------------------------------------------------------------------------------------------------------------
# V4 bad scale; V5 zero point out of range


def _nonzero_scale(source: Source) -> float:
    value = source.floats(1e-6, 100.0)
    return -value if source.boolean() else value


@mutation("nonzero_scale_on_unquantized", "V4", "model", "a float, bool or scalar operand has a non-zero scale")
def _nonzero_scale_unquantized(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        o.scale = _nonzero_scale(s)

    return _mutate_operand(
        model, source, lambda _m, _g, _k, o: int(o.type) in _UNQUANTIZED, change, "unquantized operand"
    )


@mutation(
    "negative_scale_on_tensor_int32",
    "V4",
    "model",
    "a TENSOR_INT32 operand has a negative scale",
    also=_QUANTIZATION_CONSTRAINTS,
)
def _negative_scale_int32(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        o.scale = -s.floats(1e-6, 100.0)

    return _mutate_operand(
        model, source, lambda _m, _g, _k, o: int(o.type) == T.TENSOR_INT32, change, "TENSOR_INT32 operand"
    )


@mutation(
    "nonpositive_scale_on_quantized",
    "V4",
    "model",
    "a quantized operand has a zero or negative scale",
    also=_QUANTIZATION_CONSTRAINTS,
)
def _nonpositive_scale_quantized(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        o.scale = 0.0 if s.boolean() else -s.floats(1e-6, 100.0)

    return _mutate_operand(model, source, lambda _m, _g, _k, o: int(o.type) in _SCALED, change, "quantized operand")


@mutation(
    "scale_not_a_number",
    "V4",
    "model",
    "an operand's scale is an object that is not a number (None, a word, a list): a malformed operand (D25)",
)
def _scale_not_a_number(model: Model, source: Source) -> Model:
    # Values no float() conversion accepts either: a lenient driver may read "0.5" as a number, never these.
    def change(_m: Model, o: Operand, s: Source) -> None:
        o.scale = s.choice([None, "scale", [s.floats(1e-3, 1.0)]])

    return _mutate_operand(model, source, lambda _m, _g, _k, o: _plain(o), change, "operand")


@mutation(
    "zero_point_out_of_range",
    "V5",
    "model",
    "a quantized operand's zero point lies outside its type's range",
    also=_QUANTIZATION_CONSTRAINTS,
)
def _zero_point_out_of_range(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        lo, hi = ZERO_POINT_RANGES[int(o.type)]
        o.zero_point = hi + s.integer(1, 1000) if s.boolean() else lo - s.integer(1, 1000)

    return _mutate_operand(
        model, source, lambda _m, _g, _k, o: int(o.type) in ZERO_POINT_RANGES, change, "quantized operand"
    )


@mutation(
    "nonzero_zero_point_on_unquantized",
    "V5",
    "model",
    "a float, bool or integer operand has a zero point",
    also=_QUANTIZATION_CONSTRAINTS,
)
def _nonzero_zero_point_unquantized(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        o.zero_point = s.integer(1, 255) * (-1 if s.boolean() else 1)

    unquantized = _UNQUANTIZED | {int(T.TENSOR_INT32)}
    return _mutate_operand(model, source, lambda _m, _g, _k, o: int(o.type) in unquantized, change, "operand")


# ---------------------------------------------------------------------------------------------------------------
# V8 wrong numberOfConsumers


@mutation("consumer_count_wrong", "V8", "model", "an operand's numberOfConsumers differs from its readers")
def _consumer_count_wrong(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        n = o.number_of_consumers
        options = [n + 1, n + s.integer(2, 100), UINT32_MAX]
        if n > 0:
            options.append(n - 1)
        o.number_of_consumers = s.choice(options)

    return _mutate_operand(model, source, lambda *_: True, change, "operand", paired_too=True)


# ---------------------------------------------------------------------------------------------------------------
# V10 operand type not accepted by the operation


def _retype(o: Operand, new_type: int) -> None:
    """Give an operand another type, with a scale and zero point valid for it (so only the type is wrong)."""
    o.type = T(new_type)  # a HAL type, as the case JSON gives it back
    if new_type in _SCALED:
        o.scale = o.scale if o.scale > 0 else 0.5
        lo, hi = ZERO_POINT_RANGES[new_type]
        o.zero_point = min(max(o.zero_point, lo), hi)
    else:
        o.scale = 0.0
        o.zero_point = 0


@mutation(
    "operand_type_not_accepted",
    "V10",
    "model",
    "an operand of an operation gets a valid type that no signature of the operation accepts at its position",
)
def _operand_type_not_accepted(model: Model, source: Source) -> Model:
    paired = paired_operands(model)
    options: list[tuple[int, int, list[int]]] = []
    for g, graph in enumerate(graphs(model)):
        for op in graph.operations:
            spec = catalogued(op)
            if spec is None:
                continue
            for is_input, indexes in ((True, op.inputs), (False, op.outputs)):
                for position, k in enumerate(indexes):
                    o = graph.operands[k]
                    if (g, k) in paired or int(o.lifetime) == L.NO_VALUE or not _plain(o) or int(o.type) == PER_CHANNEL:
                        continue
                    same_class = _SCALARS if is_scalar_type(o.type) else _TENSORS
                    size = element_size(o.type)
                    # A constant's stored bytes must keep fitting, so its element size stays the same.
                    fits = [
                        int(t)
                        for t in same_class
                        if int(t) != int(o.type)
                        and (int(o.lifetime) not in CONSTANT_LIFETIMES or element_size(t) == size)
                    ]
                    rejected = set(fits) - accepted_types(spec, position, len(indexes), is_input=is_input)
                    if rejected:
                        options.append((g, k, sorted(rejected)))
    g, k, types = pick(source, options, "operand a different type would make unacceptable")
    mutated = copy_model(model)
    _retype(graphs(mutated)[g].operands[k], source.choice(types))
    return mutated


# ---------------------------------------------------------------------------------------------------------------
# V23 constant location


def _sized_constant(lifetime: int) -> Callable[[Model, int, int, Operand], bool]:
    def keep(_m: Model, _g: int, _k: int, o: Operand) -> bool:
        return (
            int(o.lifetime) == lifetime
            and _plain(o)
            and (is_scalar_type(o.type) or not has_unknown_dimensions(o.dimensions))
            and o.location.length > 0
        )

    return keep


def _offset_past(capacity: int, length: int, source: Source) -> int:
    """An offset that puts `length` bytes past the end of `capacity` bytes: just past, further, or near 2**32."""
    return source.choice(
        [
            capacity - length + 1,
            capacity - length + source.integer(1, 4096),
            capacity + source.integer(0, 64),
            UINT32_MAX - source.integer(0, length),
        ]
    )


@mutation(
    "constant_copy_outside_operand_values",
    "V23",
    "model",
    "a CONSTANT_COPY operand's location runs past the end of operandValues",
)
def _copy_outside_values(model: Model, source: Source) -> Model:
    def change(m: Model, o: Operand, s: Source) -> None:
        o.location.offset = max(0, _offset_past(len(m.operand_values), o.location.length, s))

    return _mutate_operand(
        model, source, _sized_constant(L.CONSTANT_COPY), change, "CONSTANT_COPY operand", paired_too=True
    )


@mutation(
    "constant_reference_outside_pool", "V23", "model", "a CONSTANT_REFERENCE operand's location runs past its pool"
)
def _reference_outside_pool(model: Model, source: Source) -> Model:
    def change(m: Model, o: Operand, s: Source) -> None:
        size = int(m.pools[o.location.pool_index].size)
        o.location.offset = max(0, _offset_past(size, o.location.length, s))

    def eligible(m: Model, g: int, k: int, o: Operand) -> bool:
        return _sized_constant(L.CONSTANT_REFERENCE)(m, g, k, o) and 0 <= o.location.pool_index < len(m.pools)

    return _mutate_operand(model, source, eligible, change, "CONSTANT_REFERENCE operand", paired_too=True)


@mutation(
    "constant_length_not_operand_size",
    "V23",
    "model",
    "a constant's location length differs from its operand's byte size",
)
def _constant_length(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        size = o.location.length
        options = [size + s.integer(1, 64), size * 2]
        options += [size - s.integer(1, size), 0] if size > 1 else [0]
        o.location.length = s.choice(options)

    def eligible(m: Model, g: int, k: int, o: Operand) -> bool:
        return _sized_constant(L.CONSTANT_COPY)(m, g, k, o) or _sized_constant(L.CONSTANT_REFERENCE)(m, g, k, o)

    return _mutate_operand(model, source, eligible, change, "constant operand", paired_too=True)


@mutation("constant_copy_with_pool_index", "V23", "model", "a CONSTANT_COPY operand names a pool")
def _copy_with_pool(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        o.location.pool_index = s.choice([1, s.integer(1, 64), UINT32_MAX])

    return _mutate_operand(
        model,
        source,
        lambda _m, _g, _k, o: int(o.lifetime) == L.CONSTANT_COPY,
        change,
        "CONSTANT_COPY operand",
        paired_too=True,
    )


@mutation(
    "constant_reference_missing_pool", "V23", "model", "a CONSTANT_REFERENCE operand names a pool that is not there"
)
def _reference_missing_pool(model: Model, source: Source) -> Model:
    def change(m: Model, o: Operand, s: Source) -> None:
        o.location.pool_index = s.choice([len(m.pools), len(m.pools) + s.integer(1, 64), UINT32_MAX])

    return _mutate_operand(
        model,
        source,
        lambda _m, _g, _k, o: int(o.lifetime) == L.CONSTANT_REFERENCE,
        change,
        "CONSTANT_REFERENCE operand",
        paired_too=True,
    )


def _non_empty_location(s: Source) -> DataLocation:
    """A location that is not all zero: three times out of four one field alone (pool, offset or length) is not 0.

    A check of the three fields together (each compared with 0) goes wrong on such single deviations first; three
    fields drawn independently would make each of them rare.
    """
    field = s.integer(0, 3)
    if field == 3:
        loc = DataLocation(s.integer(0, 2), s.integer(0, 64), s.integer(0, 64))
        if location_is_empty(loc):
            loc.length = 4
        return loc
    values = [0, 0, 0]
    values[field] = s.choice([1, s.integer(1, 64), UINT32_MAX])
    return DataLocation(*values)


@mutation(
    "location_on_non_constant",
    "V23",
    "model",
    "a temporary, input, output or omitted operand carries a non-empty location",
)
def _location_on_non_constant(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        o.location = _non_empty_location(s)

    return _mutate_operand(
        model,
        source,
        lambda _m, _g, _k, o: int(o.lifetime) in LOCATIONLESS_LIFETIMES,
        change,
        "operand without a stored value",
        paired_too=True,
    )


# ---------------------------------------------------------------------------------------------------------------
# V24 per-channel quantization parameters


def _per_channel(_m: Model, _g: int, _k: int, o: Operand) -> bool:
    return (
        int(o.type) == PER_CHANNEL
        and isinstance(o.extra_params, SymmPerChannelQuantParams)
        and 0 <= o.extra_params.channel_dim < len(o.dimensions)
    )


def _register_channel_mutation(name: str, description: str, change: Callable[[Operand, Source], None]) -> None:
    @mutation(name, "V24", "model", description)
    def apply(model: Model, source: Source) -> Model:
        return _mutate_operand(model, source, _per_channel, lambda _m, o, s: change(o, s), "per-channel operand")


def _channel_dim_beyond_rank(o: Operand, s: Source) -> None:
    o.extra_params.channel_dim = len(o.dimensions) + s.choice([0, s.integer(1, 8), UINT32_MAX - len(o.dimensions)])


def _scale_count(o: Operand, s: Source) -> None:
    scales = o.extra_params.scales
    if scales and s.boolean():
        del scales[s.integer(0, len(scales) - 1)]
    else:
        scales.extend([s.floats(1e-3, 1.0)] * s.integer(1, 3))


def _scale_not_positive(o: Operand, s: Source) -> None:
    scales = o.extra_params.scales
    if not scales:
        raise GenerationRejected("per-channel operand without channels")
    scales[s.integer(0, len(scales) - 1)] = 0.0 if s.boolean() else -s.floats(1e-6, 10.0)


def _scale_field_set(o: Operand, s: Source) -> None:
    o.scale = s.floats(1e-6, 10.0)


def _params_missing(o: Operand, s: Source) -> None:
    o.extra_params = None if s.boolean() else bytes(s.integer(1, 8))


for _name, _description, _change in (
    (
        "channel_dim_beyond_rank",
        "a per-channel operand's channelDim is not one of its dimensions",
        _channel_dim_beyond_rank,
    ),
    ("channel_scale_count_wrong", "a per-channel operand has more or fewer scales than channels", _scale_count),
    ("channel_scale_not_positive", "a per-channel operand has a zero or negative channel scale", _scale_not_positive),
    ("per_channel_scale_field_set", "a per-channel operand has a non-zero scale field", _scale_field_set),
    ("per_channel_params_missing", "a per-channel operand has no per-channel params", _params_missing),
):
    _register_channel_mutation(_name, _description, _change)


@mutation(
    "channel_params_on_other_type",
    "V24",
    "model",
    "an operand of a type other than TENSOR_QUANT8_SYMM_PER_CHANNEL carries per-channel or extension params",
)
def _params_on_other_type(model: Model, source: Source) -> Model:
    def change(_m: Model, o: Operand, s: Source) -> None:
        if s.boolean():
            o.extra_params = SymmPerChannelQuantParams([s.floats(1e-3, 1.0)], s.integer(0, 3))
        else:
            o.extra_params = bytes(s.integer(1, 8))

    return _mutate_operand(
        model, source, lambda _m, _g, _k, o: _plain(o) and int(o.type) != PER_CHANNEL, change, "operand"
    )

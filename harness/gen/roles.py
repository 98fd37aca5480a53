"""Buffer descriptors and roles for memory-domain allocations (REQUIREMENTS D15), valid or broken on purpose.

`io_operands(models)` lists the main inputs and outputs of the prepared-model candidates. `generate_roles` draws a
valid allocation from them: an anchor operand, then more roles among the operands that agree with it on type,
scale, zero point and extra parameters and whose dimensions merge with it, a frequency in (0, 1] per role, and a
descriptor whose dimensions merge with the roles' (often leaving dimensions or the rank unknown).

`break_roles` turns a valid allocation into an invalid one with one mutation of INVALID_ROLE_MUTATIONS, each
labelled with the clause of D15 it breaks. An Allocation is plain data with a JSON form, so a case can carry it;
its prepared-model list names case models by index ({"model": k}) or a prepared model that another device made
({"foreign": true}), which the target supplies.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from harness.case.values import float_from_json, float_to_json
from harness.gen.source import GenerationRejected, Source, chance, permutation, weighted
from harness.hal import (
    BufferDesc,
    BufferRole,
    Model,
    Operand,
    OperandType,
    SymmPerChannelQuantParams,
    is_known_type,
    is_scalar_type,
    merge_dimensions,
)

__all__ = [
    "INVALID_ROLE_MUTATIONS",
    "Allocation",
    "IoOperand",
    "RoleMutation",
    "RolesConfig",
    "break_roles",
    "conflicting_dimensions",
    "generate_roles",
    "io_operands",
    "operand_signature",
    "role_dimensions",
]

INPUT, OUTPUT = "input", "output"
# Clauses of D15, as the labels of invalid allocations.
NO_ROLES = "D15.roles_present"
UNIQUE = "D15.roles_unique"
MODEL_INDEX = "D15.model_index"
IO_INDEX = "D15.io_index"
FREQUENCY = "D15.frequency"
OPERANDS_AGREE = "D15.operands_agree"
DIMENSIONS = "D15.dimensions_compatible"
DEVICE = "D15.prepared_model_of_device"

# Element types a buffer cannot hold: SUBGRAPH has no storage and OEM types have no defined layout.
_NO_STORAGE = frozenset({int(OperandType.SUBGRAPH), int(OperandType.OEM), int(OperandType.TENSOR_OEM_BYTE)})


@dataclass(frozen=True)
class IoOperand:
    """A main input or output of one prepared-model candidate."""

    model_index: int
    direction: str  # INPUT or OUTPUT
    io_index: int
    operand: Operand = field(compare=False)

    @property
    def key(self) -> tuple[int, str, int]:
        """(model index, direction, io index): what a role names."""
        return (self.model_index, self.direction, self.io_index)


def io_operands(models: Sequence[Model]) -> list[IoOperand]:
    """Every main input and output of every model, in model, direction, io order."""
    found = []
    for k, model in enumerate(models):
        main = model.main
        for direction, indexes in ((INPUT, main.input_indexes), (OUTPUT, main.output_indexes)):
            for io, index in enumerate(indexes):
                found.append(IoOperand(k, direction, io, main.operands[index]))
    return found


def operand_signature(operand: Operand) -> tuple:
    """What all operands of one buffer's roles must share: type, scale, zero point and extra parameters."""
    extra = operand.extra_params
    if isinstance(extra, SymmPerChannelQuantParams):
        extra_key: object = ("channelQuant", tuple(float(s) for s in extra.scales), int(extra.channel_dim))
    elif isinstance(extra, bytes | bytearray):
        extra_key = ("extension", bytes(extra))
    else:
        extra_key = None
    return (int(operand.type), float(operand.scale), int(operand.zero_point), extra_key)


def _has_storage(operand: Operand) -> bool:
    return is_known_type(int(operand.type)) and int(operand.type) not in _NO_STORAGE


def role_dimensions(operands: Sequence[Operand]) -> list[int] | None:
    """The dimensions of role operands merged together, or None when two of them conflict."""
    dims: list[int] | None = []
    for operand in operands:
        dims = merge_dimensions(dims, operand.dimensions) if dims is not None else None
    return dims


@dataclass
class Allocation:
    """The arguments of one IDevice::allocate call, and what the generator meant by them.

    prepared: one entry per prepared model passed: {"model": k} (case model k's prepared model) or
              {"foreign": true} (a prepared model this device did not make).
    input_roles, output_roles: {"modelIndex", "ioIndex", "frequency"} (frequency may be "nan"/"inf" in JSON).
    dimensions: the descriptor's dimensions merged with every role operand's (for an invalid allocation, those of
                the valid one it was broken from).
    """

    desc: list[int]
    prepared: list[dict]
    input_roles: list[dict]
    output_roles: list[dict]
    valid: bool = True
    mutation: str | None = None
    rule: str | None = None  # the D15 clause an invalid allocation breaks
    dimensions: list[int] | None = None
    operand_type: int | None = None

    def roles(self, direction: str) -> list[dict]:
        """The roles of one direction."""
        return self.input_roles if direction == INPUT else self.output_roles

    def hal(self) -> tuple[BufferDesc, list[BufferRole], list[BufferRole]]:
        """The descriptor and roles as HAL structures."""

        def role(d: dict) -> BufferRole:
            return BufferRole(int(d["modelIndex"]), int(d["ioIndex"]), float(d["frequency"]))

        return (
            BufferDesc([int(x) for x in self.desc]),
            [role(r) for r in self.input_roles],
            [role(r) for r in self.output_roles],
        )

    def to_json(self) -> dict:
        """A JSON-ready dict (non-finite frequencies as strings)."""

        def role(d: dict) -> dict:
            return {**d, "frequency": float_to_json(d["frequency"])}

        return {
            "desc": list(self.desc),
            "prepared": [dict(p) for p in self.prepared],
            "inputRoles": [role(r) for r in self.input_roles],
            "outputRoles": [role(r) for r in self.output_roles],
            "valid": self.valid,
            "mutation": self.mutation,
            "rule": self.rule,
            "dimensions": self.dimensions,
            "operandType": self.operand_type,
        }

    @classmethod
    def from_json(cls, d: Mapping) -> Allocation:
        """The Allocation a to_json dict describes."""

        def role(r: Mapping) -> dict:
            return {
                "modelIndex": int(r["modelIndex"]),
                "ioIndex": int(r["ioIndex"]),
                "frequency": float_from_json(r["frequency"]),
            }

        dims = d.get("dimensions")
        return cls(
            desc=[int(x) for x in d.get("desc", [])],
            prepared=[dict(p) for p in d.get("prepared", [{"model": 0}])],
            input_roles=[role(r) for r in d.get("inputRoles", [])],
            output_roles=[role(r) for r in d.get("outputRoles", [])],
            valid=bool(d.get("valid", True)),
            mutation=d.get("mutation"),
            rule=d.get("rule"),
            dimensions=None if dims is None else [int(x) for x in dims],
            operand_type=d.get("operandType"),
        )


@dataclass(frozen=True)
class RolesConfig:
    """What generate_roles may produce."""

    max_roles: int = 4
    extra_role_probability: float = 0.6  # each compatible operand joins the anchor's roles (up to max_roles)
    # How the descriptor's dimensions relate to the roles' merged dimensions.
    desc_kinds: tuple[tuple[str, float], ...] = (
        ("unknown_rank", 0.35),
        ("same", 0.3),
        ("partial", 0.2),
        ("fill", 0.15),
    )
    frequencies: tuple[float, ...] = (1.0, 1.0, 0.5, 0.25, 1e-3)
    max_dim: int = 4  # largest dimension drawn to fill an unknown one without a hint


def generate_roles(
    source: Source,
    models: Sequence[Model],
    config: RolesConfig = RolesConfig(),  # noqa: B008
    *,
    candidates: Sequence[IoOperand] | None = None,
    shapes: Mapping[tuple[int, str, int], Sequence[int]] | None = None,
) -> Allocation:
    """A valid allocation over these models' main inputs and outputs.

    candidates: the operands roles may name (default: every main input and output with storage).
    shapes: actual value shapes by (model, direction, io): where the descriptor fills an unknown dimension, it
    prefers the first role's actual one (so executions that write the buffer fit it).
    """
    pool = candidates if candidates is not None else io_operands(models)
    candidates = [io for io in pool if _has_storage(io.operand)]
    if not candidates:
        raise GenerationRejected("no model input or output a buffer can hold")
    anchor = source.choice(candidates)
    signature = operand_signature(anchor.operand)
    chosen = [anchor]
    dims = list(anchor.operand.dimensions)
    others = [io for io in candidates if io.key != anchor.key and operand_signature(io.operand) == signature]
    for i in permutation(source, len(others)):
        if len(chosen) >= config.max_roles:
            break
        if not chance(source, config.extra_role_probability):
            continue
        merged = merge_dimensions(dims, others[i].operand.dimensions)
        if merged is not None:
            chosen.append(others[i])
            dims = merged
    operand_type = int(anchor.operand.type)
    if is_scalar_type(operand_type):
        desc: list[int] = []
    else:
        hint = (shapes or {}).get(anchor.key)
        desc = _draw_desc(source, dims, hint, config)
    allocated = merge_dimensions(desc, dims)
    assert allocated is not None  # the descriptor is drawn to merge
    roles: dict[str, list[dict]] = {INPUT: [], OUTPUT: []}
    for io in chosen:
        frequency = source.choice(config.frequencies)
        roles[io.direction].append({"modelIndex": io.model_index, "ioIndex": io.io_index, "frequency": frequency})
    return Allocation(
        desc=desc,
        prepared=[{"model": k} for k in range(len(models))],
        input_roles=roles[INPUT],
        output_roles=roles[OUTPUT],
        dimensions=allocated,
        operand_type=operand_type,
    )


def _draw_desc(source: Source, dims: list[int], hint: Sequence[int] | None, config: RolesConfig) -> list[int]:
    """Descriptor dimensions that merge with the roles' `dims`."""
    kind = weighted(source, config.desc_kinds)
    if kind == "unknown_rank":
        return []
    if kind == "same":
        return list(dims)
    if kind == "partial":
        # Forget some of what the roles know: still compatible.
        return [0 if d and source.boolean() else d for d in dims]
    # "fill": name the dimensions the roles leave unknown, from the actual shape when it fits.
    if hint is not None and merge_dimensions(dims, hint) is not None and len(hint):
        return [int(x) for x in hint]
    if not dims:
        rank = source.integer(1, 4)
        return [source.integer(1, config.max_dim) for _ in range(rank)]
    return [d or source.integer(1, config.max_dim) for d in dims]


# --- Invalid allocations ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoleMutation:
    """One way of breaking one clause of D15: apply(context, source) -> an invalid Allocation."""

    name: str
    rule: str
    description: str
    apply: Callable[[_Context, Source], Allocation]


@dataclass
class _Context:
    """What a mutation may look at: the models, their io operands and the valid allocation."""

    models: Sequence[Model]
    operands: list[IoOperand]
    allocation: Allocation

    def operand(self, direction: str, role: Mapping) -> IoOperand | None:
        entry = self.allocation.prepared[int(role["modelIndex"])]
        if "model" not in entry:
            return None
        key = (int(entry["model"]), direction, int(role["ioIndex"]))
        return next((io for io in self.operands if io.key == key), None)

    def role_operands(self) -> list[IoOperand]:
        found = []
        for direction in (INPUT, OUTPUT):
            for role in self.allocation.roles(direction):
                io = self.operand(direction, role)
                if io is not None:
                    found.append(io)
        return found

    def roles_dimensions(self) -> list[int]:
        dims = role_dimensions([io.operand for io in self.role_operands()])
        return dims if dims is not None else []

    def signature(self) -> tuple | None:
        operands = self.role_operands()
        return operand_signature(operands[0].operand) if operands else None

    def unused(self) -> list[IoOperand]:
        """Operands of the listed models that no role names yet."""
        used = {io.key for io in self.role_operands()}
        listed = {int(p["model"]) for p in self.allocation.prepared if "model" in p}
        return [io for io in self.operands if io.key not in used and io.model_index in listed]


def _copy(a: Allocation, mutation: str, rule: str) -> Allocation:
    return replace(
        a,
        desc=list(a.desc),
        prepared=[dict(p) for p in a.prepared],
        input_roles=[dict(r) for r in a.input_roles],
        output_roles=[dict(r) for r in a.output_roles],
        valid=False,
        mutation=mutation,
        rule=rule,
    )


def _pick_role(source: Source, a: Allocation) -> tuple[str, int]:
    """(direction, position) of one existing role."""
    places = [(d, i) for d in (INPUT, OUTPUT) for i in range(len(a.roles(d)))]
    return source.choice(places)


def _prepared_index(a: Allocation, model: int) -> int:
    return next(i for i, p in enumerate(a.prepared) if p.get("model") == model)


def _no_roles(ctx: _Context, source: Source) -> Allocation:
    a = _copy(ctx.allocation, "no_roles", NO_ROLES)
    a.input_roles, a.output_roles = [], []
    return a


def _duplicate_role(ctx: _Context, source: Source) -> Allocation:
    a = _copy(ctx.allocation, "duplicate_role", UNIQUE)
    direction, i = _pick_role(source, a)
    roles = a.roles(direction)
    twin = dict(roles[i], frequency=source.choice((roles[i]["frequency"], 1.0, 0.5)))
    roles.insert(source.integer(0, len(roles)), twin)
    return a


def _aliased_model(ctx: _Context, source: Source) -> Allocation:
    # The same prepared model twice in the list: two model indexes naming one role (a duplicate in disguise).
    a = _copy(ctx.allocation, "aliased_prepared_model", UNIQUE)
    direction, i = _pick_role(source, a)
    role = a.roles(direction)[i]
    a.prepared.append(dict(a.prepared[int(role["modelIndex"])]))
    a.roles(direction).append(dict(role, modelIndex=len(a.prepared) - 1))
    return a


def _model_index(ctx: _Context, source: Source) -> Allocation:
    a = _copy(ctx.allocation, "model_index_out_of_range", MODEL_INDEX)
    direction, i = _pick_role(source, a)
    past = len(a.prepared) + source.integer(0, 2)
    a.roles(direction)[i]["modelIndex"] = source.choice((past, past, 0xFFFFFFFF))
    return a


def _io_index(ctx: _Context, source: Source) -> Allocation:
    a = _copy(ctx.allocation, "io_index_out_of_range", IO_INDEX)
    direction, i = _pick_role(source, a)
    role = a.roles(direction)[i]
    main = ctx.models[int(a.prepared[int(role["modelIndex"])]["model"])].main
    count = len(main.input_indexes if direction == INPUT else main.output_indexes)
    role["ioIndex"] = source.choice((count, count + source.integer(1, 3), 0xFFFFFFFF))
    return a


def _frequency(name: str, values: tuple[float, ...]) -> Callable[[_Context, Source], Allocation]:
    def apply(ctx: _Context, source: Source) -> Allocation:
        a = _copy(ctx.allocation, name, FREQUENCY)
        direction, i = _pick_role(source, a)
        a.roles(direction)[i]["frequency"] = source.choice(values)
        return a

    return apply


_MISMATCH_NAMES = ("type_mismatch", "scale_mismatch", "zero_point_mismatch", "extra_params_mismatch")


def _mismatched(ctx: _Context) -> list[IoOperand]:
    signature = ctx.signature()
    return [io for io in ctx.unused() if _has_storage(io.operand) and operand_signature(io.operand) != signature]


def _operand_mismatch(ctx: _Context, source: Source) -> Allocation:
    signature = ctx.signature()
    io = source.choice(_mismatched(ctx))
    other = operand_signature(io.operand)
    field_index = next(i for i in range(4) if other[i] != signature[i])  # type: ignore[index]
    a = _copy(ctx.allocation, _MISMATCH_NAMES[field_index], OPERANDS_AGREE)
    _add_role(a, io, source)
    return a


def _add_role(a: Allocation, io: IoOperand, source: Source) -> None:
    role = {"modelIndex": _prepared_index(a, io.model_index), "ioIndex": io.io_index, "frequency": 1.0}
    roles = a.roles(io.direction)
    roles.insert(source.integer(0, len(roles)), role)


def _conflicting_roles(ctx: _Context) -> list[IoOperand]:
    signature = ctx.signature()
    dims = ctx.roles_dimensions()
    return [
        io
        for io in ctx.unused()
        if operand_signature(io.operand) == signature and merge_dimensions(dims, io.operand.dimensions) is None
    ]


def _dimensions_between_roles(ctx: _Context, source: Source) -> Allocation:
    a = _copy(ctx.allocation, "dimensions_conflict_between_roles", DIMENSIONS)
    _add_role(a, source.choice(_conflicting_roles(ctx)), source)
    return a


def conflicting_dimensions(source: Source, dims: Sequence[int]) -> list[int]:
    """Dimensions that do not merge with `dims` (of known rank): another rank, or another value where one is known."""
    known = [i for i, d in enumerate(dims) if d]
    ways = ["longer"] + (["shorter"] if len(dims) > 1 else []) + (["value"] if known else [])
    way = source.choice(ways)
    if way == "longer":
        return [*dims, source.integer(1, 3)]
    if way == "shorter":
        return list(dims[:-1])
    out = list(dims)
    i = source.choice(known)
    out[i] = dims[i] + source.integer(1, 3)
    return out


def _dimensions_with_desc(ctx: _Context, source: Source) -> Allocation:
    a = _copy(ctx.allocation, "dimensions_conflict_with_desc", DIMENSIONS)
    a.desc = conflicting_dimensions(source, ctx.roles_dimensions())
    return a


def _scalar_with_dimensions(ctx: _Context, source: Source) -> Allocation:
    a = _copy(ctx.allocation, "scalar_with_dimensions", DIMENSIONS)
    a.desc = [source.integer(1, 3)]
    return a


def _foreign_model(ctx: _Context, source: Source) -> Allocation:
    a = _copy(ctx.allocation, "foreign_prepared_model", DEVICE)
    direction, i = _pick_role(source, a)
    role = a.roles(direction)[i]
    if source.boolean():
        # Replace a listed model: every role on it now names another device's prepared model.
        a.prepared[int(role["modelIndex"])] = {"foreign": True}
    else:
        a.prepared.append({"foreign": True})
        a.roles(direction).append(dict(role, modelIndex=len(a.prepared) - 1))
    return a


def _is_scalar(ctx: _Context) -> bool:
    return ctx.allocation.operand_type is not None and is_scalar_type(ctx.allocation.operand_type)


_ALWAYS: Callable[[_Context], bool] = lambda ctx: True  # noqa: E731

# name -> (mutation, applies to this context)
INVALID_ROLE_MUTATIONS: dict[str, tuple[RoleMutation, Callable[[_Context], bool]]] = {
    m.name: (m, applies)
    for m, applies in (
        (RoleMutation("no_roles", NO_ROLES, "no input and no output role", _no_roles), _ALWAYS),
        (RoleMutation("duplicate_role", UNIQUE, "one role given twice", _duplicate_role), _ALWAYS),
        (
            RoleMutation(
                "aliased_prepared_model",
                UNIQUE,
                "one prepared model listed twice, and the same role named through both indexes",
                _aliased_model,
            ),
            _ALWAYS,
        ),
        (
            RoleMutation("model_index_out_of_range", MODEL_INDEX, "a role's modelIndex past the list", _model_index),
            _ALWAYS,
        ),
        (
            RoleMutation("io_index_out_of_range", IO_INDEX, "a role's ioIndex past the model's io", _io_index),
            _ALWAYS,
        ),
        (RoleMutation("frequency_zero", FREQUENCY, "frequency 0", _frequency("frequency_zero", (0.0, -0.0))), _ALWAYS),
        (
            RoleMutation(
                "frequency_above_one",
                FREQUENCY,
                "frequency above 1",
                _frequency("frequency_above_one", (1.0000001, 1.5, 10.0, math.inf)),
            ),
            _ALWAYS,
        ),
        (
            RoleMutation(
                "frequency_negative", FREQUENCY, "negative frequency", _frequency("frequency_negative", (-0.5, -1.0))
            ),
            _ALWAYS,
        ),
        (
            RoleMutation("frequency_nan", FREQUENCY, "frequency NaN", _frequency("frequency_nan", (math.nan,))),
            _ALWAYS,
        ),
        (
            RoleMutation(
                "operand_mismatch",
                OPERANDS_AGREE,
                "a role operand of another type, scale, zero point or extra parameters (labelled by the first)",
                _operand_mismatch,
            ),
            lambda ctx: bool(_mismatched(ctx)),
        ),
        (
            RoleMutation(
                "dimensions_conflict_between_roles",
                DIMENSIONS,
                "a role operand whose dimensions conflict with the other roles'",
                _dimensions_between_roles,
            ),
            lambda ctx: bool(_conflicting_roles(ctx)),
        ),
        (
            RoleMutation(
                "dimensions_conflict_with_desc",
                DIMENSIONS,
                "descriptor dimensions of another rank or value than the roles'",
                _dimensions_with_desc,
            ),
            lambda ctx: not _is_scalar(ctx) and bool(ctx.roles_dimensions()),
        ),
        (
            RoleMutation(
                "scalar_with_dimensions", DIMENSIONS, "descriptor dimensions for a scalar", _scalar_with_dimensions
            ),
            _is_scalar,
        ),
        (
            RoleMutation("foreign_prepared_model", DEVICE, "a prepared model another device made", _foreign_model),
            _ALWAYS,
        ),
    )
}


def break_roles(
    source: Source, models: Sequence[Model], allocation: Allocation, names: Sequence[str] | None = None
) -> Allocation:
    """An invalid allocation: `allocation` (valid) broken by one applicable mutation (of `names`, default all)."""
    if not allocation.valid:
        raise ValueError("break_roles takes a valid allocation")
    ctx = _Context(models, io_operands(models), allocation)
    wanted = list(INVALID_ROLE_MUTATIONS) if names is None else list(names)
    applicable = [INVALID_ROLE_MUTATIONS[n][0] for n in wanted if INVALID_ROLE_MUTATIONS[n][1](ctx)]
    if not applicable:
        raise GenerationRejected("no role mutation applies to this allocation")
    return source.choice(applicable).apply(ctx, source)

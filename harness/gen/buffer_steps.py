"""Steps on one driver-managed buffer (REQUIREMENTS D16-D18), drawn for a valid allocation of harness.gen.roles.

`plan_steps(source, generated, allocation, paths)` draws what a memory_domain case does with its buffer. Each step
is plain JSON data:

- copyFrom: IBuffer::copyFrom of `value` with `dims` from a memory of `kind`, `sizeDelta` bytes off its size;
- copyTo: IBuffer::copyTo into a memory of `kind`, `sizeDelta` bytes off the content's size (`fallbackBytes` when
  the content's size cannot be known);
- execute: case model `model` on `path` with the buffer as the `inputs`/`outputs` io indexes it names, `dims` for
  the buffer's arguments (None, dimensions, "allocated" or "current"); optionally a passed `deadline`, a too small
  regular output `smallOutput`, the prepared model the buffer was not allocated for (`prepared: other`) or a
  `token` naming no buffer (a key of BAD_TOKENS), with the `misuse` it stands for.

The planner tracks the content shape it expects the buffer to hold so that copy sizes come out right, and leans
towards initializing steps while it expects none. `declared_roles` gives, per case model, the io indexes the buffer
has a role for (what D16 lets an execution use); `role_candidates` and `value_shapes` are what generate_roles is
given for generated models.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.case.values import to_json_values
from harness.gen.model import GeneratedModel
from harness.gen.roles import INPUT, OUTPUT, Allocation, IoOperand, conflicting_dimensions, io_operands
from harness.gen.source import Source, chance, weighted
from harness.hal import element_size, has_unknown_dimensions, is_scalar_type, merge_dimensions, numpy_dtype
from harness.hal.memory import MemoryKind

__all__ = [
    "BAD_TOKENS",
    "COPY_KINDS",
    "DEFAULT_STEPS",
    "declared_roles",
    "plan_steps",
    "role_candidates",
    "value_shapes",
]

COPY_KINDS = (MemoryKind.ASHMEM.value, MemoryKind.MMAP_FD.value, MemoryKind.HARDWARE_BUFFER_BLOB.value)
# Tokens naming no buffer: 0 is never a token; the largest u32 is one no small test reaches.
BAD_TOKENS = {"zero": 0, "unknown": (1 << 32) - 1}
# (kind, weight) of the steps plan_steps draws by default.
DEFAULT_STEPS: tuple[tuple[str, float], ...] = (
    ("copy_from", 3.0),
    ("copy_to", 3.0),
    ("write", 3.0),
    ("read", 3.0),
    ("write_failing", 1.5),
    ("copy_from_bad_size", 1.0),
    ("copy_from_bad_dims", 1.0),
    ("copy_to_bad_size", 1.0),
    ("wrong_role", 1.5),
    ("wrong_model", 0.7),
    ("input_and_output", 0.7),
    ("two_outputs", 0.5),
    ("bad_token", 0.5),
    ("conflicting_dims", 1.0),
)
# Weight factors of step kinds while the planner expects the buffer to be uninitialized.
_UNINITIALIZED_BIAS = {"copy_from": 2.0, "write": 2.0, "read": 0.5, "copy_to": 0.5}


def plan_steps(
    source: Source,
    generated: Sequence[GeneratedModel],
    allocation: Allocation,
    paths: Sequence[str],
    kinds: Sequence[tuple[str, float]] = DEFAULT_STEPS,
    max_steps: int = 8,
) -> list[dict]:
    """Up to max_steps steps of `kinds` ((kind, weight) pairs) on the buffer of `allocation` over the generated
    models; none for an invalid allocation."""
    return _Planner(source, generated, allocation, paths).draw(kinds, max_steps)


def role_candidates(generated: Sequence[GeneratedModel]) -> list[IoOperand]:
    """Operands a buffer's roles may name: any output, and the inputs generated with a value.

    An optional input generated without one would change the operation's semantics once the buffer gives it one.
    """
    found = []
    for io in io_operands([g.model for g in generated]):
        if io.direction == INPUT and generated[io.model_index].inputs[io.io_index] is None:
            continue
        found.append(io)
    return found


def value_shapes(generated: Sequence[GeneratedModel]) -> dict[tuple[int, str, int], tuple[int, ...]]:
    """Actual value shapes of every model input (with a value) and output, by role key."""
    shapes = {}
    for k, g in enumerate(generated):
        for io, value in enumerate(g.inputs):
            if value is not None:
                shapes[(k, INPUT, io)] = tuple(np.shape(value))
        for io, value in enumerate(g.outputs):
            shapes[(k, OUTPUT, io)] = tuple(np.shape(value))
    return shapes


def declared_roles(allocation: Allocation, count: int) -> list[dict[str, set[int]]]:
    """Per case model, the io indexes of each direction the buffer has a role for (on its own prepared model)."""
    declared: list[dict[str, set[int]]] = [{INPUT: set(), OUTPUT: set()} for _ in range(count)]
    for direction in (INPUT, OUTPUT):
        for role in allocation.roles(direction):
            index = int(role["modelIndex"])
            if 0 <= index < len(allocation.prepared) and "model" in allocation.prepared[index]:
                declared[int(allocation.prepared[index]["model"])][direction].add(int(role["ioIndex"]))
    return declared


class _Planner:
    """Draws steps for a valid allocation, tracking the content shape it expects so that sizes come out right."""

    def __init__(
        self, source: Source, generated: Sequence[GeneratedModel], allocation: Allocation, paths: Sequence[str]
    ) -> None:
        self.src = source
        self.generated = generated
        self.allocation = allocation
        self.paths = tuple(paths)
        self.dims = list(allocation.dimensions or [])
        self.type = allocation.operand_type
        self.declared = declared_roles(allocation, len(generated))
        self.predicted: tuple[int, ...] | None = None  # content shape the planner expects (None: not initialized)

    def draw(self, kinds: Sequence[tuple[str, float]], max_steps: int) -> list[dict]:
        """Up to max_steps steps (none for an invalid allocation)."""
        if not self.allocation.valid or self.type is None:
            return []
        steps = []
        for _ in range(self.src.integer(1, max(1, max_steps))):
            # While the planner expects no content, initializing steps come first more often than reads.
            bias = _UNINITIALIZED_BIAS if self.predicted is None else {}
            kind = weighted(self.src, [(k, w * bias.get(k, 1.0)) for k, w in kinds])
            step = getattr(self, f"_{kind}")()
            if step is None:
                step = self._copy_to()
            steps.append(step)
            if self.src.exhausted:
                break
        return steps

    # -- helpers
    @property
    def scalar(self) -> bool:
        return is_scalar_type(self.type)

    @property
    def known(self) -> bool:
        """The allocated dimensions are all known (always so for a scalar)."""
        return self.scalar or not has_unknown_dimensions(self.dims)

    def _roles(self, direction: str) -> list[tuple[int, int]]:
        return [(k, io) for k, d in enumerate(self.declared) for io in sorted(d[direction])]

    def _path(self) -> str:
        return self.src.choice(self.paths)

    def _content(self) -> tuple[tuple[int, ...], np.ndarray]:
        """Dimensions and values to copy in: a role's actual value when one fits, else made up."""
        fitting = []
        for k, g in enumerate(self.generated):
            for io in sorted(self.declared[k][INPUT]):
                value = g.inputs[io]
                if value is not None and merge_dimensions(self.dims, np.shape(value)) is not None:
                    fitting.append(value)
            for io in sorted(self.declared[k][OUTPUT]):
                if io < len(g.outputs) and merge_dimensions(self.dims, np.shape(g.outputs[io])) is not None:
                    fitting.append(g.outputs[io])
        if self.scalar:
            fitting = [v for v in fitting if np.ndim(v) == 0]
        if fitting and (len(fitting) > 1 or not chance(self.src, 0.2)):
            value = np.asarray(self.src.choice(fitting))
            return tuple(np.shape(value)), value
        if self.scalar:
            dims: tuple[int, ...] = ()
        elif self.dims:
            dims = tuple(d or self.src.integer(1, 3) for d in self.dims)
        else:
            dims = tuple(self.src.integer(1, 3) for _ in range(self.src.integer(1, 3)))
        return dims, _made_up(self.src, self.type, dims)  # type: ignore[arg-type]

    def _size(self, dims: Sequence[int]) -> int:
        return element_size(self.type) * math.prod(dims)  # type: ignore[arg-type]

    def _execute(self, k: int, inputs: Sequence[int] = (), outputs: Sequence[int] = (), **extra: object) -> dict:
        step = {"op": "execute", "model": k, "path": self._path(), "inputs": list(inputs), "outputs": list(outputs)}
        step["dims"] = None
        step.update(extra)
        return step

    # -- step kinds (each returns a step, or None when the case offers no place for it)
    def _copy_from(self) -> dict:
        dims, value = self._content()
        given: list[int] = list(dims)
        if not self.scalar and self.known and chance(self.src, 0.3):
            given = []  # "the allocated dimensions"
        self.predicted = dims
        return _copy_from_step(self.src, given, value, 0)

    def _copy_from_bad_size(self) -> dict:
        dims, value = self._content()
        item = element_size(self.type)  # type: ignore[arg-type]
        nbytes = self._size(dims)
        deltas = [item, 3 * item, 1] + ([-item, -nbytes] if nbytes >= item else [])
        self.predicted = None
        return _copy_from_step(self.src, list(dims), value, self.src.choice(deltas))

    def _copy_from_bad_dims(self) -> dict | None:
        dims, value = self._content()
        if self.scalar:
            bad = [1] * self.src.integer(1, 2)
        else:
            ways = ["zero"] + ([] if self.known else ["empty"]) + (["conflict"] if self.dims else [])
            way = self.src.choice(ways)
            if way == "empty":
                bad = []
            elif way == "zero":
                bad = list(dims)
                bad[self.src.integer(0, len(bad) - 1)] = 0
            else:
                bad = conflicting_dimensions(self.src, self.dims)
        self.predicted = None
        return _copy_from_step(self.src, bad, value, 0)

    def _copy_to(self, delta: int = 0) -> dict:
        fallback = self._size(self.predicted) if self.predicted is not None else 64
        return {"op": "copyTo", "kind": self.src.choice(COPY_KINDS), "sizeDelta": delta, "fallbackBytes": fallback}

    def _copy_to_bad_size(self) -> dict:
        item = element_size(self.type)  # type: ignore[arg-type]
        return self._copy_to(self.src.choice((item, -item, 1, 4 * item)))

    def _write(self, failing: str | None = None) -> dict | None:
        roles = self._roles(OUTPUT)
        if not roles:
            return None
        k, io = self.src.choice(roles)
        step = self._execute(k, outputs=[io])
        if not failing:
            if not self.scalar and self.dims and chance(self.src, 0.25):
                step["dims"] = "allocated"
            outputs = self.generated[k].outputs
            self.predicted = tuple(np.shape(outputs[io])) if io < len(outputs) else None
            return step
        others = [j for j in range(len(self.generated[k].model.main.output_indexes)) if j != io]
        if failing == "small" and others:
            step["smallOutput"] = self.src.choice(others)
        else:
            step["deadline"] = "passed"
        self.predicted = None
        return step

    def _write_failing(self) -> dict | None:
        return self._write(self.src.choice(("small", "deadline")))

    def _read(self) -> dict | None:
        roles = self._roles(INPUT)
        if not roles:
            return None
        k, io = self.src.choice(roles)
        ios = [io]
        more = [j for j in sorted(self.declared[k][INPUT]) if j != io]
        if more and chance(self.src, 0.3):
            ios.append(self.src.choice(more))  # the same buffer as two inputs is fine (D16)
        step = self._execute(k, inputs=ios)
        if chance(self.src, 0.25):
            step["dims"] = "current"
        return step

    def _wrong_role(self) -> dict | None:
        # Undeclared io indexes, preferring the direction a declared role has on the same model (so that a
        # driver checking the model and direction but not the index lets it through).
        near, far = [], []
        for k, g in enumerate(self.generated):
            main = g.model.main
            for direction, count in ((INPUT, len(main.input_indexes)), (OUTPUT, len(main.output_indexes))):
                declared = self.declared[k][direction]
                for io in range(count):
                    if io not in declared:
                        (near if declared else far).append((k, direction, io))
        if not near and not far:
            return None
        k, direction, io = self.src.choice(near if near and (not far or chance(self.src, 0.8)) else far)
        ios = {"inputs": [io]} if direction == INPUT else {"outputs": [io]}
        return self._execute(k, misuse="wrong_role", **ios)  # type: ignore[arg-type]

    def _declared_use(self) -> tuple[int, dict]:
        roles = [(k, INPUT, io) for k, io in self._roles(INPUT)] + [(k, OUTPUT, io) for k, io in self._roles(OUTPUT)]
        k, direction, io = self.src.choice(roles)
        return k, ({"inputs": [io]} if direction == INPUT else {"outputs": [io]})

    def _wrong_model(self) -> dict:
        k, ios = self._declared_use()
        return self._execute(k, misuse="wrong_model", prepared="other", **ios)  # type: ignore[arg-type]

    def _bad_token(self) -> dict:
        k, ios = self._declared_use()
        token = self.src.choice(tuple(BAD_TOKENS))
        return self._execute(k, misuse="bad_token", token=token, **ios)  # type: ignore[arg-type]

    def _input_and_output(self) -> dict | None:
        both = [k for k, d in enumerate(self.declared) if d[INPUT] and d[OUTPUT]]
        if both:
            k = self.src.choice(both)
            i, o = self.src.choice(sorted(self.declared[k][INPUT])), self.src.choice(sorted(self.declared[k][OUTPUT]))
        else:
            k, ios = self._declared_use()
            main = self.generated[k].model.main
            if not main.input_indexes or not main.output_indexes:
                return None
            i = ios.get("inputs", [self.src.integer(0, len(main.input_indexes) - 1)])[0]
            o = ios.get("outputs", [self.src.integer(0, len(main.output_indexes) - 1)])[0]
        return self._execute(k, inputs=[i], outputs=[o], misuse="input_and_output")

    def _two_outputs(self) -> dict | None:
        many = [k for k, g in enumerate(self.generated) if len(g.model.main.output_indexes) > 1]
        if not many:
            return None
        k = self.src.choice(many)
        count = len(self.generated[k].model.main.output_indexes)
        declared = sorted(self.declared[k][OUTPUT])
        first = self.src.choice(declared) if declared else 0
        second = self.src.choice([j for j in range(count) if j != first])
        return self._execute(k, outputs=[first, second], misuse="two_outputs")

    def _conflicting_dims(self) -> dict | None:
        if self.scalar:
            return None
        k, ios = self._declared_use()
        if self.dims:
            dims = conflicting_dimensions(self.src, self.dims)
        elif "inputs" in ios and self.predicted:
            dims = conflicting_dimensions(self.src, list(self.predicted))
        else:
            return None
        return self._execute(k, misuse="conflicting_dims", dims=dims, **ios)  # type: ignore[arg-type]


def _copy_from_step(source: Source, dims: list[int], value: np.ndarray, delta: int) -> dict:
    return {
        "op": "copyFrom",
        "kind": source.choice(COPY_KINDS),
        "dims": [int(d) for d in dims],
        "value": to_json_values(value),
        "sizeDelta": int(delta),
    }


def _made_up(source: Source, operand_type: int, dims: Sequence[int]) -> np.ndarray:
    """Values of an operand type for a copy, when no role's value fits the buffer."""
    dtype = numpy_dtype(operand_type)
    count = math.prod(dims)
    if dtype.kind == "f":
        width = 16 if dtype.itemsize == 2 else 32
        flat = np.array([source.floats(-4.0, 4.0, width=width) for _ in range(count)], dtype=dtype)
    elif dtype.kind == "b":
        flat = np.array([source.boolean() for _ in range(count)], dtype=dtype)
    else:
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
        flat = np.array([source.integer(lo, hi) for _ in range(count)], dtype=dtype)
    return flat.reshape(tuple(dims))

"""Requests in the case format: the request and its pool layout as JSON <-> a hal.Request over real shared memory.

Request JSON: {"pools": [pool...], "inputs": [argument...], "outputs": [argument...]}. A pool is a pool description
(harness.case.pools) or {"modelPool": k}: the model's own pool k, the same memory object (so that an output can be
placed over a CONSTANT_REFERENCE value, V34). An argument is {"hasNoValue", "poolIndex", "offset", "length",
"dimensions"}; an argument without value may carry a location all the same (V36).

`build_request` turns the JSON into a LiveRequest: the hal.Request over new shared memory holding the input values,
the memories it created, and the reader of its outputs. `simple_request_json` lays a request out the plain way (inputs
in one pool, outputs in another), for tests and benchmarks that start from arrays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.case._shared_bytes import Placed, disagreement
from harness.case.pools import pool_from_json, pool_to_json
from harness.hal import DataLocation, Model, Request, RequestArgument, numpy_dtype
from harness.hal.memory import Memory, MemoryMapError

# Arguments laid out by simple_request_json start at multiples of this.
_ALIGN = 8


class RequestFormatError(ValueError):
    """A hal.Request that the case format cannot describe (a pool that is not shared memory)."""


class ConflictingInputsError(ValueError):
    """Two input arguments of a case share bytes of a pool but give them different values: what the driver reads
    there is not what the case says the inputs are, so no reference result holds for it."""


def _check_shared_input_bytes(placed: Sequence[Placed], out_args: Sequence[RequestArgument]) -> None:
    """Raise ConflictingInputsError when two written inputs share bytes of a pool with different values there. A
    request that also places an output over an input is left alone: the driver must refuse it (V34), whatever
    its inputs hold, and a mutation that moves an input onto an output may reach a neighbouring input."""
    outputs = [(a.location.pool_index, a.location.offset, a.location.length) for a in out_args if not a.has_no_value]
    for _, pool, offset, raw in placed:
        if any(pool == p and offset < start + length and start < offset + len(raw) for p, start, length in outputs):
            return
    for n, (k, pool, offset, raw) in enumerate(placed):
        found = disagreement(placed[:n], pool, offset, raw)
        if found is not None:
            j, lo, hi = found
            raise ConflictingInputsError(
                f"inputs {j} and {k} share bytes {lo}..{hi - 1} of pool {pool} with different values there"
            )


def argument_to_json(arg: RequestArgument) -> dict:
    """A request argument as case-format JSON."""
    loc = arg.location
    return {
        "hasNoValue": bool(arg.has_no_value),
        "poolIndex": int(loc.pool_index),
        "offset": int(loc.offset),
        "length": int(loc.length),
        "dimensions": [int(d) for d in arg.dimensions],
    }


def argument_from_json(d: dict) -> RequestArgument:
    """The request argument a JSON argument describes (its location kept even without a value)."""
    location = DataLocation(int(d.get("poolIndex", 0)), int(d.get("offset", 0)), int(d.get("length", 0)))
    return RequestArgument(bool(d.get("hasNoValue", False)), location, [int(x) for x in d.get("dimensions", [])])


def request_to_json(request: Request, model: Model) -> dict:
    """A hal.Request over shared memory as request JSON (pool contents are not kept: inputs come from the case)."""
    pools = []
    for pool in request.pools:
        shared = next((k for k, p in enumerate(model.pools) if p is pool), None)
        if shared is not None:
            pools.append({"modelPool": shared})
        elif isinstance(pool, Memory):
            pools.append(pool_to_json(pool))
        else:
            raise RequestFormatError(f"request pool {pool!r} has no case-format description")
    return {
        "pools": pools,
        "inputs": [argument_to_json(a) for a in request.inputs],
        "outputs": [argument_to_json(a) for a in request.outputs],
    }


@dataclass(eq=False)
class LiveRequest:
    """A hal.Request over shared memory holding the input values, and the memories it created (never the model's).

    Executions may write anywhere in the pools: `rewind` puts them back as built before a request is used again.
    """

    request: Request
    memories: list[Memory]  # the memories it created, in pool order (a model's pool it shares is not one)
    output_dtypes: list[np.dtype]
    descriptions: list[dict] = field(repr=False)  # the request JSON's pools
    contents: list[bytes] = field(repr=False)  # each created memory's bytes as built
    used: bool = False

    def rewind(self) -> None:
        """Make the pools as built again if an execution may have written them since."""
        if self.used:
            self.restore()
        self.used = True

    def restore(self) -> None:
        """Write every created memory back to its content as built (zeros with the input values in place)."""
        for memory, raw in zip(self.memories, self.contents):
            if raw:
                memory.write(0, raw)

    def renew(self, pool: int) -> Memory:
        """Put a new memory, with the content as built, in the place of request pool `pool`; the old one is returned
        (the caller closes it). A pool the request shares with the model cannot be renewed."""
        if "modelPool" in self.descriptions[pool]:
            raise ValueError(f"request pool {pool} is the model's own")
        k = sum(1 for d in self.descriptions[:pool] if "modelPool" not in d)
        new = pool_from_json(self.descriptions[pool])
        if self.contents[k]:
            new.write(0, self.contents[k])
        old, self.memories[k] = self.memories[k], new
        self.request.pools[pool] = new
        return old

    def read_output(self, k: int, dimensions: Sequence[int]) -> np.ndarray | None:
        """Output k as an array of these (actual) dimensions; None when its buffer is too small for them."""
        arg = self.request.outputs[k]
        dtype = self.output_dtypes[k]
        nbytes = math.prod(dimensions) * dtype.itemsize
        if nbytes > arg.location.length:
            return None
        raw = self.request.pools[arg.location.pool_index].read(arg.location.offset, nbytes)  # type: ignore[union-attr]
        return np.frombuffer(raw, dtype=dtype).reshape(tuple(dimensions)).copy()

    def read_outputs(self, dimensions: Sequence[Sequence[int]]) -> list[np.ndarray | None]:
        """Every output, each of its actual dimensions (None where the buffer is too small)."""
        return [self.read_output(k, dims) for k, dims in enumerate(dimensions)]

    def close(self) -> None:
        """Close the memories this request created (never the model's own pools)."""
        for memory in self.memories:
            memory.close()

    def __enter__(self) -> LiveRequest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_request(request_json: dict, model: Model, inputs: Sequence[np.ndarray | None]) -> LiveRequest:
    """The request a case describes over new shared memory, holding its input values.

    An invalid request may place an input where it cannot be written (outside its pool, in a missing pool): its
    pools are then left zero-filled, which changes nothing for a driver that must reject it anyway. Inputs that all
    landed may share bytes only where they agree (ConflictingInputsError otherwise).
    """
    descriptions = request_json["pools"]
    shared = {i: int(d["modelPool"]) for i, d in enumerate(descriptions) if "modelPool" in d}
    memories: list[Memory] = []
    try:
        for i, d in enumerate(descriptions):
            if i not in shared:
                memories.append(pool_from_json(d))
        own = iter(memories)
        pools: list[object] = [model.pools[shared[i]] if i in shared else next(own) for i in range(len(descriptions))]
        in_args = [argument_from_json(d) for d in request_json["inputs"]]
        out_args = [argument_from_json(d) for d in request_json["outputs"]]
        main = model.main
        placed: list[Placed] = []
        try:
            for k, (arg, value, index) in enumerate(zip(in_args, inputs, main.input_indexes)):
                if arg.has_no_value or value is None or arg.location.pool_index in shared:
                    continue
                raw = np.asarray(value, dtype=numpy_dtype(main.operands[index].type)).tobytes()
                location = arg.location
                pools[location.pool_index].write(location.offset, raw)  # type: ignore[attr-defined]
                placed.append((k, location.pool_index, location.offset, raw))
        except (ValueError, IndexError, MemoryMapError):
            for memory in memories:
                if memory.size:
                    memory.write(0, bytes(memory.size))
        else:
            # Only a request whose inputs all landed can hold values the driver must compute with.
            _check_shared_input_bytes(placed, out_args)
    except BaseException:
        for memory in memories:
            memory.close()
        raise
    dtypes = [numpy_dtype(main.operands[i].type) for i in main.output_indexes]
    contents = [m.read(0, m.size) if m.size else b"" for m in memories]
    request = Request(inputs=in_args, outputs=out_args, pools=pools)
    return LiveRequest(request, memories, dtypes, list(descriptions), contents)


def simple_request(
    model: Model,
    inputs: Sequence[np.ndarray | None],
    output_sizes: Sequence[int],
    *,
    kind: str = "ashmem",
    output_dims: Sequence[Sequence[int]] | None = None,
) -> LiveRequest:
    """The request simple_request_json lays out, over new shared memory holding the inputs."""
    layout = simple_request_json(model, inputs, output_sizes, kind=kind, output_dims=output_dims)
    return build_request(layout, model, inputs)


def simple_request_json(
    model: Model,
    inputs: Sequence[np.ndarray | None],
    output_sizes: Sequence[int],
    *,
    kind: str = "ashmem",
    output_dims: Sequence[Sequence[int]] | None = None,
) -> dict:
    """Request JSON with the inputs in pool 0 and `output_sizes[k]` bytes for output k in pool 1.

    An input of None is passed with hasNoValue. Inputs carry their dimensions; outputs carry `output_dims` when
    given, else none.
    """
    main = model.main
    if len(inputs) != len(main.input_indexes) or len(output_sizes) != len(main.output_indexes):
        raise ValueError(
            f"model has {len(main.input_indexes)} inputs and {len(main.output_indexes)} outputs; "
            f"got {len(inputs)} and {len(output_sizes)}"
        )
    in_args, offset = [], 0
    for value, index in zip(inputs, main.input_indexes):
        if value is None:
            in_args.append({"hasNoValue": True, "poolIndex": 0, "offset": 0, "length": 0, "dimensions": []})
            continue
        nbytes = int(np.asarray(value, dtype=numpy_dtype(main.operands[index].type)).nbytes)
        dims = [int(d) for d in np.shape(value)]
        in_args.append({"hasNoValue": False, "poolIndex": 0, "offset": offset, "length": nbytes, "dimensions": dims})
        offset = -(-(offset + nbytes) // _ALIGN) * _ALIGN
    in_size, out_args, offset = max(offset, 1), [], 0
    for k, size in enumerate(output_sizes):
        dims = [int(d) for d in output_dims[k]] if output_dims is not None else []
        out_args.append(
            {"hasNoValue": False, "poolIndex": 1, "offset": offset, "length": int(size), "dimensions": dims}
        )
        offset = -(-(offset + int(size)) // _ALIGN) * _ALIGN
    pools = [{"kind": kind, "size": in_size}, {"kind": kind, "size": max(offset, 1)}]
    return {"pools": pools, "inputs": in_args, "outputs": out_args}

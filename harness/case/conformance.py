"""The public conformance vectors (shared/conformance/*.jsonl.gz) as ConformanceCase objects."""

from __future__ import annotations

import copy
import gzip
import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.case.json_model import model_from_json
from harness.case.values import pack, unpack
from harness.hal import Model, OperandType, numpy_dtype

ENV_VAR = "NNFUZZ_CONFORMANCE_DIR"
VECTOR_GLOB = "aosp_cts_*.jsonl.gz"
# Every line starts with the case name; reading it lets a name filter skip parsing the rest.
_NAME_PREFIX = re.compile(r'^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"')


class ConformanceDataMissing(FileNotFoundError):
    """The conformance vectors are not where they are looked for."""


@dataclass
class Example:
    """One set of input values and expected outputs, in the operands' stored dtypes.

    An input is None when the example omits it (an optional input given no value: hasNoValue in the request).
    """

    inputs: list[np.ndarray | None] = field(default_factory=list)
    outputs: list[np.ndarray | None] = field(default_factory=list)


@dataclass
class ConformanceCase:
    """One conformance vector: a model, its examples and how to compare its outputs."""

    name: str
    spec: str
    version: str
    introduced_in: str | None
    source: str
    model_json: dict
    model: Model
    dynamic_output_shape: bool
    ignored_outputs: list[int]
    multinomial_tolerance: float | None
    examples: list[Example]


def conformance_dir() -> Path:
    """Where the vectors are: $NNFUZZ_CONFORMANCE_DIR, else shared/conformance next to the repository."""
    env = os.environ.get(ENV_VAR)
    path = Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "conformance"
    path = path.resolve()
    if not path.is_dir():
        raise ConformanceDataMissing(
            f"conformance vectors not found at {path}; set {ENV_VAR} to the folder holding {VECTOR_GLOB}"
        )
    return path


def vector_files() -> list[Path]:
    """The vector files, sorted by name (HAL version order)."""
    files = sorted(conformance_dir().glob(VECTOR_GLOB))
    if not files:
        raise ConformanceDataMissing(f"no {VECTOR_GLOB} files in {conformance_dir()}")
    return files


def normalize_vector_model(model_json: dict) -> dict:
    """The vector's model as the HAL sees it: channelQuant kept only on per-channel operands.

    The vectors record the per-channel scales of a bias (TENSOR_INT32) too, but a HAL model carries extraParams
    only on TENSOR_QUANT8_SYMM_PER_CHANNEL operands, as the public test harnesses build it.
    """
    if not any(
        "channelQuant" in o and o["type"] != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL.name
        for o in model_json["operands"]
    ):
        return model_json
    model_json = copy.copy(model_json)
    model_json["operands"] = [
        {k: v for k, v in o.items() if k != "channelQuant"}
        if "channelQuant" in o and o["type"] != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL.name
        else o
        for o in model_json["operands"]
    ]
    return model_json


def _example_array(arg: dict, operand_type: int) -> np.ndarray | None:
    dims = [int(x) for x in arg["dimensions"]]
    values = arg["value"]
    if math.prod(dims) == 0:
        # Zero-sized tensors: the vectors put a placeholder value there.
        return np.zeros(dims, dtype=numpy_dtype(operand_type))
    if not values:
        return None
    return unpack(pack(values, operand_type), operand_type, dims)


def case_from_json(d: dict, source: str = "") -> ConformanceCase:
    """A ConformanceCase from one parsed vector line."""
    model_json = normalize_vector_model(d["model"])
    model = model_from_json(model_json)
    in_types = [model.main.operands[i].type for i in model.main.input_indexes]
    out_types = [model.main.operands[i].type for i in model.main.output_indexes]
    examples = [
        Example(
            inputs=[_example_array(a, t) for a, t in zip(e["inputs"], in_types, strict=True)],
            outputs=[_example_array(a, t) for a, t in zip(e["outputs"], out_types, strict=True)],
        )
        for e in d["examples"]
    ]
    return ConformanceCase(
        name=d["name"],
        spec=d["spec"],
        version=d["version"],
        introduced_in=d.get("introducedIn"),
        source=source,
        model_json=model_json,
        model=model,
        dynamic_output_shape=bool(d.get("dynamicOutputShape", False)),
        ignored_outputs=[int(i) for i in d.get("ignoredOutputs", [])],
        multinomial_tolerance=d.get("multinomialTolerance"),
        examples=examples,
    )


def iter_vector_json(
    paths: Iterable[Path] | None = None, *, names: Iterable[str] | None = None
) -> Iterator[tuple[dict, str]]:
    """(parsed line, file name) for every vector, optionally only those whose name is in `names`."""
    if isinstance(names, str):
        names = [names]
    wanted = set(names) if names is not None else None
    for path in vector_files() if paths is None else [Path(p) for p in paths]:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                if wanted is not None:
                    m = _NAME_PREFIX.match(line)
                    if m is not None and json.loads(f'"{m.group(1)}"') not in wanted:
                        continue
                d = json.loads(line)
                if wanted is not None and d["name"] not in wanted:
                    continue
                yield d, path.name


def load_vectors(
    paths: Iterable[Path] | None = None, *, names: Iterable[str] | None = None
) -> Iterator[ConformanceCase]:
    """Every conformance case (all vector files unless `paths`), optionally only those named in `names`."""
    for d, source in iter_vector_json(paths, names=names):
        yield case_from_json(d, source)

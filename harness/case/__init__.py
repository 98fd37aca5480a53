"""The case format: models and values as readable JSON (the conformance vectors' schema, extended)."""

from harness.case.conformance import (
    ConformanceCase,
    ConformanceDataMissing,
    Example,
    conformance_dir,
    load_vectors,
    vector_files,
)
from harness.case.files import dump_case, load_case
from harness.case.json_model import CaseFormatError, model_from_json, model_to_json, pools_from_json
from harness.case.pools import pool_from_json, pool_to_json
from harness.case.values import constant_value, normalize_values, pack, to_json_values, unpack

__all__ = [
    "CaseFormatError",
    "ConformanceCase",
    "ConformanceDataMissing",
    "Example",
    "conformance_dir",
    "constant_value",
    "dump_case",
    "load_case",
    "load_vectors",
    "model_from_json",
    "model_to_json",
    "normalize_values",
    "pack",
    "pool_from_json",
    "pool_to_json",
    "pools_from_json",
    "to_json_values",
    "unpack",
    "vector_files",
]

"""LiteRT's translation rules: the table (a RuleTable, driver_under_test.backends._rules) every rule module
registers into with `rule`, and `declare_unsupported` for the operations LiteRT's builtins cannot take.
"""

from __future__ import annotations

from driver_under_test.backends._rules import Rule, RuleTable
from driver_under_test.backends.litert._graph import TENSOR_TYPES, UNMAPPED_TYPES

TABLE = RuleTable(
    format="TFLite",
    type_names=TENSOR_TYPES,
    unmapped=UNMAPPED_TYPES,
    constant_because="it becomes a builtin option or shapes the translation",
)
RULES = TABLE.rules
UNSUPPORTED = TABLE.unsupported  # operation -> why it cannot be mapped
rule = TABLE.rule
declare_unsupported = TABLE.declare_unsupported

__all__ = ["RULES", "TABLE", "UNSUPPORTED", "Rule", "declare_unsupported", "rule"]

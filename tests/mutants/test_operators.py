"""Each mutation operator makes the change it names, at the sites it names, and leaves the rest of the text alone."""

from __future__ import annotations

import pytest

from harness.mutants.operators import OPERATOR_NAMES, OPERATORS, apply, edits

# Per operator: a module, and every mutated module the operator makes of it (the operators' own table, in words).
CASES = {
    "compare_boundary": ("ok = a < b and c >= d\n", {"ok = a <= b and c >= d\n", "ok = a < b and c > d\n"}),
    "compare_negate": (
        "x = a == b or c is not None or k in d\n",
        {
            "x = a != b or c is not None or k in d\n",
            "x = a == b or c is None or k in d\n",
            "x = a == b or c is not None or k not in d\n",
        },
    ),
    "add_sub": ("y = (a + b) - c\ny += 2\n", {"y = (a - b) - c\ny += 2\n", "y = (a + b) + c\ny += 2\n",
                                                "y = (a + b) - c\ny -= 2\n"}),
    "mul_div": ("z = a * b // c / d\n", {"z = a // b // c / d\n", "z = a * b * c / d\n", "z = a * b // c * d\n"}),
    "bit_and_or": ("m = a & b | c\n", {"m = a | b | c\n", "m = a & b & c\n"}),
    "and_or": ("if a and (b or c):\n    pass\n", {"if a or (b or c):\n    pass\n", "if a and (b and c):\n    pass\n"}),
    "number_shift": ("n = f(3, True)\n", {"n = f(4, True)\n", "n = f(2, True)\n"}),
    "true_false": ("n = f(3, True)\n", {"n = f(3, False)\n"}),
    "drop_not": ("if not (a and b):\n    pass\n", {"if (a and b):\n    pass\n"}),
    "drop_raise": (
        "if bad:\n    raise ValueError(\n        'no'\n    )  # why\nx = 1\n",
        {"if bad:\n    pass  # why\nx = 1\n"},
    ),
}


def test_every_operator_has_a_case() -> None:
    assert sorted(CASES) == sorted(OPERATOR_NAMES)


@pytest.mark.parametrize("name", OPERATOR_NAMES)
def test_each_operator_makes_exactly_its_changes(name: str) -> None:
    source, expected = CASES[name]
    [operator] = [op for op in OPERATORS if op.name == name]
    found = edits(source, (operator,))
    assert {apply(source, e) for e in found} == expected
    assert len(found) == len(expected)
    assert all(e.operator == name for e in found)


def test_an_edit_knows_its_line_column_and_text() -> None:
    source = "def f(a):\n    return a  < 'é' or a > 2\n"
    [edit] = [e for e in edits(source) if e.operator == "compare_boundary" and e.before == ">"]
    # A character column, though é takes two bytes.
    assert (edit.line, edit.col, edit.before, edit.after) == (2, 25, ">", ">=")
    assert apply(source, edit) == "def f(a):\n    return a  < 'é' or a >= 2\n"


def test_comments_between_operands_are_not_taken_for_operators() -> None:
    source = "x = (a  # a < b\n     + b)\n"
    [edit] = [e for e in edits(source) if e.operator == "add_sub"]
    assert apply(source, edit) == "x = (a  # a < b\n     - b)\n"


def test_annotations_f_strings_and_type_checking_blocks_are_not_mutated() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    LIMIT = 3\n"
        "def f(a: Annotated[int, 1] = 2) -> Literal[5]:\n"
        "    b: Literal[7] = 1\n"
        "    return f'{a + 1}'\n"
    )
    assert sorted((e.line, e.before, e.after) for e in edits(source)) == [
        (4, "2", "1"),
        (4, "2", "3"),
        (5, "1", "0"),
        (5, "1", "2"),
    ]

"""The mutation operators: per kind of small semantic change, where in a module's syntax tree it applies and the
text edit it makes there.

An edit replaces a span of the module's source bytes and nothing else, so a mutant's diff is the change alone
(formatting, comments and the rest of the file stay as they were).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    """One mutation of a module: the bytes [start, end) of its source become `after`."""

    operator: str
    start: int
    end: int
    before: str
    after: str
    line: int
    col: int


class Text:
    """A module's source as bytes, addressed by the (line, UTF-8 byte column) positions of its syntax tree."""

    def __init__(self, source: str) -> None:
        self.data = source.encode()
        self._line_starts = [0]
        for line in self.data.splitlines(keepends=True):
            self._line_starts.append(self._line_starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        """The byte offset of a (1-based line, byte column) position."""
        return self._line_starts[line - 1] + col

    def start(self, node: ast.AST) -> int:
        """Where a node's text begins."""
        return self.offset(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> int:
        """Where a node's text ends."""
        return self.offset(node.end_lineno, node.end_col_offset)

    def span(self, start: int, end: int) -> str:
        """The text of a byte span."""
        return self.data[start:end].decode()

    def position(self, offset: int) -> tuple[int, int]:
        """The (1-based line, character column) of a byte offset."""
        line = bisect.bisect_right(self._line_starts, offset)
        return line, len(self.data[self._line_starts[line - 1] : offset].decode())


Sites = Callable[[ast.AST, Text], Iterator[tuple[int, int, str]]]  # (start, end, replacement) per mutation


@dataclass(frozen=True)
class Operator:
    """A kind of mutation: its name, what it changes, and its sites in a node."""

    name: str
    description: str
    sites: Sites


# -- finding an operator's token between two operands ---------------------------------------------------------

_COMMENT = re.compile(rb"#[^\n]*")


def _token(text: Text, start: int, end: int, pattern: str) -> tuple[int, int] | None:
    """The span of the first match of `pattern` in the bytes [start, end) (comments ignored)."""
    gap = _COMMENT.sub(lambda m: b" " * len(m.group()), text.data[start:end])
    match = re.search(pattern.encode(), gap)
    return None if match is None else (start + match.start(), start + match.end())


# Each operator token as a pattern that matches it and none of its longer neighbours (< but not <= or <<).
_TOKENS: dict[type, tuple[str, str]] = {
    ast.Lt: ("<", r"<(?![=<])"),
    ast.LtE: ("<=", r"<="),
    ast.Gt: (">", r">(?![=>])"),
    ast.GtE: (">=", r">="),
    ast.Eq: ("==", r"=="),
    ast.NotEq: ("!=", r"!="),
    ast.Is: ("is", r"\bis\b(?!\s+not\b)"),
    ast.IsNot: ("is not", r"\bis\s+not\b"),
    ast.In: ("in", r"(?<!not )\bin\b"),
    ast.NotIn: ("not in", r"\bnot\s+in\b"),
    ast.Add: ("+", r"\+"),
    ast.Sub: ("-", r"-"),
    ast.Mult: ("*", r"(?<!\*)\*(?!\*)"),
    ast.Div: ("/", r"(?<!/)/(?!/)"),
    ast.FloorDiv: ("//", r"//"),
    ast.BitAnd: ("&", r"&"),
    ast.BitOr: ("|", r"\|"),
    ast.And: ("and", r"\band\b"),
    ast.Or: ("or", r"\bor\b"),
}


def _swap(table: dict[type, type]) -> Sites:
    """Sites replacing an operator token by its partner in `table`: comparisons, binary, augmented and boolean."""

    def sites(node: ast.AST, text: Text) -> Iterator[tuple[int, int, str]]:
        pairs: list[tuple[ast.AST, ast.AST, type]] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            pairs = [(operands[i], operands[i + 1], type(op)) for i, op in enumerate(node.ops)]
        elif isinstance(node, ast.BinOp):
            pairs = [(node.left, node.right, type(node.op))]
        elif isinstance(node, ast.AugAssign):
            pairs = [(node.target, node.value, type(node.op))]
        elif isinstance(node, ast.BoolOp):
            pairs = [(a, b, type(node.op)) for a, b in zip(node.values, node.values[1:])]
        for left, right, op in pairs:
            if op not in table:
                continue
            span = _token(text, text.end(left), text.start(right), _TOKENS[op][1])
            if span is not None:
                # In an augmented assignment the token matched is the operator before "=", which stays.
                yield span[0], span[1], _TOKENS[table[op]][0]
    return sites


def _number_shift(node: ast.AST, text: Text) -> Iterator[tuple[int, int, str]]:
    """An integer literal moved by one, up and down (booleans are not numbers here)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        for delta in (1, -1):
            yield text.start(node), text.end(node), str(node.value + delta)


def _true_false(node: ast.AST, text: Text) -> Iterator[tuple[int, int, str]]:
    """True and False swapped."""
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        yield text.start(node), text.end(node), str(not node.value)


def _drop_not(node: ast.AST, text: Text) -> Iterator[tuple[int, int, str]]:
    """A `not` removed (its operand binds tighter than `not`, so nothing else changes meaning)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        span = _token(text, text.start(node), text.start(node.operand), r"^not\s*")
        if span is not None:
            yield span[0], span[1], ""


def _drop_raise(node: ast.AST, text: Text) -> Iterator[tuple[int, int, str]]:
    """A raise statement replaced by `pass`: the error goes unreported and the code after it runs."""
    if isinstance(node, ast.Raise):
        yield text.start(node), text.end(node), "pass"


OPERATORS: tuple[Operator, ...] = (
    Operator(
        "compare_boundary",
        "a comparison moved across its boundary: < and <=, > and >=",
        _swap({ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}),
    ),
    Operator(
        "compare_negate",
        "a comparison negated: == and !=, is and is not, in and not in",
        _swap(
            {
                ast.Eq: ast.NotEq,
                ast.NotEq: ast.Eq,
                ast.Is: ast.IsNot,
                ast.IsNot: ast.Is,
                ast.In: ast.NotIn,
                ast.NotIn: ast.In,
            }
        ),
    ),
    Operator("add_sub", "+ and - swapped (also += and -=)", _swap({ast.Add: ast.Sub, ast.Sub: ast.Add})),
    Operator(
        "mul_div",
        "* and // swapped, / made * (also in augmented assignments)",
        _swap({ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult, ast.Div: ast.Mult}),
    ),
    Operator("bit_and_or", "& and | swapped", _swap({ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd})),
    Operator("and_or", "and and or swapped", _swap({ast.And: ast.Or, ast.Or: ast.And})),
    Operator("number_shift", "an integer literal moved by one, up or down", _number_shift),
    Operator("true_false", "True and False swapped", _true_false),
    Operator("drop_not", "a not removed", _drop_not),
    Operator("drop_raise", "a raise replaced by pass", _drop_raise),
)
OPERATOR_NAMES = tuple(op.name for op in OPERATORS)


def _skipped(tree: ast.Module) -> set[int]:
    """Ids of the nodes no mutation may touch: annotations (never evaluated under postponed evaluation), f-strings
    (their inner positions are unreliable before Python 3.12) and `if TYPE_CHECKING:` blocks (never run)."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.JoinedStr):
            roots.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            roots.extend(node.body)
    return {id(n) for root in roots for n in ast.walk(root)}


def edits(source: str, operators: tuple[Operator, ...] = OPERATORS) -> list[Edit]:
    """Every mutation the operators make in a module's source, in source order (then operator order)."""
    tree = ast.parse(source)
    text = Text(source)
    skipped = _skipped(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        for op in operators:
            for start, end, after in op.sites(node, text):
                line, col = text.position(start)
                found.append(Edit(op.name, start, end, text.span(start, end), after, line, col))
    return sorted(found, key=lambda e: (e.start, e.end, OPERATOR_NAMES.index(e.operator), e.after))


def apply(source: str, edit: Edit) -> str:
    """The module's source with one edit made."""
    data = source.encode()
    return (data[: edit.start] + edit.after.encode() + data[edit.end :]).decode()

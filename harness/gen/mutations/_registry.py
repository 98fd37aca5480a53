"""The mutation registry: one Mutation per form of each V rule, registered by a decorator; duplicates are errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.gen.source import GenerationRejected, Source

Kind = Literal["model", "request", "fenced_request", "preparation"]
KINDS: tuple[str, ...] = ("model", "request", "fenced_request", "preparation")


@dataclass(frozen=True)
class Mutation:
    """One way of breaking one V rule, and where the reference validator is expected to report it.

    `apply` takes (model, source) for "model", (model, request, source) for "request" and "fenced_request",
    (source) for "preparation"; it returns a new subject and never modifies its arguments.

    `shown_as` are the V numbers of the validator violations that report the breakage itself (default: `v`;
    V15/V16 have no rule of their own and surface as the count or dataflow rules they break). `also` are V
    numbers (None: a rule without one) that may be reported next to it because breaking this rule necessarily
    breaks them too. `operations` are the operation types whose operands the mutation breaks (empty: it needs no
    particular operation), so that a generator can make subjects that offer it a place.
    """

    name: str
    v: str
    kind: Kind
    description: str
    apply: Callable[..., Any]
    shown_as: frozenset[str] = field(default_factory=frozenset)
    also: frozenset[str | None] = field(default_factory=frozenset)
    operations: frozenset[int] = field(default_factory=frozenset)

    @property
    def reported_as(self) -> frozenset[str]:
        """V numbers of which at least one validator violation must carry."""
        return self.shown_as or frozenset({self.v})

    @property
    def allowed(self) -> frozenset[str | None]:
        """Every V number a validator violation of the mutated subject may carry."""
        return self.reported_as | self.also


MUTATIONS: dict[str, Mutation] = {}


def register(m: Mutation) -> Mutation:
    """Add a mutation to the registry; a second mutation of the same name is an error."""
    if m.kind not in KINDS:
        raise ValueError(f"mutation {m.name}: unknown kind {m.kind!r}")
    if m.name in MUTATIONS:
        raise RuntimeError(f"mutation {m.name} registered twice")
    MUTATIONS[m.name] = m
    return m


def mutation(
    name: str,
    v: str,
    kind: Kind,
    description: str,
    *,
    shown_as: frozenset[str] | set[str] = frozenset(),
    also: frozenset[str | None] | set[str | None] = frozenset(),
    operations: frozenset[int] | set[int] = frozenset(),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering `fn` as the apply function of a new mutation."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        register(Mutation(name, v, kind, description, fn, frozenset(shown_as), frozenset(also), frozenset(operations)))
        return fn

    return wrap


def mutations_for(kind: Kind | str) -> list[Mutation]:
    """Every registered mutation of one kind, in registration order."""
    if kind not in KINDS:
        raise ValueError(f"unknown mutation kind {kind!r}; expected one of {KINDS}")
    return [m for m in MUTATIONS.values() if m.kind == kind]


def operation_mutations() -> list[Mutation]:
    """The model mutations that break a rule of particular operations, in registration order."""
    return [m for m in mutations_for("model") if m.operations]


def apply_mutation(m: Mutation, subject: Any, source: Source) -> Any:
    """Run one mutation on a subject: a Model, a (Model, Request) pair, or anything (ignored) for preparation."""
    if m.kind == "model":
        return m.apply(subject, source)
    if m.kind == "preparation":
        return m.apply(source)
    model, request = subject
    return m.apply(model, request, source)


def apply_random(kind: Kind | str, subject: Any, source: Source) -> tuple[Mutation, Any]:
    """A mutation of this kind chosen by the source, applied; other ones are tried while the chosen one rejects.

    The rule is drawn first and its form second, so that rules with many forms are not drawn more often.
    GenerationRejected when no mutation of this kind applies to the subject.
    """
    forms_by_rule, sorted_rules = _rule_table(kind)
    by_rule: dict[str, list[Mutation]] = {}  # the forms not tried yet, of the rules drawn so far
    # Dropping a rule from the sorted list keeps it equal to sorting what is left (a stable sort).
    rules = list(sorted_rules)
    while rules:
        rule = source.choice(rules)
        forms = by_rule.get(rule)
        if forms is None:
            forms = by_rule[rule] = list(forms_by_rule[rule])
        m = forms.pop(source.integer(0, len(forms) - 1))
        if not forms:
            del by_rule[rule]
            rules.remove(rule)
        try:
            return m, apply_mutation(m, subject, source)
        except GenerationRejected:
            continue
    raise GenerationRejected(f"no {kind} mutation applies to this subject")


# Per kind: the registry size it was built at, each rule's forms in registration order, and the rules in V order.
_RULE_TABLES: dict[str, tuple[int, dict[str, tuple[Mutation, ...]], tuple[str, ...]]] = {}


def _rule_table(kind: Kind | str) -> tuple[dict[str, tuple[Mutation, ...]], tuple[str, ...]]:
    """The mutations of a kind grouped by rule, and the rules in V order (rebuilt when the registry grows)."""
    table = _RULE_TABLES.get(kind)
    if table is None or table[0] != len(MUTATIONS):
        grouped: dict[str, list[Mutation]] = {}
        for m in mutations_for(kind):
            grouped.setdefault(m.v, []).append(m)
        forms = {rule: tuple(ms) for rule, ms in grouped.items()}
        table = _RULE_TABLES[kind] = (len(MUTATIONS), forms, tuple(sorted(forms, key=_rule_order)))
    return table[1], table[2]


def _rule_order(v: str) -> int:
    return int(v.lstrip("V"))

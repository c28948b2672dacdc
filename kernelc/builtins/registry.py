"""The builtin table: one declarative entry per builtin name.

An entry has overloads chosen by argument count. Each overload has a type rule (argument
types in, coerced argument types and result type out) and either nothing else, in which
case it becomes an IR `CALL` that every backend lowers from its own table, or an `expand`
function that builds the result from other IR ops (so no backend needs to know it).
The same table feeds the front end, the backends' completeness test and the docs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kernelc import types as T
from kernelc.ir.nodes import OpCode, Value

Signature = tuple[tuple[T.Type, ...], T.Type]
TypeRule = Callable[[tuple[T.Type, ...], tuple[bool, ...]], Signature]


class Emitter(Protocol):
    """What an `expand` function may do: emit IR ops into the current block."""

    def op(self, opcode: OpCode, args: Sequence[Value], type: T.Type, attr: Any = None) -> Value:
        ...

    def const(self, value: Any, type: T.Type) -> Value:
        ...

    def call(self, name: str, args: Sequence[Value]) -> Value:
        ...


@dataclass(frozen=True)
class Expansion:
    """An expand function's result; `writeback` maps argument positions to new values
    (the random-number builtins advance their state argument in place, as in Warp)."""

    value: Value | None
    writeback: dict[int, Value] = field(default_factory=dict)


@dataclass(frozen=True)
class Overload:
    params: tuple[str, ...]
    rule: TypeRule
    expand: Callable[..., Value | Expansion] | None = None
    # The backends lower a primitive overload from their own tables, keyed by `key`.
    key: str | None = None


@dataclass(frozen=True)
class Builtin:
    name: str
    group: str
    doc: str
    overloads: tuple[Overload, ...]
    # Internal builtins serve kernelc's own library funcs: not exported, not documented.
    public: bool = True
    # A builtin that also takes a type (`quat_identity(dtype=kc.float64)`): the front end's
    # special form of this name lowers its calls, and `host` computes it on the host.
    special: str | None = None
    host: Callable[..., Any] | None = None

    @property
    def _kc_special(self) -> str | None:
        return self.special

    def overload_for(self, nargs: int) -> Overload | None:
        for ov in self.overloads:
            if len(ov.params) == nargs:
                return ov
        return None

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """Positional and keyword arguments (Warp's parameter names) in parameter order."""
        if not kwargs:
            return list(args)
        overload = self.overload_for(len(args) + len(kwargs))
        if overload is None:  # a wrong count: the caller reports it with the signatures
            return [*args, *kwargs.values()]
        rest = overload.params[len(args):]
        for name in kwargs:
            if name not in rest:
                how = ("got two values for argument" if name in overload.params
                       else "got an unexpected keyword argument")
                raise TypeError(f"{self.name}() {how} '{name}'")
        return [*args, *(kwargs[n] for n in rest)]

    def signatures(self) -> list[str]:
        return [f"{self.name}({', '.join(ov.params)})" for ov in self.overloads]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """On the host: the builtin's kernel meaning, compiled once per argument types."""
        if self.host is not None:
            return self.host(*args, **kwargs)
        from kernelc.runtime.host_call import call_builtin

        return call_builtin(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<kernelc builtin {self.name}>"


BUILTINS: dict[str, Builtin] = {}


def register(
    name: str, group: str, doc: str, *overloads: Overload, public: bool = True,
    special: str | None = None, host: Callable[..., Any] | None = None,
) -> Builtin:
    if name in BUILTINS:
        raise ValueError(f"builtin {name} registered twice")
    entry = Builtin(name, group, doc, tuple(overloads), public, special, host)
    BUILTINS[name] = entry
    return entry


def primitive_keys() -> set[str]:
    """Every key a backend must lower."""
    return {ov.key for b in BUILTINS.values() for ov in b.overloads if ov.key}


# ---- type-rule helpers -------------------------------------------------------------------


def unify(types: Sequence[T.Type], weak: Sequence[bool]) -> T.Type:
    """The common type of operands: strongly typed ones must agree; bare literals adopt it."""
    strong = [t for t, w in zip(types, weak) if not w]
    if strong:
        first = strong[0]
        for t in strong[1:]:
            if t != first:
                raise TypeError(
                    f"operands have different types ({first!r} and {t!r}); "
                    f"cast one explicitly, e.g. {first!r}(x)"
                )
        for t, w in zip(types, weak):
            if w and isinstance(t, T.ScalarType) and isinstance(first, T.ScalarType):
                if t.is_float and not first.is_float:
                    raise TypeError(f"a float literal cannot be combined with {first!r}")
        return first
    # Only literals: a float among them makes everything float32, else the widest int.
    if any(isinstance(t, T.ScalarType) and t.is_float for t in types):
        return T.float32
    scalars = [t for t in types if isinstance(t, T.ScalarType)]
    return max(scalars, key=lambda t: t.bits) if len(scalars) == len(types) else types[0]


def _scalar(kinds: str, what: str) -> Callable[[T.Type], None]:
    def check(t: T.Type) -> None:
        ok = isinstance(t, T.ScalarType) and (
            ("f" in kinds and t.is_float) or ("i" in kinds and t.is_int)
            or ("b" in kinds and t.is_bool)
        )
        if not ok:
            raise TypeError(f"expected {what}, got {t!r}")

    return check


check_float = _scalar("f", "a float")
check_numeric = _scalar("fi", "an int or float")
check_int = _scalar("i", "an integer")


def same_rule(n: int, check: Callable[[T.Type], None], result: T.Type | None = None) -> TypeRule:
    """n operands of one common scalar type; the result has that type (or `result`)."""

    def rule(types: tuple[T.Type, ...], weak: tuple[bool, ...]) -> Signature:
        t = unify(types, weak)
        check(t)
        return (t,) * n, (result or t)

    return rule


def fixed_rule(params: Sequence[T.Type], result: T.Type) -> TypeRule:
    """Exact parameter types; bare literals convert to them."""

    def rule(types: tuple[T.Type, ...], weak: tuple[bool, ...]) -> Signature:
        for t, w, p in zip(types, weak, params):
            if t != p and not (w and isinstance(t, T.ScalarType) and not (t.is_float and not p.is_float)):
                raise TypeError(f"expected {p!r}, got {t!r}")
        return tuple(params), result

    return rule

"""Fields given by a value or a function instead of node values (Warp's `fem.UniformField`
and `fem.ImplicitField`).

A `UniformField` has the same value everywhere (zero gradient and divergence); an
`ImplicitField` calls a `@kc.func` at the sample's world position (or quadrature point
index), with further arguments taken from `values`, and optionally gradient and
divergence funcs with the same parameters.
"""

import hashlib
import types
from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.fem.domain import GeometryDomain
from kernelc.fem.field import FieldLike
from kernelc.fem.field_eval import FieldEval
from kernelc.fem.types import ElementKind
from kernelc.fem.valuetypes import value_algebra
from kernelc.frontend.decorators import Func


def _struct(name: str, members: dict[str, Any]) -> type:
    return kc.struct(type(name, (), {"__annotations__": dict(members)}))


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


# Generated funcs of uniform fields, by (value type, domain name).
_UNIFORM_EVALS: dict[tuple, FieldEval] = {}
_IMPLICIT_EVALS: dict[tuple, FieldEval] = {}  # by kind, domain and precision


class UniformField(FieldLike):
    """A field with the same value everywhere on a domain (Warp's `fem.UniformField`).

    Args:
        domain: The domain the field is defined on.
        value: The value: a scalar, vector or matrix of the geometry's scalar type.
    """

    def __init__(self, domain: GeometryDomain, value: Any) -> None:
        from kernelc.fem.integrand import value_type_of

        self.domain = domain
        self.dtype = value_type_of("value", None, value)
        self.value = value

    @property
    def value(self) -> Any:
        """The field's value."""
        return self._value

    @value.setter
    def value(self, value: Any) -> None:
        from kernelc.fem.integrand import value_type_of

        if "_value" in self.__dict__:  # a new value must keep the field's type (Warp's rule)
            new_type = value_type_of("value", None, value)
            if T.as_type(new_type) != T.as_type(self.dtype):
                raise TypeError(f"UniformField value type must remain "
                                f"{kc.types.type_repr(self.dtype)}, got "
                                f"{kc.types.type_repr(new_type)}")
        t = T.as_type(self.dtype)
        self._value = self.dtype(value) if isinstance(t, T.ScalarType) else value

    @property
    def geometry(self) -> Any:
        """The domain's geometry."""
        return self.domain.geometry

    @property
    def element_kind(self) -> ElementKind:
        return self.domain.element_kind

    @property
    def degree(self) -> int:
        """0: a constant."""
        return 0

    @property
    def kind_name(self) -> str:
        return f"Uniform_{T.as_type(self.dtype)!r}"

    @property
    def name(self) -> str:
        return f"{self.kind_name}_{self.domain.name}"

    def trace(self) -> "UniformField":
        """The same value on the sides of the geometry."""
        from kernelc.fem.domain import Sides

        if self.element_kind == ElementKind.SIDE:
            raise RuntimeError("Trace only available for field defined on cell elements")
        return UniformField(Sides(self.geometry), self._value)

    def evaluator(self, domain: GeometryDomain) -> FieldEval:
        key = (repr(T.as_type(self.dtype)), domain.name)
        if key not in _UNIFORM_EVALS:
            _UNIFORM_EVALS[key] = self._make_evaluator(domain)
        return _UNIFORM_EVALS[key]

    def _make_evaluator(self, domain: GeometryDomain) -> FieldEval:
        t = T.as_type(self.dtype)
        algebra = value_algebra(t, domain.geometry.cell_dimension)
        Arg = _struct(f"UniformFieldArg_{_ident(repr(t))}_{_ident(domain.name)}",
                      {"elt": domain.ElementArg, "value": self.dtype})
        grad_zero, div_zero = algebra.grad_zero, algebra.div_zero

        @kc.func
        def value(arg: Arg, s: Any):
            return arg.value

        @kc.func
        def gradient(arg: Arg, s: Any):
            return grad_zero()

        @kc.func
        def divergence(arg: Arg, s: Any):
            return div_zero()

        grad = gradient if grad_zero is not None else None
        div = divergence if div_zero is not None else None
        ops = {"inner": value, "outer": value, "grad": grad, "grad_outer": grad, "div": div,
               "div_outer": div}
        return FieldEval(Arg, ops, domain.geometry.scalar_type, algebra.grad_type, t)

    def fill_arg(self, arg: Any, domain: GeometryDomain, device: Any) -> None:
        arg.elt = domain.element_arg_value(device)
        arg.value = self._value


class ImplicitField(FieldLike):
    """A field computed by a `@kc.func` of the world position (Warp's `fem.ImplicitField`).

    Args:
        domain: The domain the field is defined on.
        func: A `@kc.func` whose first parameter is the position (a vector of the
            geometry's dimension, or `typing.Any`) or a quadrature point index (an int); its other
            parameters are taken from `values`.
        values: The other arguments of `func`, by name.
        grad_func: Optional func with the same parameters, giving the gradient.
        div_func: Optional func with the same parameters, giving the divergence.
        degree: Degree hint for choosing quadrature orders.

    Raises:
        ValueError: `func` is not a `@kc.func`, or its first parameter neither a position
            nor an int.
    """

    def __init__(self, domain: GeometryDomain, func: Any, values: dict[str, Any] | None = None,
                 grad_func: Any = None, div_func: Any = None, degree: int = 0) -> None:
        if not isinstance(func, Func):
            raise ValueError("Implicit field function must be a kernelc func (decorated with "
                             "`kc.func`)")
        self.domain = domain
        self._func, self._grad_func, self._div_func = func, grad_func, div_func
        self._degree = degree
        names = list(func.arg_names)
        annotations = func.annotations
        first = T.as_type(annotations.get(names[0])) if names else None
        dim = domain.geometry.dimension
        if (isinstance(first, T.VectorType) and first.length == dim) or annotations.get(
                names[0]) is Any:  # a generic position, as Warp matches it
            self._qp_based = False
        elif first == T.int32:
            self._qp_based = True
        else:
            raise ValueError(f"Implicit field function '{func.__name__}' must accept either a "
                             "position or a quadrature point index as its first argument")
        self._arg_names = names[1:]
        self._arg_types = {n: annotations[n] for n in self._arg_names}
        self.values = values or {}

    def trace(self) -> "ImplicitField":
        """The same func on the sides of the geometry (its values copied)."""
        from kernelc.fem.domain import Sides

        if self.element_kind == ElementKind.SIDE:
            raise RuntimeError("Trace only available for field defined on cell elements")
        return ImplicitField(Sides(self.geometry), self._func, dict(self._values),
                             self._grad_func, self._div_func, self._degree)

    @property
    def values(self) -> "FuncValues":
        """The extra arguments of the func, by name: `field.values.scale = v` (as on
        Warp's values struct) or `field.values["scale"] = v` changes one for later
        launches."""
        return self._values

    @values.setter
    def values(self, values: dict[str, Any]) -> None:
        unknown = set(values) - set(self._arg_names)
        if unknown:
            raise ValueError(f"Unknown arguments {sorted(unknown)} for implicit field "
                             f"function '{self._func.__name__}'")
        self._values = FuncValues(self._arg_names, self._func.__name__, values)

    @property
    def geometry(self) -> Any:
        """The domain's geometry."""
        return self.domain.geometry

    @property
    def element_kind(self) -> ElementKind:
        return self.domain.element_kind

    @property
    def degree(self) -> int:
        """The degree hint."""
        return self._degree

    @property
    def dtype(self) -> Any:
        """Unknown before compilation (None), as in Warp."""
        return None

    @property
    def kind_name(self) -> str:
        # Qualified names, not ids: stable from one process to the next (kernel disk cache).
        funcs = "_".join("None" if f is None else _func_identity(f)
                         for f in (self._func, self._grad_func, self._div_func))
        return f"Implicit_{self._qp_based}_{funcs}"

    def evaluator(self, domain: GeometryDomain) -> FieldEval:
        from kernelc.fem.integrand import generated_func

        # Shared by every implicit field of the same kind, as the integrands compiled for
        # that kind (by `kind_name`) take the struct types made here.
        key = (self.kind_name, domain.name, domain.geometry.scalar_type)
        cache = _IMPLICIT_EVALS
        if key in cache:
            return cache[key]
        Values = _struct(f"ImplicitValues_{_ident(self.kind_name)}", self._arg_types)
        Arg = _struct(f"ImplicitFieldArg_{_ident(self.kind_name)}_{_ident(domain.name)}",
                      {"elt": domain.ElementArg, "values": Values})
        first = "s.qp_index" if self._qp_based else "_position(arg.elt, s)"
        args = ", ".join([first, *(f"arg.values.{n}" for n in self._arg_names)])
        ops = {}
        for op, func in (("inner", self._func), ("grad", self._grad_func),
                         ("div", self._div_func)):
            if func is None:
                ops[op] = ops[f"{op}_outer"] = None
                continue
            text = f"def implicit_{op}(arg, s):\n    return _func({args})\n"
            names = {"_func": func, "_position": domain.element_position}
            ops[op] = generated_func(text, names, {"arg": Arg, "s": domain.sample_type},
                                     func.func)
            ops["outer" if op == "inner" else f"{op}_outer"] = ops[op]
        found = FieldEval(Arg, ops, domain.geometry.scalar_type, None, None)
        cache[key] = found
        return found

    def fill_arg(self, arg: Any, domain: GeometryDomain, device: Any) -> None:
        arg.elt = domain.element_arg_value(device)
        values = self.evaluator(domain).Arg().values
        for name in self._arg_names:
            if name not in self._values:
                raise ValueError(f"Missing value '{name}' for implicit field function "
                                 f"'{self._func.__name__}'")
            value = self._values[name]
            t = T.as_type(self._arg_types[name])
            if isinstance(t, T.ScalarType) and not isinstance(value, kc.array):
                value = self._arg_types[name](value)
            setattr(values, name, value)
        arg.values = values


def _func_identity(f: Func) -> str:
    """A func's qualified name, plus a digest of what it closes over (funcs made by one
    factory differ by their closures: `kc.static(values[i])` of a captured list). Plain
    values, funcs and modules are digested by what stays the same from one process to the
    next (repr, names); other objects by identity."""
    name = f"{f.func.__module__}.{f.func.__qualname__}"
    cells = getattr(f.func, "__closure__", None) or ()
    if not cells:
        return name
    parts = []
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, Func):
            parts.append(_func_identity(value))
        elif isinstance(value, types.ModuleType):
            parts.append(value.__name__)
        else:
            parts.append(repr(value) if _plain(value) else f"{type(value).__name__}@{id(value)}")
    digest = hashlib.blake2b("|".join(parts).encode(), digest_size=6).hexdigest()
    return f"{name}_{digest}"


def _plain(value: Any) -> bool:
    if isinstance(value, (bool, int, float, str, type(None))):
        return True
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return False


class FuncValues(dict):
    """The extra arguments of an implicit field's func: a dict of its parameters that also
    reads and sets them as attributes (Warp's values struct), refusing other names."""

    def __init__(self, names: Any, func_name: str, values: dict[str, Any]) -> None:
        super().__init__(values)
        object.__setattr__(self, "_names", tuple(names))
        object.__setattr__(self, "_func_name", func_name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"implicit field function '{self._func_name}' has no value "
                                 f"'{name}'") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __setitem__(self, name: str, value: Any) -> None:
        if name not in self._names:
            raise AttributeError(f"implicit field function '{self._func_name}' has no "
                                 f"parameter '{name}'")
        super().__setitem__(name, value)


__all__ = ["ImplicitField", "UniformField"]

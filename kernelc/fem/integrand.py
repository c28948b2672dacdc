"""`@fem.integrand`: Python functions over samples, fields and domains, turned into kernelc
funcs specialised for the concrete fields of each `integrate` / `interpolate` call.

An integrand such as

    @fem.integrand
    def diffusion(s: fem.Sample, u: fem.Field, v: fem.Field, nu: float):
        return nu * wp.dot(fem.grad(u, s), fem.grad(v, s))

is compiled by rewriting its AST (parsed from its own file, with its own line numbers):
each field or domain parameter becomes a struct parameter of a type generated for that
field (`field_eval.py`), and each operator call on it (`u(s)`, `fem.grad(u, s)`,
`fem.normal(domain, s)`) becomes a call of the func generated for that operator;
`fem.scalar_type(u)` and `fem.degree(u)` become constants. The rewritten tree is wrapped
in a kernelc `Func` whose source is the user's file, so compile errors anywhere in the
integrand point at the user's line and column. A second generated func (the "call")
unpacks two structs, one holding every field and one every value, into the integrand's
parameters; the assembly kernels call it.
"""

import ast
import copy
import hashlib
import inspect
import typing
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.fem.domain_index import domain_arg_type
from kernelc.fem.rewrite import Rewriter
from kernelc.fem.types import Domain, Field, Sample, Sample_f64
from kernelc.frontend.decorators import Func
from kernelc.frontend.source import Source, read_source


class Integrand:
    """A function to integrate or interpolate (Warp's `warp.fem.Integrand`)."""

    is_fem_integrand = True  # how the rewriter recognises calls of other integrands

    def __init__(self, func: Any, kernel_options: dict[str, Any] | None = None) -> None:
        self.func = func
        self.name = f"{func.__module__}.{func.__qualname__}"
        self.module = func.__module__
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        self.argspec = inspect.getfullargspec(func)
        self.kernel_options = dict(kernel_options or {})
        self._specializations: dict[tuple, Specialization] = {}
        self._bodies: dict[tuple, Func] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"integrand '{self.__name__}' can only be evaluated through "
                           "fem.integrate or fem.interpolate")

    def __repr__(self) -> str:
        return f"<kernelc.fem.integrand {self.name}>"

    @property
    def annotations(self) -> dict[str, Any]:
        """The parameters' annotations, evaluated."""
        try:
            return inspect.get_annotations(self.func, eval_str=True)
        except Exception as err:
            raise KernelError(f"cannot evaluate the annotations of integrand '{self.__name__}': "
                              f"{err}", kernel=self.__name__) from None

    def parameter_roles(self) -> dict[str, str]:
        """Each parameter's role: "sample", "field", "domain" or "value"."""
        roles = {}
        annotations = self.annotations
        for name in self.argspec.args:
            ann = annotations.get(name)
            if ann in (Sample, Sample_f64):
                roles[name] = "sample"
            elif ann is Field:
                roles[name] = "field"
            elif ann is Domain:
                roles[name] = "domain"
            else:
                roles[name] = "value"
        return roles

    def specialize(self, fields: dict[str, Any], domain: Any, value_types: dict[str, Any]
                   ) -> "Specialization":
        """The compiled form of this integrand for these fields (name -> field), domain and
        value types (name -> kernelc type); made once per combination of kinds."""
        roles = self.parameter_roles()
        key = (tuple((n, fields[n].kind_name) for n in self.argspec.args if roles[n] == "field"),
               domain.name, tuple((n, repr(T.as_type(t))) for n, t in value_types.items()))
        found = self._specializations.get(key)
        if found is None:
            found = _specialize(self, roles, fields, domain, value_types, key)
            self._specializations[key] = found
        return found

    def body(self, fields: dict[str, Any], domain: Any, value_types: dict[str, Any]) -> Func:
        """The integrand rewritten for these fields and domain, as a kernelc func taking the
        integrand's own parameters (field parameters as their structs); made once per
        combination of kinds. Integrands calling this one call it."""
        roles = self.parameter_roles()
        key = (tuple((n, fields[n].kind_name) for n in self.argspec.args if roles[n] == "field"),
               domain.name, tuple((n, repr(T.as_type(t))) for n, t in value_types.items()))
        if key not in self._bodies:
            self._bodies[key] = _make_body(self, roles, fields, domain, value_types)[0]
        return self._bodies[key]


def integrand(func: Any = None, kernel_options: dict[str, Any] | None = None) -> Any:
    """Decorator making a function an integrand (`@fem.integrand` or
    `@fem.integrand(kernel_options={...})`), as in Warp."""
    if func is not None:
        return Integrand(func)
    return lambda f: Integrand(f, kernel_options)


@dataclass(frozen=True)
class Specialization:
    """An integrand compiled for one set of field kinds."""

    call: Func  # (sample, fields: Fields, values: Values) -> the integrand's value
    Fields: type  # struct: one member per field or domain parameter
    Values: type  # struct: one member per value parameter
    sample_type: Any
    kernels: dict = field(default_factory=dict, compare=False)  # assembly kernels, by kind


class _GeneratedFunc(Func):
    """A kernelc func whose source tree, annotations and names are given, not read."""

    def __init__(self, func: Any, source: Source, annotations: dict[str, Any],
                 arg_names: tuple[str, ...]) -> None:
        super().__init__(func)
        self.__name__ = source.tree.name
        # Func reads these lazily from `func`; a generated func has them already.
        self.__dict__["source"] = source
        self.__dict__["annotations"] = annotations
        self.__dict__["arg_names"] = arg_names
        self.__dict__["defaults"] = {}


def _struct(name: str, members: dict[str, Any]) -> type:
    return kc.struct(type(name, (), {"__annotations__": dict(members)}))


def _make_body(itg: Integrand, roles: dict[str, str], fields: dict[str, Any], domain: Any,
               value_types: dict[str, Any]) -> tuple[Func, dict[str, Any]]:
    """The integrand's tree rewritten for these fields, as a func, and its annotations."""
    source = read_source(itg.func)
    sample_type = domain.sample_type
    annotations: dict[str, Any] = {}
    targets: dict[str, Any] = {}  # parameter -> FieldEval or domain
    for name in itg.argspec.args:
        role = roles[name]
        if role == "sample":
            annotations[name] = sample_type
        elif role == "field":
            targets[name] = fields[name].evaluator(domain)
            annotations[name] = targets[name].Arg
        elif role == "domain":
            targets[name] = domain
            annotations[name] = domain_arg_type(domain)  # element argument and indices
        else:
            annotations[name] = value_types[name]
    rewriter = Rewriter(itg, source, roles, targets, fields, domain)
    tree = rewriter.visit(copy.deepcopy(source.tree))
    tree.decorator_list = []
    tree.returns = None
    ast.fix_missing_locations(tree)
    rewritten = Source(source.name, source.file, source.first_line, source.indent, tree,
                       {**source.globals, **rewriter.bindings}, source.closure)
    return _GeneratedFunc(itg.func, rewritten, annotations, tuple(itg.argspec.args)), annotations


def _specialize(itg: Integrand, roles: dict[str, str], fields: dict[str, Any], domain: Any,
                value_types: dict[str, Any], key: tuple) -> Specialization:
    body, annotations = _make_body(itg, roles, fields, domain, value_types)
    source = read_source(itg.func)
    sample_type = domain.sample_type

    # Struct names are part of the compiled code's identity: keep them the same from one
    # process to the next, so that the kernel cache on disk finds them.
    digest = hashlib.sha1(repr((itg.name, key)).encode()).hexdigest()[:12]
    suffix = "".join(c if c.isalnum() else "_" for c in f"{itg.__name__}_{digest}")
    Fields = _struct(f"Fields_{suffix}", {n: annotations[n] for n in itg.argspec.args
                                          if roles[n] in ("field", "domain")})
    Values = _struct(f"Values_{suffix}", {n: annotations[n] for n in itg.argspec.args
                                          if roles[n] == "value"})
    call = _make_call(itg, source, roles, body, sample_type, Fields, Values)
    return Specialization(call, Fields, Values, sample_type)


def _make_call(itg: Integrand, source: Source, roles: dict[str, str], body: Func,
               sample_type: Any, Fields: type, Values: type) -> Func:
    """(s, fields, values) -> body(...): the integrand's parameters unpacked from structs."""
    args = []
    for name in itg.argspec.args:
        role = roles[name]
        args.append("s" if role == "sample" else
                    f"values.{name}" if role == "value" else f"fields.{name}")
    name = f"{itg.__name__}_call"
    call = f"_fem_integrand({', '.join(args)})"
    # An integrand without a value (one that writes to arrays, for `interpolate`) is called
    # as a statement: `return` of it would have no value.
    statement = call if _returns_nothing(source.tree) else f"return {call}"
    text = f"def {name}(s, fields, values):\n    {statement}\n"
    return generated_func(text, {"_fem_integrand": body},
                          {"s": sample_type, "fields": Fields, "values": Values}, itg.func)


def value_error(itg: Integrand, err: KernelError) -> KernelError:
    """`err`, raised by an assembly kernel where it uses the integrand's value, moved to the
    integrand: at its first `return` of a value (or at its `def` when it returns none)."""
    source = read_source(itg.func)
    returns = [node for node in ast.walk(source.tree)
               if isinstance(node, ast.Return) and node.value is not None]
    if not returns:
        return KernelError(f"integrand '{itg.__name__}' returns no value, but its value is "
                           "needed here (fem.integrate, or fem.interpolate into a field or "
                           "an array)", source.loc(source.tree), itg.__name__)
    first = min(returns, key=lambda node: (node.lineno, node.col_offset))
    return KernelError(f"{err.message} (the value of integrand '{itg.__name__}')",
                       source.loc(first.value), itg.__name__)


def _returns_nothing(tree: ast.FunctionDef) -> bool:
    """Whether no `return` of the function (outside nested definitions) has a value."""
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            return False
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                 ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(node))
    return True


def generated_func(text: str, names: dict[str, Any], annotations: dict[str, Any],
                   anchor: Any) -> Func:
    """A kernelc func from Python source `text` (one `def`), resolving `names`, with the
    given parameter annotations; its code points at the `def` line of the Python
    function `anchor` (so errors inside it name the user's function)."""
    source = read_source(anchor)
    tree = ast.parse(text).body[0]
    for node in ast.walk(tree):
        if hasattr(node, "lineno"):
            node.lineno = node.end_lineno = source.tree.lineno
            node.col_offset = node.end_col_offset = 0
    generated = Source(tree.name, source.file, source.first_line, source.indent, tree, names, {})
    return _GeneratedFunc(anchor, generated, annotations, tuple(annotations))


def value_type_of(name: str, annotation: Any, value: Any) -> Any:
    """The kernelc type of a value argument: its annotation, or for `typing.Any` (or no
    annotation) the type of the value passed."""
    if annotation is not None and annotation is not typing.Any:
        if T.as_type(annotation) is None:
            raise KernelError(f"integrand parameter '{name}' has no kernelc type ({annotation!r})")
        return annotation
    if isinstance(value, np.generic):  # kc.float64(2.0) and friends are NumPy scalars
        return T.from_numpy_dtype(value.dtype)
    if isinstance(value, bool):
        return kc.bool
    if isinstance(value, int):
        return kc.int32
    if isinstance(value, float):
        return kc.float32
    if isinstance(value, kc.array):
        return kc.array(dtype=value.dtype, ndim=value.ndim)
    t = getattr(value, "_kc_type", None)  # vectors, matrices and struct instances
    if not isinstance(t, T.Type):
        raise KernelError(f"cannot pass {value!r} as integrand value '{name}'")
    return t

"""Calls the front end handles itself: they shape the IR rather than compute a value.

A host-side object opts in by carrying `_kc_special = "<name>"` (so `kc.zeros` is the host
allocator outside kernels and a local fixed-size array inside them).
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend import local_arrays
from kernelc.frontend.builder import Val
from kernelc.frontend.local_arrays import LocalArray
from kernelc.frontend.lower_expr import PyObj, TupleVal
from kernelc.frontend.static_eval import static_key
from kernelc.ir import nodes as ir


def special(name: str):
    """Marks a public host function as a special form inside kernels."""

    def mark(fn):
        fn._kc_special = name
        return fn

    return mark


def kernel_only(name: str, doc: str):
    """The host object of special form `name`: documented, and an error when called outside
    a kernel (forms whose meaning needs a kernel, such as queries of device structures)."""

    def stub(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"kernelc.{name}() can only be called inside a kernel")

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = doc
    return special(name)(stub)


@special("tid")
def tid():
    """The current thread's index: an int for 1-d launches, a tuple for 2-d to 4-d."""
    raise RuntimeError("kernelc.tid() can only be called inside a kernel")


@special("static")
def static(expr: Any) -> Any:
    """Evaluates `expr` when the kernel is compiled (on the host it returns `expr`)."""
    return expr


@special("printf")
def printf(fmt: str, *args: Any) -> None:
    """C-style formatted printing from kernels (on the host, Python's % formatting)."""
    print(fmt % args, end="")


def _tid(lowerer, node: ast.Call):
    from kernelc.frontend.lower import TidRef

    if node.args or node.keywords:
        raise KernelError("tid() takes no arguments")
    return TidRef()


def _static(lowerer, node: ast.Call):
    if len(node.args) != 1 or node.keywords:
        raise KernelError("static() takes exactly one expression")
    src = lowerer.source
    key = static_key(node)
    if key in src.static_values:  # evaluated where the kernel was declared
        return lowerer.from_python(_usable(src.static_values[key]), node)
    scope = dict(src.globals)
    scope.update(src.closure)
    scope.update(_sized_locals(lowerer))
    scope.update(_constant_locals(lowerer))
    scope.update(lowerer.unrolled_values)
    try:
        code = compile(ast.Expression(node.args[0]), src.file, "eval")
        value = eval(code, scope)  # noqa: S307  (user code, evaluated at compile time by design)
    except Exception as err:
        raise KernelError(f"Error evaluating static expression: {err}. Make sure all "
                          f"variables used in the static expression are constant.") from None
    return lowerer.from_python(_usable(value), node)


def _usable(value: Any) -> Any:
    """`value`, if a static expression may give it: not None, not an array, not a struct
    holding an array (those cannot be made inside a kernel)."""
    if value is None:
        raise KernelError("Static expression returns an unsupported value: None is returned")
    where = _array_inside(value, type(value).__name__)
    if where is not None:
        message = "an array cannot be created inside kernels"
        if where != type(value).__name__:
            message = (f"the returned struct contains a data type that cannot be "
                       f"constructed inside kernels: {message} at {where}")
        raise KernelError(f"Static expression returns an unsupported value: {message}")
    return value


def _array_inside(value: Any, path: str) -> str | None:
    """The path to an array in `value` (itself, or a field of a struct instance); an
    array annotation, `kc.array(dtype=float)`, has no shape and is not one."""
    if isinstance(getattr(value, "_kc_type", None), T.ArrayType) and \
            getattr(value, "shape", None) is not None:
        return path
    st = getattr(type(value), "_kc_type", None)
    if isinstance(st, T.StructType):
        for name, t in st.fields:
            if isinstance(t, (T.ArrayType, T.StructType)):
                found = _array_inside(getattr(value, name, None), f"{path}.{name}")
                if found is not None:
                    return found
    return None


def _constant_locals(lowerer) -> dict[str, Any]:
    """Locals `kc.static` sees, as Warp's does: those holding a compile-time constant. Only
    names assigned once in the whole function qualify, so the value cannot be stale."""
    return {name: value for name, value in lowerer.first_consts.items()
            if name in lowerer.assigned_once}


class _Sized:
    """What `kc.static` sees of a local tuple, vector or matrix: its length (`len(t)`),
    which is known when compiling even though the values are not."""

    def __init__(self, name: str, length: int) -> None:
        self.name, self.length = name, length

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"<kernel local '{self.name}' of length {self.length}>"


def _sized_locals(lowerer) -> dict[str, Any]:
    from kernelc.frontend.tile_value import Tile

    out = {}
    for name, bound in lowerer.names.items():
        if isinstance(bound, TupleVal):
            out[name] = _Sized(name, len(bound.items))
            continue
        if isinstance(bound, Tile):  # len(t): its first dimension
            out[name] = _Sized(name, bound.shape[0])
            continue
        t = getattr(bound, "type", None)
        if isinstance(t, T.VectorType):
            out[name] = _Sized(name, t.length)
        elif isinstance(t, T.MatrixType):
            out[name] = _Sized(name, t.shape[0])
    return out


_PRINTF_CODES = {
    "int8": "%d", "int16": "%d", "int32": "%d", "int64": "%lld", "uint8": "%u", "uint16": "%u",
    "uint32": "%u", "uint64": "%llu", "float16": "%g", "bfloat16": "%g", "float32": "%g",
    "float64": "%g", "bool": "%d",
}


# print() of more bools than this at once: each bool doubles the printf calls emitted.
_MAX_PRINTED_BOOLS = 4


def _print(lowerer, node: ast.Call):
    """print(...) as Warp writes it: scalars with printf codes, bools as True/False,
    vectors `1 2 3 ` and matrices row by row (see `format_value`), arguments joined by
    spaces. A bool's word picks the format string, so each bool is an `if`."""
    if node.keywords:
        raise KernelError("print() keyword arguments are not supported in kernels")
    if len(node.args) == 1 and not (isinstance(node.args[0], ast.Constant)
                                    and isinstance(node.args[0].value, str)):
        from kernelc.frontend.tile_value import Tile

        v = lowerer.visit(node.args[0])
        if isinstance(v, Tile):
            from kernelc.frontend.tile_print import print_tile

            print_tile(lowerer, v)
            return PyObj(None)
        with lowerer.bound_names([v]) as (name,):  # lowered once: print it from its name
            node = ast.copy_location(ast.Call(func=node.func, args=[name], keywords=[]), node)
            return _print_values(lowerer, node)
    return _print_values(lowerer, node)


def _print_values(lowerer, node: ast.Call):
    parts = []  # format pieces, or the bools whose words go there
    args = []
    for a in node.args:
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            parts.append(a.value.replace("%", "%%"))
            continue
        v = lowerer.as_val(lowerer.visit(a), a)
        if not isinstance(v.type, T.ScalarType):
            parts.append(lowerer.format_value(v, args))
            continue
        v = lowerer.coerce(v, v.type)
        if v.type == T.bool_:
            parts.append(v.value)
            continue
        parts.append(_PRINTF_CODES[v.type.name])
        args.append(v.value)
    if sum(not isinstance(p, str) for p in parts) > _MAX_PRINTED_BOOLS:
        raise KernelError(f"print() formats at most {_MAX_PRINTED_BOOLS} bools at once: "
                          f"split it, or use printf(\"%d\", b)")
    _emit_print(lowerer.b, parts, [], tuple(args))
    return PyObj(None)


def _emit_print(b, parts: list, done: list[str], args: tuple) -> None:
    for k in range(len(done), len(parts)):
        if not isinstance(parts[k], str):
            with b.region() as yes:
                _emit_print(b, parts, [*done, "True"], args)
            with b.region() as no:
                _emit_print(b, parts, [*done, "False"], args)
            b.append(ir.If(b.loc, parts[k], tuple(yes), tuple(no)))
            return
        done = [*done, parts[k]]
    b.append(ir.Print(b.loc, " ".join(done) + "\n", args))


def _printf(lowerer, node: ast.Call):
    if not node.args or not (isinstance(node.args[0], ast.Constant)
                             and isinstance(node.args[0].value, str)):
        raise KernelError("printf() needs a constant format string first")
    args = [lowerer.as_val(lowerer.visit(a), a) for a in node.args[1:]]
    for v in args:
        if not isinstance(v.type, T.ScalarType):
            raise KernelError(f"printf() cannot format a {v.type!r}")
    values = tuple(lowerer.coerce(v, v.type).value for v in args)
    lowerer.b.append(ir.Print(lowerer.b.loc, node.args[0].value, values))
    return PyObj(None)


def _zeros(lowerer, node: ast.Call):
    kwargs = {k.arg: k.value for k in node.keywords}
    shape_node = node.args[0] if node.args else kwargs.get("shape")
    dtype_node = node.args[1] if len(node.args) > 1 else kwargs.get("dtype")
    if shape_node is None or dtype_node is None:
        raise KernelError("a local array needs shape= and dtype=, e.g. zeros(shape=8, dtype=float)")
    shape = _static_shape(lowerer, shape_node)
    dtype = local_arrays.element_type(lowerer.eval_annotation(dtype_node), "a local array")
    return local_arrays.declare(lowerer, dtype, shape)


def _static_shape(lowerer, node: ast.expr) -> tuple[int, ...]:
    value = lowerer.visit(node)
    items = value.items if isinstance(value, TupleVal) else (value,)
    dims = tuple(v.const for v in items if isinstance(v, Val) and not isinstance(v.const, bool)
                 and isinstance(v.const, int))
    if len(dims) != len(items) or not dims:
        raise KernelError("the shape of a local array must be a constant int or tuple of ints "
                          "(known when compiling), e.g. zeros(shape=(2, 3), dtype=float)")
    return dims


def _len(lowerer, node: ast.Call):
    if len(node.args) != 1:
        raise KernelError("len() takes one argument")
    v = lowerer.visit(node.args[0])
    if isinstance(v, LocalArray):
        n = v.shape[0]
        return Val(lowerer.b.const(n, T.int32), const=n)
    if isinstance(v, TupleVal):  # a tuple's length is known when compiling, as in Warp
        n = len(v.items)
        return Val(lowerer.b.const(n, T.int32), const=n)
    v = lowerer.as_val(v, node)
    if isinstance(v.type, (T.ArrayType, T.IndexedArrayType)):
        return Val(lowerer.array_dim(v, 0))
    return lowerer.length_of(v)


def _type(lowerer, node: ast.Call):
    """`type(x)`: the kernelc type of `x`, to construct values of it (`type(v)(0.0)`)."""
    if len(node.args) != 1 or node.keywords:
        raise KernelError("type() takes one argument")
    return PyObj(lowerer.as_val(lowerer.visit(node.args[0]), node.args[0]).type)


def _range(lowerer, node: ast.Call):
    raise KernelError("range() can only be used as the iterable of a for loop")


def lower_query_while(lowerer, node: ast.For, slot: ir.Slot, step: Any,
                      extra: tuple = ()) -> None:
    """`for index in query: body` as a while loop over a query held in `slot`: the
    condition calls `step(query, index, *extra) -> (found, query, index)` and stores the
    advanced query and index back, so the loop uses the query up, as Warp's does."""
    b = lowerer.b
    lowerer.prepare_loop(node.body)
    index_slot = b.new_slot("index", T.int32)
    b.store(index_slot, b.const(0, T.int32))
    with b.region() as cond_body:
        args = [Val(b.load(slot)), Val(b.load(index_slot)), *extra]
        found, new_query, new_index = lowerer.call_func(step, args).items
        b.store(slot, new_query.value)
        b.store(index_slot, new_index.value)
    lowerer.loop_depth += 1
    with b.region() as body:
        lowerer.assign(node.target, Val(b.load(index_slot)), node.target)
        lowerer.lower_block(node.body)
    lowerer.loop_depth -= 1
    b.loc = lowerer.source.loc(node)
    b.append(ir.While(b.loc, tuple(cond_body), found.value, tuple(body)))


@cache
def _handlers(everything: bool = False):
    """The special forms by name: the core ones, or (`everything`) those of every module."""
    import importlib

    forms = {"tid": _tid, "static": _static, "print": _print, "printf": _printf, "zeros": _zeros,
             "len": _len, "range": _range, "type": _type}
    for module in _FORM_MODULES if everything else _FORM_MODULES[:2]:
        forms.update(importlib.import_module(module).SPECIAL_FORMS)
    return forms


# Each module has a SPECIAL_FORMS table: special-form name -> handler(lowerer, call node).
# The first two are imported with kernelc anyway; a later one is only imported when its
# names are used (its public objects live in it), which keeps it off the first launch.
_FORM_MODULES = ("kernelc.frontend.construct", "kernelc.frontend.hash_grid_forms",
                 "kernelc.frontend.linalg_forms", "kernelc.frontend.mesh_forms",
                 "kernelc.builtins.utility", "kernelc.frontend.sampling_forms",
                 "kernelc.frontend.tile_forms", "kernelc.frontend.tile_views",
                 "kernelc.frontend.tile_indexed", "kernelc.frontend.tile_linalg",
                 "kernelc.frontend.tile_fft_scan", "kernelc.frontend.tile_queries",
                 "kernelc.frontend.tile_arange", "kernelc.frontend.volume_forms")


_PYTHON_SPECIALS = {print: "print", len: "len", range: "range", type: "type"}


def lookup(obj: Any):
    name = getattr(obj, "_kc_special", None)
    if name is None:
        try:
            name = _PYTHON_SPECIALS.get(obj)
        except TypeError:
            return None
    if not name:
        return None
    handler = _handlers().get(name)
    if handler is None:  # a form of the module that defines the object, else of any module
        module = sys.modules.get(getattr(obj, "__module__", None) or "")
        handler = getattr(module, "SPECIAL_FORMS", {}).get(name) or _handlers(True).get(name)
    return handler

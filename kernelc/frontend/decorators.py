"""`@kernel` and `@func`: wrap a Python function; parse it only when first needed."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.frontend import unique_kernels
from kernelc.frontend.func_values import FunctionValueType, is_function_class
from kernelc.frontend.source import Source, read_source
from kernelc.ir import nodes as ir
from kernelc.types_ref import is_ref


class _SourceMixin:
    func: Callable
    # Funcs may give parameters default values (compile-time constants, as in Warp);
    # kernels may not.
    _defaults_allowed = False

    static_values: dict = {}

    @functools.cached_property
    def source(self) -> Source:
        found = read_source(self.func)
        if self.static_values:
            found = dataclasses.replace(found, static_values=self.static_values)
        return found

    def capture_statics(self) -> None:
        """Evaluates the `kc.static(...)` expressions that can be known at declaration, as
        Warp does (see static_eval.py)."""
        self.static_values = {}
        code = getattr(self.func, "__code__", None)
        if code is None or "static" not in code.co_names:
            return
        from kernelc.frontend.static_eval import declared_statics

        try:
            self.static_values = declared_statics(read_source(self.func))
        except KernelError:  # no source: reported when the kernel is compiled
            pass

    @functools.cached_property
    def annotations(self) -> dict[str, Any]:
        try:
            return inspect.get_annotations(self.func, eval_str=True)
        except Exception as err:
            raise KernelError(f"cannot evaluate the annotations of '{self.func.__name__}': {err}",
                              kernel=self.func.__name__) from None

    @functools.cached_property
    def arg_names(self) -> tuple[str, ...]:
        sig = inspect.signature(self.func)
        for p in sig.parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or (
                    p.default is not p.empty and not self._defaults_allowed):
                what = ("kernels take plain positional parameters (no default values)"
                        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                        else "kernels and funcs take plain positional parameters")
                raise KernelError(f"parameter '{p.name}': {what}",
                                  self._param_loc(p.name), self.func.__name__)
        return tuple(sig.parameters)

    @functools.cached_property
    def defaults(self) -> dict[str, Any]:
        """The default value of each parameter that has one."""
        sig = inspect.signature(self.func)
        return {p.name: p.default for p in sig.parameters.values() if p.default is not p.empty}

    def arg_annotation(self, name: str) -> Any:
        if name not in self.annotations:
            raise KernelError(f"parameter '{name}' needs a type annotation",
                              self._param_loc(name), self.func.__name__)
        return self.annotations[name]

    def _param_loc(self, name: str):
        for a in self.source.tree.args.args:
            if a.arg == name:
                return self.source.loc(a)
        return self.source.loc(self.source.tree)


class Func(_SourceMixin):
    """A function callable from kernels (`@kc.func`); compiled into each kernel that uses it.

    Parameters may have default values (compile-time constants) and calls may pass
    arguments by keyword, as in Warp.
    """

    _defaults_allowed = True

    def __init__(self, func: Callable):
        self.func = func
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        # Overloads: same-named funcs defined in one scope, resolved by argument types.
        self.variants: list[Func] = [self]
        self.capture_statics()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """On the host a func is its Python function; with overloads, the one whose
        annotations fit the arguments' kernelc types is called, as in kernels."""
        typed = [_host_arg(a) for a in args]
        typed_kw = {k: _host_arg(v) for k, v in kwargs.items()}
        if any(t is None for t in (*typed, *typed_kw.values())):
            self._check_function_args(args, kwargs)
            return self.func(*args, **kwargs)  # a value kernels cannot take: no choosing
        try:
            chosen, _, _ = self.resolve(typed, typed_kw, lambda name, v: _host_arg(v))
        except KernelError as err:
            from kernelc.errors import WarpCodegenTypeError

            raise WarpCodegenTypeError(err.message) from None
        return chosen.func(*args, **kwargs)

    def _check_function_args(self, args: tuple, kwargs: dict) -> None:
        """Refuses, on the host as in kernels, a `kc.Function` parameter given anything but
        a func or a builtin (a lambda, say)."""
        from kernelc.builtins.registry import Builtin
        from kernelc.errors import WarpCodegenTypeError

        if len(self.variants) != 1:
            return
        try:
            bound = inspect.signature(self.func).bind_partial(*args, **kwargs).arguments
        except TypeError:
            return  # Python reports it when calling
        for name, value in bound.items():
            if is_function_class(self.annotations.get(name)) and \
                    not isinstance(value, (Func, Builtin)):
                given = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
                raise WarpCodegenTypeError(  # Warp's wording first, then the reason
                    f"Error calling function '{self.__name__}', no overload found for "
                    f"arguments ({given}): argument '{name}' must be a @kc.func or a "
                    f"builtin, got {type(value).__name__}")

    def add_variant(self, other: Func) -> None:
        """Adds an overload; one with the same annotations replaces the earlier definition."""
        signature = _raw_signature(other.func)
        by_value = _by_value_signature(other)
        if by_value is not None and any(
                _by_value_signature(v) == by_value and _raw_signature(v.func) != signature
                for v in self.variants):
            raise RuntimeError(f"overloads of func '{self.__name__}' may not differ only in "
                               f"which parameters are kc.ref[T]")
        for i, v in enumerate(self.variants):
            if _raw_signature(v.func) == signature:
                self.variants[i] = other
                if i == 0:
                    self.func = other.func
                    self.static_values = other.static_values
                    self.__dict__.pop("source", None)
                    self.__dict__.pop("annotations", None)
                    self.__dict__.pop("arg_names", None)
                    self.__dict__.pop("defaults", None)
                if "<locals>" not in other.func.__qualname__:
                    _recompile_kernels()  # a module reloaded (or a notebook cell run again)
                return
        self.variants.append(other)

    def resolve(self, args: Sequence[Any], keywords: dict[str, Any] | None = None,
                default: Callable[[str, Any], Any] | None = None
                ) -> tuple[Func, list[Any], tuple[T.Type, ...]]:
        """The overload to call, the arguments in parameter order and the parameter types:
        an exact match first (concrete annotations before generic ones), then one that
        converts literal arguments. `args` and `keywords` hold lowered values (with `.type`
        and `.weak`); `default(name, value)` lowers a parameter's default value."""
        if len(self.variants) == 1:
            bound = self.bind(args, keywords or {}, default)
            return self, bound, self.specialize([a.type for a in bound],
                                                [a.weak for a in bound])
        ordered = sorted(self.variants, key=lambda v: v.is_generic)
        for loose in (False, True):
            for v in ordered:
                try:
                    bound = v.bind(args, keywords or {}, default)
                    weak = [a.weak and loose for a in bound]
                    return v, bound, v.specialize([a.type for a in bound], weak)
                except KernelError:
                    continue
        got = ", ".join([repr(a.type) for a in args] +
                        [f"{k}={a.type!r}" for k, a in (keywords or {}).items()])
        raise KernelError(f"no overload of func '{self.__name__}' accepts ({got})")

    def bind(self, args: Sequence[Any], keywords: dict[str, Any],
             default: Callable[[str, Any], Any] | None) -> list[Any]:
        """The arguments of a call in parameter order, defaults filled in."""
        names = self.arg_names
        if len(args) > len(names):
            raise KernelError(
                f"func '{self.__name__}' takes {len(names)} arguments ({len(args)} given)")
        bound = dict(zip(names, args))
        for name, value in keywords.items():
            if name not in names:
                raise KernelError(f"func '{self.__name__}' has no parameter '{name}'")
            if name in bound:
                raise KernelError(f"func '{self.__name__}' got two values for '{name}'")
            bound[name] = value
        missing = [n for n in names if n not in bound and n not in self.defaults]
        if missing:
            raise KernelError(f"func '{self.__name__}' takes {len(names)} arguments "
                              f"({len(bound)} given; missing {', '.join(map(repr, missing))})")
        return [bound[n] if n in bound else default(n, self.defaults[n]) for n in names]

    @property
    def is_generic(self) -> bool:
        anns = [self.annotations.get(n) for n in self.arg_names]
        anns = [a.dtype if is_ref(a) else a for a in anns]
        return any(a is typing.Any or _generic_array(a) for a in anns)

    def return_annotation(self) -> tuple[T.Type, ...] | None:
        ann = self.annotations.get("return", inspect.Signature.empty)
        if ann is inspect.Signature.empty:
            return None
        if ann is None:
            return ()
        items = typing.get_args(ann) if typing.get_origin(ann) is tuple else (ann,)
        types = tuple(T.as_type(a) for a in items)
        if any(t is None for t in types):
            raise KernelError(f"return annotation of '{self.__name__}' is not a kernelc type",
                              self.source.loc(self.source.tree), self.__name__)
        return types

    def specialize(self, arg_types: Sequence[T.Type], weak: Sequence[bool]) -> tuple[T.Type, ...]:
        """The parameter types for a call with these argument types (raises on mismatch)."""
        names = self.arg_names
        if len(arg_types) != len(names):
            raise KernelError(
                f"func '{self.__name__}' takes {len(names)} arguments ({len(arg_types)} given)"
            )
        out = []
        for name, t, w in zip(names, arg_types, weak):
            ann = self.arg_annotation(name)
            ann = ann.dtype if is_ref(ann) else ann
            if is_function_class(ann) or isinstance(t, FunctionValueType):
                if not (is_function_class(ann) and isinstance(t, FunctionValueType)) and \
                        ann is not typing.Any:
                    expected = "a kc.Function (a @kc.func or a builtin)" \
                        if is_function_class(ann) else repr(T.as_type(ann))
                    raise KernelError(f"argument '{name}' of '{self.__name__}' expects "
                                      f"{expected}, got {t!r}")
                out.append(t)
                continue
            want = None if ann is typing.Any else T.as_type(ann)
            if want is None and ann is not typing.Any:
                raise KernelError(f"parameter '{name}' of '{self.__name__}' has no kernelc type")
            want = _match(want, t)
            if want is None:
                expected = T.as_type(ann)
                if not (w and isinstance(expected, T.ScalarType) and isinstance(t, T.ScalarType)
                        and not (t.is_float and not expected.is_float)):
                    raise KernelError(
                        f"argument '{name}' of '{self.__name__}' expects {expected!r}, got {t!r}"
                    )
                want = expected
            out.append(want)
        return tuple(out)


@dataclasses.dataclass(frozen=True)
class _HostArg:
    """A host argument's kernelc type, for choosing a func overload on the host."""

    type: T.Type
    weak: bool


def _host_arg(value: Any) -> _HostArg | None:
    """The kernelc type of a host value (a Python number is a literal), or None."""
    from kernelc.builtins.registry import Builtin
    from kernelc.runtime.host_call import classify

    if isinstance(value, (Func, Builtin)):  # for a kc.Function parameter
        return _HostArg(FunctionValueType(value), False)

    try:
        return _HostArg(*classify("func", value))
    except TypeError:
        kc_type = getattr(value, "_kc_type", None)
        return _HostArg(kc_type, False) if isinstance(kc_type, T.Type) else None


def _match(want: T.Type | None, got: T.Type) -> T.Type | None:
    """`got` if it fits the (possibly generic) parameter type `want`, else None."""
    if want is None:
        return got
    if isinstance(want, (T.ArrayType, T.IndexedArrayType)) and type(got) is type(want):
        if want.ndim == got.ndim and (want.dtype is None or want.dtype == got.dtype):
            return got
        return None
    return got if want == got else None


class Kernel(_SourceMixin):
    """A kernel (`@kc.kernel`): launched over a grid of threads with `kc.launch`."""

    def __init__(self, func: Callable, key: str | None = None, module: Any = None,
                 options: dict[str, Any] | None = None,
                 module_options: dict[str, Any] | None = None):
        # `kc.Kernel(func, key=..., module=...)` as in Warp: one Python function made into
        # several kernels (one per key), possibly in another module.
        self.func = func
        self.key = key or f"{func.__module__}.{func.__qualname__}"
        self.__name__ = func.__name__
        self.__module__ = func.__module__  # as Warp's kernels (`get_module(k.__module__)`)
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        self.options = dict(options or {})
        from kernelc.runtime.module import Module, register_kernel

        if module == "unique":  # Warp's module="unique": a module of its own
            module = _unique_module_name(f"{func.__module__}.{func.__qualname__}")
            if module_options:  # kernels made alike but with other options stay apart
                module += f"[{_options_digest(module_options)}]"
        # (code run by `exec` without a `__name__` has no module: "__main__", as at the top)
        self.module = Module(getattr(module, "name", module) or func.__module__ or "__main__")
        if module_options:
            from kernelc.runtime.module import set_module_options

            set_module_options(module_options, self.module)
        # per argument-type tuple: the IR module and, per device kind, the compiled kernel
        self._ir: dict[tuple[T.Type, ...], ir.Module] = {}
        self.compiled: dict[Any, Any] = {}
        self.last_launch = None  # the runtime's memo of the latest CPU launch (LaunchMemo)
        if type(self) is Kernel:  # not the backward kernels made from it
            register_kernel(self)
            self.capture_statics()

    def forget_compiled(self) -> None:
        """Drops the IR, the compiled code and what was read from the Python source, so
        that the next use reads the source and its globals again."""
        self._ir.clear()
        self.compiled.clear()
        self.last_launch = None
        for cached in ("source", "annotations", "arg_names", "defaults", "param_types",
                       "_adjoint_kernel", "_adjoint_kernels"):
            self.__dict__.pop(cached, None)
        self.capture_statics()

    def __repr__(self) -> str:
        return f"<kernelc.kernel {self.key}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"kernel '{self.__name__}' must be run with kernelc.launch()")

    @functools.cached_property
    def param_types(self) -> tuple[T.Type | None, ...]:
        """Each parameter's declared type; None where it is generic (typing.Any)."""
        out = []
        for name in self.arg_names:
            ann = self.arg_annotation(name)
            if is_ref(ann):
                raise KernelError(f"parameter '{name}' is a kc.ref[T], which only funcs take; "
                                  f"a kernel receives its arguments from the launch",
                                  self._param_loc(name), self.__name__)
            if ann is typing.Any:
                out.append(None)
                continue
            t = T.as_type(ann)
            if t is None:
                raise KernelError(f"the annotation of parameter '{name}' is not a kernelc type",
                                  self._param_loc(name), self.__name__)
            out.append(t)
        return tuple(out)

    @property
    def is_generic(self) -> bool:
        return any(T.is_generic(t) for t in self.param_types)

    def specialize(self, arg_types: Sequence[T.Type]) -> tuple[T.Type, ...]:
        return tuple(got if want is None else (_match(want, got) or want)
                     for want, got in zip(self.param_types, arg_types))

    def get_ir(self, arg_types: tuple[T.Type, ...] | None = None, lanes: int = 1
               ) -> ir.Module:
        """The typed IR of this kernel (specialised for `arg_types` if it is generic); with
        `lanes` > 1, run once per CPU block of that many lanes (`ir/lanes.py`)."""
        from kernelc.frontend.lower import lower_kernel

        types = self.param_types if arg_types is None else tuple(arg_types)
        if any(T.is_generic(t) for t in types):
            raise KernelError(f"kernel '{self.__name__}' is generic: give arg_types",
                              kernel=self.__name__)
        key = types if lanes == 1 else (types, lanes)
        module = self._ir.get(key)
        if module is None:
            self._check_returns_nothing()
            module = lower_kernel(self.source, types, _symbol(self.__name__), lanes)
            self._ir[key] = module
        return module


    def lowered_now(self) -> list[ir.Module]:
        """The kernel lowered anew (not from the cache) for each specialisation known: the
        globals, constants and funcs it reads as they are now. Empty where it does not
        lower (an error is reported when it is launched)."""
        from kernelc.frontend.lower import lower_kernel

        types = [self.param_types] if not any(T.is_generic(t) for t in self.param_types) \
            else [k for k in self._ir if not (k and isinstance(k[-1], int))]  # no CPU blocks
        try:
            source = read_source(self.func)  # closure values as they are now
            if self.static_values:
                source = dataclasses.replace(source, static_values=self.static_values)
            return [lower_kernel(source, tuple(t), _symbol(self.__name__)) for t in types]
        except KernelError:
            return []

    def _check_returns_nothing(self) -> None:
        """A kernel may annotate its return only as None (`-> None`, `-> types.NoneType`)."""
        returned = self.annotations.get("return", None)
        if returned is not None and returned is not type(None):
            from kernelc.errors import WarpCodegenTypeError
            from kernelc.frontend.lower_stmt import KERNEL_RETURNS

            raise WarpCodegenTypeError(KERNEL_RETURNS, self.source.loc(self.source.tree.returns),
                                       self.__name__)


def _symbol(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def kernel(f: Callable | None = None, *, name: str | None = None,
           enable_backward: bool | None = None, module: Any = None,
           module_options: dict[str, Any] | None = None, **options: Any) -> Any:
    """Decorator making a Python function a kernel (`@kc.kernel` or `@kc.kernel(...)`).

    `name` (Warp's) sets the kernel's `key`, e.g. to make one Python function into two
    kernels; `enable_backward=False` (Warp's) leaves the kernel out of `Tape.backward`; `module`
    (a name, a Python module or "unique") says whose module options apply and which
    `Module` it belongs to; `module_options` (with `module="unique"` only, as in Warp) sets
    that module's options (`kc.set_module_options` keys); `reduce_mode=kc.ReduceMode.X`
    chooses how the kernel's contended atomics are done (see `kc.ReduceMode`).
    """
    from kernelc.config import ReduceMode

    mode = options.get("reduce_mode")
    if mode is not None and not isinstance(mode, ReduceMode):
        raise TypeError(f"reduce_mode must be a kc.ReduceMode, got {mode!r}")

    if enable_backward is not None:
        options["enable_backward"] = enable_backward

    if name is not None and not isinstance(name, str):
        raise TypeError(f"kernel name must be a str, got {type(name).__name__}")
    if name is not None and not (name.isascii() and name.isidentifier()):
        # Warp names the generated entry points after it, hence its rule.
        raise ValueError(f"kernel name {name!r} is not a valid C++ identifier")

    def wrap(fn: Callable) -> Kernel:
        if module_options is not None:
            _check_module_options(fn, module, module_options)
        key = unique_kernels.reuse_key(fn, name, options, module_options) \
            if module == "unique" else None
        found = unique_kernels.find(key)  # the same unique kernel defined again
        if found is not None:
            return found
        made = Kernel(fn, key=name, module=module, options=options,
                      module_options=module_options)
        unique_kernels.remember(key, made)
        return made

    return wrap(f) if f is not None else wrap


@typing.overload
def func(f: Callable) -> Func: ...


@typing.overload
def func(f: None = None, *, name: str | None = None, module: Any = None,
         inline: bool | None = None) -> Callable[[Callable], Func]: ...


def func(f: Callable | None = None, *, name: str | None = None, module: Any = None,
         inline: bool | None = None) -> Any:
    """Decorator making a Python function callable from kernels (`@kc.func`, or
    `@kc.func(name=..., module=..., inline=...)` as in Warp).

    Defining several funcs with one name in one scope (with different annotations) makes
    overloads, chosen at each call by the argument types, as in Warp. `name` is the name
    errors give the func; `module` is accepted for Warp's sake (a func is compiled into
    each kernel calling it, under that kernel's options); `inline` must be a bool or None
    and changes nothing: kernelc always inlines funcs into their callers.
    """
    if inline is not None and not isinstance(inline, bool):
        raise TypeError(f"inline must be a bool or None, got {type(inline).__name__}: "
                        f"{inline!r}")
    caller = inspect.currentframe().f_back

    def wrap(fn: Callable) -> Func:
        new = Func(fn)
        if name is not None:
            new.__name__ = name
        existing = caller.f_locals.get(fn.__name__) if caller is not None else None
        if isinstance(existing, Func) and existing.func.__qualname__ == fn.__qualname__ \
                and existing.func.__module__ == fn.__module__:
            existing.add_variant(new)
            return existing
        return new

    return wrap(f) if f is not None else wrap


def _check_module_options(fn: Callable, module: Any, module_options: Any) -> None:
    """Warp's rules for `@kernel(module_options=...)`."""
    from kernelc.runtime.module import MODULE_OPTION_KEYS

    where = f"@kc.kernel for '{fn.__name__}'"
    if not isinstance(module_options, dict):
        raise TypeError(f"{where}: module_options must be a dict, got "
                        f"{type(module_options).__name__}")
    if module != "unique":
        raise ValueError(f"{where}: module_options requires module=\"unique\"; set the "
                         f"options of a shared module with kc.set_module_options()")
    unknown = sorted(set(module_options) - set(MODULE_OPTION_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown module_options: {', '.join(map(repr, unknown))}. "
                         f"Valid options are: {', '.join(map(repr, MODULE_OPTION_KEYS))}")


def _recompile_kernels() -> None:
    """Makes every kernel compile again at its next launch: a module-level func was
    redefined, and any kernel may call it (its disk cache still serves the unchanged)."""
    from kernelc.runtime.module import registered_kernels

    for k in registered_kernels():
        k.forget_compiled()


def _unique_module_name(base: str) -> str:
    """`base`, or `base#2`, `base#3`, ... while another live kernel has that module (one
    Python function made into kernels several times, e.g. by a kernel factory)."""
    from kernelc.runtime.module import registered_kernels

    taken = {str(k.module) for k in registered_kernels()}
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}#{n}"
    return name


def _options_digest(options: dict[str, Any]) -> str:
    import hashlib

    text = ";".join(f"{k}={options[k]!r}" for k in sorted(options))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _raw_signature(f: Callable) -> tuple:
    return tuple((k, repr(v)) for k, v in getattr(f, "__annotations__", {}).items()
                 if k != "return")


def _by_value_signature(f: Func) -> tuple | None:
    """The parameter types of `f` with `kc.ref[T]` read as T (None if its annotations cannot
    be evaluated yet)."""
    try:
        anns = f.annotations
    except KernelError:
        return None
    return tuple((k, repr(v.dtype if is_ref(v) else v)) for k, v in anns.items()
                 if k != "return")


def _generic_array(ann: Any) -> bool:
    t = T.as_type(ann)
    return t is not None and T.is_generic(t)

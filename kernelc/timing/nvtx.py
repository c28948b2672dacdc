"""NVTX marks and ranges for Nsight Systems, and cuProfilerStart/Stop capture regions.

The `nvtx` package is optional. When it is installed, marks and ranges go to a "kernelc"
NVTX domain; the package itself turns them into no-ops unless a profiler is attached. When
it is missing, every call here is a cheap no-op.

The domain and the event attributes of each (name, color) pair are built once and kept in
`rt.extras["nvtx"]`, so a range costs two calls into the package plus a dict lookup.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from kernelc.runtime.context import get_runtime

F = TypeVar("F", bound=Callable[..., Any])

DOMAIN_NAME = "kernelc"

# ARGB colors by name; Warp's default "rapids" is the RAPIDS purple.
COLORS: dict[str, int] = {
    "rapids": 0xFF7400FF,
    "blue": 0xFF0000FF,
    "green": 0xFF008000,
    "darkgreen": 0xFF006400,
    "yellow": 0xFFFFFF00,
    "orange": 0xFFFFA500,
    "red": 0xFFFF0000,
    "purple": 0xFF800080,
    "cyan": 0xFF00FFFF,
    "white": 0xFFFFFFFF,
    "black": 0xFF000000,
    "gray": 0xFF808080,
}


def color_value(color: str | int | None) -> int | None:
    """The ARGB integer for a color name (or an integer, passed through); None for none.

    Names outside the table are left to the nvtx package (which knows matplotlib's names).
    """
    if color is None or isinstance(color, int):
        return color
    return COLORS.get(color.lower())


class _NvtxState:
    """The loaded nvtx domain (None when the package is missing) and its attribute cache."""

    __slots__ = ("domain", "attributes")

    def __init__(self) -> None:
        try:
            import nvtx
        except ImportError:
            self.domain: Any = None
        else:
            self.domain = nvtx.get_domain(DOMAIN_NAME)
        self.attributes: dict[tuple[str, Any], Any] = {}

    def attributes_for(self, name: str, color: str | int | None) -> Any:
        key = (name, color)
        attributes = self.attributes.get(key)
        if attributes is None:
            value = color_value(color)
            try:
                attributes = self.domain.get_event_attributes(
                    message=name, color=value if value is not None else color
                )
            except (TypeError, ValueError):
                # An unknown color name: keep the range, drop the color.
                attributes = self.domain.get_event_attributes(message=name)
            self.attributes[key] = attributes
        return attributes


def _state() -> _NvtxState:
    extras = get_runtime().extras
    state = extras.get("nvtx")
    if state is None:
        state = extras["nvtx"] = _NvtxState()
    return state


def nvtx_available() -> bool:
    """Whether the nvtx package could be imported."""
    return _state().domain is not None


def profile_mark(name: str, color: str | int | None = None) -> None:
    """Puts an instantaneous NVTX marker named `name` on the CPU timeline."""
    state = _state()
    if state.domain is not None:
        state.domain.mark(state.attributes_for(name, color))


class profile_range:  # noqa: N801 - a function-like name, as in the public API
    """An NVTX range around a `with` block or every call of a decorated function.

    Args:
        name: The range's label on the timeline.
        color: A color name (Warp's palette, e.g. "rapids", "yellow"), an ARGB integer,
            or None.

    Example:
        >>> with kc.profile_range("collide"):
        ...     kc.launch(collide, dim=n, inputs=[...])
        >>> @kc.profile_range("step", color="green")
        ... def step(): ...
    """

    __slots__ = ("_domain", "_attributes")

    def __init__(self, name: str, color: str | int | None = None) -> None:
        state = _state()
        self._domain = state.domain
        self._attributes = state.attributes_for(name, color) if state.domain else None

    def __enter__(self) -> profile_range:
        if self._domain is not None:
            self._domain.push_range(self._attributes)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._domain is not None:
            self._domain.pop_range()

    def __call__(self, func: F) -> F:
        if self._domain is None:
            return func
        domain, attributes = self._domain, self._attributes

        @functools.wraps(func)
        def ranged(*args: Any, **kwargs: Any) -> Any:
            domain.push_range(attributes)
            try:
                return func(*args, **kwargs)
            finally:
                domain.pop_range()

        return ranged  # type: ignore[return-value]


def _cuda_context_current() -> bool:
    # Only look when the CUDA runtime has already loaded the driver bindings: a CPU-only
    # program must not initialise CUDA just to say it is not being used.
    driver = sys.modules.get("cuda.bindings.driver")
    if driver is None:
        return False
    try:
        error, context = driver.cuCtxGetCurrent()
    except RuntimeError:  # the bindings are importable but no driver library is present
        return False
    return error == driver.CUresult.CUDA_SUCCESS and int(context) != 0


class profile_enable:  # noqa: N801 - a function-like name, as in the public API
    """Marks a region for targeted capture by a CUDA profiler (cuProfilerStart/Stop).

    Run the program under `nsys profile -c cudaProfilerApi ...` to record only such
    regions. Without a CUDA context in use, it does nothing.

    Args:
        active: Whether this region is captured; e.g. `active=(i == 2)` in a loop
            captures only the third iteration.
    """

    __slots__ = ("active", "_started")

    def __init__(self, active: bool = True) -> None:
        self.active = active
        self._started = False

    def __enter__(self) -> profile_enable:
        if self.active and _cuda_context_current():
            driver = sys.modules["cuda.bindings.driver"]
            (error,) = driver.cuProfilerStart()
            self._started = error == driver.CUresult.CUDA_SUCCESS
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started:
            sys.modules["cuda.bindings.driver"].cuProfilerStop()
            self._started = False

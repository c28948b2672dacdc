"""Where kernelc's diagnostics go: Warp's logging API (`LOG_*`, `Logger`, `set_logger`).

kernelc's own messages (module load lines, compile details, Python warnings) all pass
through the *active logger*, filtered first by `kc.config.log_level`:

| level | what kernelc sends at it |
| --- | --- |
| `LOG_DEBUG` (10) | compile details: IR/codegen and LLVM/NVRTC times, cache keys |
| `LOG_INFO` (20) | one line per kernel load or CUDA build (Warp's "Module ... took ...") and `ScopedTimer`'s report |
| `LOG_WARNING` (30) | Python warnings (`UserWarning`, `DeprecationWarning`, ...) |
| `LOG_ERROR` (40) | errors that cannot be raised; always emitted, whatever the level |

A message is emitted when its level is at least `config.log_level`. The default logger
writes debug and info lines to `sys.stdout`, turns warnings into `warnings.warn` calls (so
`warnings` filters, `pytest.warns` and `-W error` see them, attributed to the user's line),
and writes errors to `sys.stderr`. `set_logger` installs any object with the four methods.

The active logger lives on the runtime object, not in a module global.
"""

from __future__ import annotations

import sys
import warnings
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

LOG_DEBUG = 10
"""Compile details (kernelc's `config.verbose = True` is this level)."""

LOG_INFO = 20
"""One line per kernel load or build; Warp's default level."""

LOG_WARNING = 30
"""Warnings; kernelc's default level."""

LOG_ERROR = 40
"""Errors only."""

# kernelc's earlier string levels, still accepted by `config.log_level`.
_LEVEL_NAMES = {"debug": LOG_DEBUG, "info": LOG_INFO, "warning": LOG_WARNING,
                "warn": LOG_WARNING, "error": LOG_ERROR}


def parse_log_level(value: Any) -> int:
    """The integer level a `config.log_level` value denotes.

    Args:
        value (int | str): A level such as `kc.LOG_INFO` (any int is allowed, as in Warp),
            or one of the names `"debug"`, `"info"`, `"warning"`, `"error"`.

    Returns:
        The level as an int.

    Raises:
        ValueError: An unknown level name.
        TypeError: Neither an int nor a string.
    """
    if isinstance(value, str):
        level = _LEVEL_NAMES.get(value.strip().lower())
        if level is None:
            raise ValueError(f"unknown log level {value!r}; use kc.LOG_DEBUG, LOG_INFO, "
                             f"LOG_WARNING or LOG_ERROR (or 'debug', 'info', 'warning', "
                             f"'error')")
        return level
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"a log level is an int such as kc.LOG_INFO or a level name, "
                        f"got {type(value).__name__}")
    return int(value.__index__())


@runtime_checkable
class Logger(Protocol):
    """What `kc.set_logger` accepts: any object with these four methods (Warp's protocol).

    `warning` receives a `stacklevel` already adjusted for a direct
    `warnings.warn(message, category, stacklevel=stacklevel)` call inside it, so such a
    call points at the user's line, as kernelc's default logger does.
    """

    def debug(self, message: str) -> None:
        """Handles a debug-level message."""
        ...

    def info(self, message: str) -> None:
        """Handles an info-level message."""
        ...

    def warning(self, message: str, category: type[Warning] | None = None,
                stacklevel: int = 1) -> None:
        """Handles a warning of `category` (None means `UserWarning`)."""
        ...

    def error(self, message: str) -> None:
        """Handles an error-level message."""
        ...


class DefaultLogger:
    """kernelc's built-in logger: stdout for debug and info, `warnings.warn` for warnings,
    stderr for errors. `kc.set_logger(None)` restores it."""

    def debug(self, message: str) -> None:
        """Writes `message` to `sys.stdout`."""
        sys.stdout.write(message + "\n")

    def info(self, message: str) -> None:
        """Writes `message` to `sys.stdout`."""
        sys.stdout.write(message + "\n")

    def warning(self, message: str, category: type[Warning] | None = None,
                stacklevel: int = 1) -> None:
        """Issues a Python warning, so that `warnings` filters apply to it."""
        warnings.warn(message, category, stacklevel=stacklevel)

    def error(self, message: str) -> None:
        """Writes `message` to `sys.stderr`."""
        sys.stderr.write("kernelc error: " + message + "\n")


def _check_logger(logger: Any) -> None:
    # The protocol's isinstance only checks that the attributes exist, so an object with
    # `debug = None` would pass it and fail much later, inside some compile.
    if not isinstance(logger, Logger) or not all(
            callable(getattr(logger, name, None)) for name in ("debug", "info", "warning",
                                                                "error")):
        raise TypeError("a logger needs callable debug(message), info(message), "
                        "warning(message, category=None, stacklevel=1) and error(message) "
                        f"methods; got {type(logger).__name__}")


def _state() -> dict[str, Any]:
    from kernelc.runtime.context import get_runtime

    extras = get_runtime().extras
    found = extras.get("logger")
    if found is None:
        found = extras.setdefault("logger", {"logger": DefaultLogger(), "seen": set()})
    return found


def set_logger(logger: Logger | None) -> None:
    """Makes `logger` receive kernelc's messages from now on.

    Args:
        logger (Logger | None): Any object satisfying the `Logger` protocol, or None for
            kernelc's default logger.

    Raises:
        TypeError: `logger` lacks one of the four methods.
    """
    if logger is not None:
        _check_logger(logger)
    _state()["logger"] = DefaultLogger() if logger is None else logger


def get_logger() -> Logger:
    """The active logger (kernelc's default one unless `set_logger` installed another)."""
    return _state()["logger"]


def _level() -> int:
    from kernelc.config import config

    return config.log_level


def log_debug(message: str) -> None:
    """Sends `message` to the active logger's `debug` if `config.log_level <= LOG_DEBUG`."""
    if _level() <= LOG_DEBUG:
        get_logger().debug(message)


def log_info(message: str) -> None:
    """Sends `message` to the active logger's `info` if `config.log_level <= LOG_INFO`."""
    if _level() <= LOG_INFO:
        get_logger().info(message)


def log_warning(message: str, category: type[Warning] | None = None, stacklevel: int = 1,
                once: bool = False) -> None:
    """Sends a warning to the active logger if `config.log_level <= LOG_WARNING`.

    Args:
        message (str): The warning text.
        category (type[Warning] | None): The warning class (None means `UserWarning`).
        stacklevel (int): Counted as by a `warnings.warn` call in place of this one: 1 is
            the caller's line, 2 its caller's, and so on.
        once (bool): Emit each (category, message) pair once per process.
    """
    if _level() > LOG_WARNING:
        return
    state = _state()
    if once:
        key = (category, message)
        if key in state["seen"]:
            return
        state["seen"].add(key)
    # +2: the logger's own warning() and this function sit between the warnings.warn call
    # and the caller's frame.
    state["logger"].warning(message, category=category, stacklevel=stacklevel + 2)


def log_launch(kernel_name: str, dim: Any, inputs: Any, outputs: Any, device: Any) -> None:
    """`config.print_launches`: sends one line about a launch to the active logger's `info`,
    whatever `config.log_level` is (the user turned the switch on, as in Warp)."""
    # Lists, as Warp prints its defaults (kernelc's defaults are tuples).
    get_logger().info(f"kernel: {kernel_name} dim: {dim} inputs: {list(inputs)} "
                      f"outputs: {list(outputs)} device: {device}")


def log_error(message: str) -> None:
    """Sends `message` to the active logger's `error`, whatever `config.log_level` is."""
    get_logger().error(message)


class ScopedLogger:
    """Installs a logger inside a `with` block and restores the previous one after it.

    Args:
        logger (Logger | None): The logger to use in the block; None for the default logger.

    Raises:
        TypeError: `logger` does not satisfy the `Logger` protocol.

    Example:
        >>> with kc.ScopedLogger(my_logger):
        ...     kc.launch(k, n, inputs=[a])  # load lines and warnings go to my_logger
    """

    def __init__(self, logger: Logger | None) -> None:
        if logger is not None:
            _check_logger(logger)
        self.logger = logger
        self._saved: Any = None

    def __enter__(self) -> ScopedLogger:
        self._saved = get_logger()
        set_logger(self.logger)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # Assigned directly: the saved logger was valid when installed, and a TypeError here
        # would hide an exception leaving the block.
        _state()["logger"] = self._saved


class ScopedLogLevel:
    """Sets `kc.config.log_level` inside a `with` block and restores it after.

    Args:
        log_level (int | str): The level inside the block (`kc.LOG_DEBUG` ... `kc.LOG_ERROR`,
            or a level name).

    Example:
        >>> with kc.ScopedLogLevel(kc.LOG_INFO):
        ...     kc.load_module()  # prints one line per kernel loaded
    """

    def __init__(self, log_level: int | str) -> None:
        self.log_level = log_level
        self._saved = LOG_WARNING

    def __enter__(self) -> ScopedLogLevel:
        from kernelc.config import config

        self._saved = config.log_level
        config.log_level = self.log_level
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        from kernelc.config import config

        config.log_level = self._saved

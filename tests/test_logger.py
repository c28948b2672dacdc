"""Warp's logging API: levels, `config.log_level`, `set_logger` / `get_logger`, the scoped
forms, and kernelc's own messages going through the active logger at Warp's levels."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import kernelc as kc
from kernelc.config import Config
from kernelc.logger import DefaultLogger, log_debug, log_error, log_info, log_warning


class Capture:
    """A logger written the way a framework adapter for Warp is: it records every call."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, object]] = []

    def debug(self, message: str) -> None:
        self.records.append(("debug", message, None))

    def info(self, message: str) -> None:
        self.records.append(("info", message, None))

    def warning(self, message: str, category=None, stacklevel: int = 1) -> None:
        self.records.append(("warning", message, category))
        warnings.warn(message, category, stacklevel=stacklevel)

    def error(self, message: str) -> None:
        self.records.append(("error", message, None))

    def levels(self) -> list[str]:
        return [level for level, _, _ in self.records]

    def messages(self, level: str) -> list[str]:
        return [m for lv, m, _ in self.records if lv == level]


@pytest.fixture
def capture():
    """A Capture logger installed for the test; the level and the logger are restored."""
    logger = Capture()
    saved_level = kc.config.log_level
    with kc.ScopedLogger(logger):
        yield logger
    kc.config.log_level = saved_level


# ---- levels and config.log_level ------------------------------------------------------------


def test_levels_have_warps_values():
    assert (kc.LOG_DEBUG, kc.LOG_INFO, kc.LOG_WARNING, kc.LOG_ERROR) == (10, 20, 30, 40)
    warp = pytest.importorskip("warp")
    assert (kc.LOG_DEBUG, kc.LOG_INFO, kc.LOG_WARNING, kc.LOG_ERROR) == (
        warp.LOG_DEBUG, warp.LOG_INFO, warp.LOG_WARNING, warp.LOG_ERROR)


def test_log_level_takes_ints_and_kernelc_names(monkeypatch):
    monkeypatch.setattr(kc.config, "log_level", kc.config.log_level)  # restored afterwards
    if "KERNELC_LOG_LEVEL" not in os.environ:
        assert Config().log_level == kc.LOG_WARNING  # kernelc's default: no load lines
    for name, level in (("debug", 10), ("info", 20), ("warning", 30), ("error", 40),
                        ("INFO", 20)):
        kc.config.log_level = name
        assert kc.config.log_level == level and isinstance(kc.config.log_level, int)
    kc.config.log_level = 25  # any int, as in Warp
    assert kc.config.log_level == 25
    kc.config.log_level = np.int64(kc.LOG_DEBUG)
    assert kc.config.log_level == 10 and type(kc.config.log_level) is int
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        kc.config.log_level = "loud"
    with pytest.raises(TypeError, match="log level"):
        kc.config.log_level = 1.5
    with pytest.raises(TypeError, match="log level"):
        kc.config.log_level = True
    assert kc.config.log_level == 10  # a rejected value changes nothing


def test_verbose_and_quiet_are_views_of_the_level(monkeypatch):
    monkeypatch.setattr(kc.config, "log_level", kc.LOG_WARNING)
    assert kc.config.quiet and not kc.config.verbose
    kc.config.verbose = True
    assert kc.config.log_level == kc.LOG_DEBUG and kc.config.verbose
    kc.config.quiet = True  # old Warp scripts set both: debug output stays
    assert kc.config.log_level == kc.LOG_DEBUG
    kc.config.verbose = False
    assert kc.config.log_level == kc.LOG_WARNING
    kc.config.quiet = False  # Warp's replacement for quiet=False is LOG_INFO
    assert kc.config.log_level == kc.LOG_INFO and not kc.config.quiet
    kc.config.quiet = True
    assert kc.config.log_level == kc.LOG_WARNING
    kc.config.log_level = kc.LOG_ERROR
    kc.config.verbose = False  # leaves a higher level alone
    kc.config.quiet = True
    assert kc.config.log_level == kc.LOG_ERROR


def test_log_level_from_the_environment():
    from tests.conftest import run_python

    proc = run_python("import kernelc as kc; print(kc.config.log_level)",
                      env={"KERNELC_LOG_LEVEL": "info"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "20"


# ---- set_logger / get_logger / the scoped forms -----------------------------------------------


class NoError:
    def debug(self, message): ...
    def info(self, message): ...
    def warning(self, message, category=None, stacklevel=1): ...


class NotCallable(NoError):
    error = None


@pytest.mark.parametrize("bad", [NoError(), NotCallable(), "stdout", 42],
                         ids=["missing", "not-callable", "str", "int"])
def test_set_logger_rejects_what_is_not_a_logger(bad):
    before = kc.get_logger()
    with pytest.raises(TypeError, match="debug.*info.*warning.*error"):
        kc.set_logger(bad)
    with pytest.raises(TypeError):
        kc.ScopedLogger(bad)
    assert kc.get_logger() is before


def test_warp_rejects_the_same_loggers():
    warp = pytest.importorskip("warp")
    for bad in (NoError(), NotCallable(), "stdout"):
        with pytest.raises(TypeError):
            warp.set_logger(bad)
    capture = Capture()
    warp.set_logger(capture)  # the same adapter serves both
    try:
        assert warp.get_logger() is capture
    finally:
        warp.set_logger(None)


def test_set_logger_get_logger_and_none_restores_the_default():
    logger = Capture()
    assert isinstance(kc.get_logger(), DefaultLogger)
    assert isinstance(logger, kc.Logger) and not isinstance(object(), kc.Logger)
    kc.set_logger(logger)
    try:
        assert kc.get_logger() is logger
    finally:
        kc.set_logger(None)
    assert isinstance(kc.get_logger(), DefaultLogger) and kc.get_logger() is not logger


def test_scoped_logger_restores_the_previous_logger_even_after_an_error():
    outer, inner = Capture(), Capture()
    with kc.ScopedLogger(outer):
        with pytest.raises(RuntimeError, match="boom"):
            with kc.ScopedLogger(inner) as scope:
                assert kc.get_logger() is inner and scope.logger is inner
                raise RuntimeError("boom")
        assert kc.get_logger() is outer
        with kc.ScopedLogger(None):
            assert isinstance(kc.get_logger(), DefaultLogger)
        assert kc.get_logger() is outer
    assert isinstance(kc.get_logger(), DefaultLogger)


def test_scoped_log_level_restores_the_level():
    before = kc.config.log_level
    with pytest.raises(KeyError):
        with kc.ScopedLogLevel(kc.LOG_DEBUG):
            assert kc.config.log_level == kc.LOG_DEBUG
            with kc.ScopedLogLevel("error"):
                assert kc.config.log_level == kc.LOG_ERROR
            assert kc.config.log_level == kc.LOG_DEBUG
            raise KeyError("x")
    assert kc.config.log_level == before


# ---- filtering ------------------------------------------------------------------------------


def test_each_level_filters_what_is_below_it(capture):
    expected = {kc.LOG_DEBUG: ["debug", "info", "warning", "error"],
                kc.LOG_INFO: ["info", "warning", "error"],
                kc.LOG_WARNING: ["warning", "error"],
                kc.LOG_ERROR: ["error"],
                99: ["error"]}  # errors are always emitted
    for level, levels in expected.items():
        capture.records.clear()
        kc.config.log_level = level
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            log_debug("d")
            log_info("i")
            log_warning("w")
            log_error("e")
        assert capture.levels() == levels, level


def test_default_logger_streams(capsys, monkeypatch):
    monkeypatch.setattr(kc.config, "log_level", kc.LOG_DEBUG)
    log_debug("a debug line")
    log_info("an info line")
    log_error("an error line")
    out, err = capsys.readouterr()
    assert out == "a debug line\nan info line\n"
    assert err == "kernelc error: an error line\n"


def test_default_logger_warnings_obey_filters_and_point_at_the_caller():
    def library_function():  # stands for kernelc code warning on behalf of its caller
        log_warning("deprecated thing", DeprecationWarning, stacklevel=2)

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        library_function()
    [w] = record
    assert w.category is DeprecationWarning and str(w.message) == "deprecated thing"
    assert w.filename == __file__ and w.lineno == line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="plain"):
            log_warning("plain")  # category None is UserWarning
        warnings.simplefilter("ignore")
        log_warning("silenced by the filter")


def test_warnings_once_and_above_warning_level(capture):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            log_warning("only once", once=True)
            log_warning("every time")
        kc.config.log_level = kc.LOG_ERROR
        log_warning("dropped")
    assert capture.messages("warning") == ["only once"] + ["every time"] * 3
    assert [str(w.message) for w in record] == capture.messages("warning")


# ---- kernelc's own messages ------------------------------------------------------------------


def _fresh_kernel():
    """A new kernel object, so nothing of it is in the memory cache, and a value for it to
    write (its launch argument)."""
    seed = np.random.default_rng().integers(1 << 30)

    @kc.kernel
    def log_case(a: kc.array(dtype=int), v: int):
        a[kc.tid()] = v

    return log_case, int(seed)


def test_load_lines_at_info_and_compile_details_at_debug(capture):
    kernel, seed = _fresh_kernel()
    kc.config.log_level = kc.LOG_WARNING
    a = kc.zeros(2, dtype=int)
    kc.launch(kernel, 2, inputs=[a, seed])
    assert capture.records == []  # kernelc's default prints nothing
    kernel.compiled.clear()
    kernel.last_launch = None
    kc.config.log_level = kc.LOG_INFO
    kc.launch(kernel, 2, inputs=[a, seed])
    [line] = capture.messages("info")
    assert line.startswith(f"Module {kernel.key} load on device 'cpu' took ")
    assert line.endswith("(cached)") and capture.messages("debug") == []
    capture.records.clear()
    kernel.compiled.clear()
    kernel.last_launch = None
    kc.config.log_level = kc.LOG_DEBUG
    kc.launch(kernel, 2, inputs=[a, seed])
    assert capture.levels() == ["debug", "info"]
    assert "codegen" in capture.messages("debug")[0]
    assert a.numpy().tolist() == [seed, seed]


def test_first_compile_is_reported_as_compiled(capture, tmp_path, monkeypatch):
    monkeypatch.setattr(kc.config, "kernel_cache_dir", str(tmp_path))  # an empty cache
    kernel, seed = _fresh_kernel()
    kc.config.log_level = kc.LOG_INFO
    kc.launch(kernel, 1, inputs=[kc.zeros(1, dtype=int), seed])
    [line] = capture.messages("info")
    assert line.endswith("(compiled)")


def test_cuda_build_lines_need_no_gpu(capture, tmp_path, monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc")
    monkeypatch.setattr(kc.config, "kernel_cache_dir", str(tmp_path))  # NVRTC really runs
    kernel, _ = _fresh_kernel()
    kc.config.log_level = kc.LOG_DEBUG
    kc.compile(kernel, target="cuda", arch=90)
    assert capture.levels() == ["debug", "info"]
    assert "NVRTC compile" in capture.messages("debug")[0]
    assert capture.messages("info")[0].startswith(f"Module {kernel.key} build for sm_90 took")


def test_verbose_is_debug_logging(capture):
    kernel, seed = _fresh_kernel()
    kc.config.verbose = True
    kc.launch(kernel, 1, inputs=[kc.zeros(1, dtype=int), seed])
    assert capture.levels() == ["debug", "info"]


def test_scoped_timer_reports_through_the_logger(capture):
    kc.config.log_level = kc.LOG_ERROR  # an explicitly printing timer is not filtered
    with kc.ScopedTimer("outer step"):
        with kc.ScopedTimer("inner step"):
            pass
    inner, outer = capture.messages("info")
    assert inner.startswith("    inner step took ") and inner.endswith(" ms")
    assert outer.startswith("outer step took ")
    with kc.ScopedTimer("silent", print=False):
        pass
    assert len(capture.records) == 2


@kc.kernel(enable_backward=False)
def no_backward(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * 2.0


def test_kernelc_warnings_reach_a_custom_logger_at_the_users_line(capture):
    x = kc.ones(4, dtype=float, requires_grad=True)
    y = kc.zeros(4, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(no_backward, 4, inputs=[x], outputs=[y])
    with pytest.warns(UserWarning, match="no backward kernel") as record:
        tape.backward(grads={y: kc.ones(4, dtype=float)})
    [(level, message, category)] = capture.records
    assert level == "warning" and category is UserWarning and "no_backward" in message
    assert record[0].filename == __file__  # the logger's warnings.warn points at backward()
    capture.records.clear()
    kc.config.log_level = kc.LOG_ERROR
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape.backward(grads={y: kc.ones(4, dtype=float)})  # filtered out: nothing raised
    assert capture.records == []


def test_print_launches_sends_one_info_line_per_launch(capture, monkeypatch, capsys):
    monkeypatch.setattr(kc.config, "print_launches", True)
    kc.config.log_level = kc.LOG_ERROR  # a switch the user turned on: not filtered
    x = kc.array(np.random.default_rng(3).uniform(1, 2, 4).astype(np.float32))
    y = kc.full(4, -999.0, dtype=float)
    kc.launch(no_backward, 4, inputs=[x], outputs=[y])
    kc.launch(no_backward, 4, inputs=[x], outputs=[y])  # the reused-packing path too
    lines = capture.messages("info")
    assert len(lines) == 2
    assert lines[0].startswith("kernel: no_backward dim: 4 inputs: [array(shape=(4,)")
    assert lines[0].endswith("device: cpu")
    assert capsys.readouterr().out == ""  # through the logger, not printed directly
    np.testing.assert_allclose(y.numpy(), x.numpy() * 2.0)
    monkeypatch.setattr(kc.config, "print_launches", False)
    kc.launch(no_backward, 4, inputs=[x], outputs=[y])
    assert len(capture.messages("info")) == 2

"""kc.load_module() loads the calling module's kernels, as in Warp."""

from __future__ import annotations

import kernelc as kc


@kc.kernel
def preloaded(a: kc.array(dtype=float)):
    a[kc.tid()] = 2.0


def test_load_module_defaults_to_the_calling_module():
    preloaded.compiled.clear()
    kc.load_module()  # this test module, not __main__ (pytest's entry point)
    assert preloaded.compiled
    loaded = dict(preloaded.compiled)
    a = kc.zeros(4, dtype=float)
    kc.launch(preloaded, 4, [a])
    assert preloaded.compiled == loaded  # the launch found it: nothing compiled
    assert (a.numpy() == 2.0).all()


SCALE = 2.0


def _local_kernel():
    @kc.kernel
    def defined_in_a_function(a: kc.array(dtype=float)):
        a[kc.tid()] = 5.0

    return defined_in_a_function


def test_kernel_module_is_a_module_object_with_options_and_load():
    m = preloaded.module
    assert isinstance(m, kc.Module) and m == __name__ and m.name == __name__
    assert kc.get_module() == m and kc.get_module(__name__) == m
    assert m.options is kc.get_module_options(__name__)  # live, not a copy
    local = _local_kernel()
    assert local in m.kernels and preloaded in m.kernels  # kernels made inside functions too
    preloaded.compiled.clear()
    local.compiled.clear()
    m.load("cpu")
    assert preloaded.compiled and local.compiled
    m.unload()
    assert not preloaded.compiled and not local.compiled
    a = kc.array([-1.0, -1.0], dtype=float)
    kc.launch(local, 2, [a])
    assert (a.numpy() == 5.0).all()
    assert len(m.hash_module()) == 64


def test_mark_modified_reads_the_globals_again():
    global SCALE

    @kc.kernel
    def scaled(a: kc.array(dtype=float)):
        a[kc.tid()] = SCALE

    a = kc.array([-1.0], dtype=float)
    kc.launch(scaled, 1, [a])
    assert a.numpy()[0] == 2.0
    SCALE = 3.0
    try:
        kc.launch(scaled, 1, [a])
        assert a.numpy()[0] == 2.0  # constants are folded in when the kernel is compiled
        scaled.module.mark_modified()
        kc.launch(scaled, 1, [a])
        assert a.numpy()[0] == 3.0
    finally:
        SCALE = 2.0


def test_kernel_made_with_a_key_and_a_unique_module():
    k = kc.Kernel(func=preloaded.func, key="preloaded_copy", options={"enable_backward": False})
    assert k.key == "preloaded_copy" and k.options == {"enable_backward": False}
    a = kc.array([-1.0, -1.0], dtype=float)
    kc.launch(k, 2, [a])
    assert (a.numpy() == 2.0).all()

    @kc.kernel(module="unique")
    def alone(a: kc.array(dtype=float)):
        a[kc.tid()] = 1.0

    assert alone.module != __name__ and alone.module.endswith("alone")
    assert alone in kc.get_module(alone.module).kernels and alone not in preloaded.module.kernels


def test_types_have_warp_class_names():
    assert [t.__name__ for t in (kc.float32, kc.int64, kc.bool, kc.vec3, kc.vec3d, kc.mat22,
                                 kc.quat, kc.transform)] == [
        "float32", "int64", "bool", "vec3f", "vec3d", "mat22f", "quatf", "transformf"]
    assert kc.types.vector(5, kc.float32).__name__ == "vec_t"
    assert kc.types.matrix((2, 5), kc.float64).__name__ == "mat_t"


def test_module_constructor_takes_warps_arguments():
    import sys

    import pytest

    m = kc.Module("made_by_hand", None)  # Warp's (name, loader) form
    assert isinstance(m, kc.Module) and m == "made_by_hand" and m.name == "made_by_hand"

    @kc.kernel(module=sys.modules[__name__])  # a Python module object names its module
    def by_module_object(a: kc.array(dtype=float)):
        a[kc.tid()] = 4.0

    assert by_module_object.module == __name__
    a = kc.array([-1.0], dtype=float)
    kc.launch(by_module_object, 1, [a])
    assert a.numpy()[0] == 4.0
    with pytest.raises(TypeError, match="module name is a str"):
        kc.Module(3)


def test_reloading_a_module_recompiles_the_kernels_calling_its_funcs(tmp_path, monkeypatch):
    import importlib
    import sys

    import numpy as np

    helper = tmp_path / "reload_helper.py"
    helper.write_text("import kernelc as kc\n\n\n@kc.func\ndef magic() -> float:\n"
                      "    return 1.0\n")
    user = tmp_path / "reload_user.py"
    user.write_text("import kernelc as kc\nimport reload_helper\n\n\n@kc.kernel\n"
                    "def k(out: kc.array(dtype=float)):\n    out[0] = reload_helper.magic()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import reload_helper
    import reload_user

    out = kc.zeros(1, dtype=float)
    kc.launch(reload_user.k, 1, [out])
    assert out.numpy()[0] == 1.0
    helper.write_text("import kernelc as kc\n\n\n@kc.func\ndef magic() -> float:\n"
                      "    return 20.0  # (a new size: a stale .pyc cannot match)\n")
    importlib.invalidate_caches()
    importlib.reload(reload_helper)
    kc.launch(reload_user.k, 1, [out])
    np.testing.assert_array_equal(out.numpy(), [20.0])  # the calling kernel compiled again
    sys.modules.pop("reload_helper", None)
    sys.modules.pop("reload_user", None)


HASH_TARGET = kc.constant(1.0)


@kc.func
def hash_double(x: float) -> float:
    return 2.0 * x


@kc.func
def hash_triple(x: float) -> float:
    return 3.0 * x


@kc.func
def hash_apply(g: kc.Function, x: float) -> float:
    return g(x)


HASH_FUNC = hash_double


@kc.kernel(module="unique")
def hashed(out: kc.array(dtype=float)):
    out[0] = hash_apply(HASH_FUNC, HASH_TARGET)


def test_module_hash_follows_the_constants_and_funcs_kernels_read():
    global HASH_TARGET, HASH_FUNC
    first = hashed.module.hash_module()
    try:
        HASH_TARGET = kc.constant(2.0)
        second = hashed.module.hash_module()
        HASH_TARGET = kc.constant(1.0)
        assert hashed.module.hash_module() == first != second
        HASH_FUNC = hash_triple  # a func given as an argument counts too
        assert hashed.module.hash_module() not in (first, second)
    finally:
        HASH_TARGET, HASH_FUNC = kc.constant(1.0), hash_double

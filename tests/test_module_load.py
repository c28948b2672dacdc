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

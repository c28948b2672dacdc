"""`kernelc.optim`: optimisers and iterative linear solvers for kernelc arrays (Warp's
`warp.optim`).

`SGD` and `Adam` update parameter arrays in place from their gradients with kernelc
kernels, on the parameters' device. `kernelc.optim.linear` holds Warp's iterative linear
solvers (`cg`, `cr`, `bicgstab`, `gmres`) for dense matrices and user-defined operators.
Import it as Warp's (`import kernelc.optim`, `import kernelc.optim.linear`), or reach it as
`kc.optim` / `kc.optim.linear` after `import kernelc as kc`.
"""

from kernelc.optim.adam import Adam
from kernelc.optim.sgd import SGD

__all__ = ["Adam", "SGD"]


def __getattr__(name: str):
    # `linear` defines many kernels: load it on first use, as kernelc loads `optim`.
    if name == "linear":
        import kernelc.optim.linear as linear

        return linear
    raise AttributeError(f"module 'kernelc.optim' has no attribute {name!r}")

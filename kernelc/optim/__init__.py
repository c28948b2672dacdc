"""`kernelc.optim`: gradient-based optimisers for kernelc arrays (Warp's `warp.optim`).

`SGD` and `Adam` update parameter arrays in place from their gradients with kernelc
kernels, on the parameters' device. Import it as Warp's (`import kernelc.optim`), or reach
it as `kc.optim` after `import kernelc as kc`. Warp's `warp.optim.linear` (iterative linear
solvers) is not provided.
"""

from kernelc.optim.adam import Adam
from kernelc.optim.sgd import SGD

__all__ = ["Adam", "SGD"]

"""`kernelc.autograd`: checking gradients (Warp's `warp.autograd`).

`jacobian` computes Jacobians of a kernel (or of a Python function that launches kernels)
with its backward kernels, `jacobian_fd` with central finite differences, and `gradcheck`
compares the two; `gradcheck_tape` checks every launch recorded on a `kc.Tape`, and
`jacobian_plot` draws Jacobians (with matplotlib, if installed). Import it as Warp's
(`import kernelc.autograd`), or reach it as `kc.autograd` after `import kernelc as kc`.
"""

from kernelc.autograd.check import gradcheck, gradcheck_tape
from kernelc.autograd.jacobians import jacobian, jacobian_fd
from kernelc.autograd.metadata import FunctionMetadata
from kernelc.autograd.plot import jacobian_plot

__all__ = ["gradcheck", "gradcheck_tape", "jacobian", "jacobian_fd", "jacobian_plot",
           "FunctionMetadata"]

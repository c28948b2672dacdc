"""`kc.utils`: built-in array utilities with Warp's names and semantics.

`array_scan`, `radix_sort_pairs`, `segmented_sort_pairs`, `runlength_encode`, `array_sum`,
`array_inner` and `array_cast` run kernels written in kernelc's own language, so they run
unchanged on the CPU and on CUDA devices. Their launches are reported as
`TIMING_KERNEL_BUILTIN` activities and as `type: "builtin"` entries of `kc.kernel_history()`. `map` (also `kc.map`) applies a function to the elements of arrays
in a generated kernel. `graph_coloring_assign` / `_balance` / `_get_groups` color graphs
on the CPU. See docs/utils.md.
"""

from kernelc.utils._common import UtilsTypeError, UtilsValueError
from kernelc.utils.cast import array_cast
from kernelc.utils.coloring import (
    GraphColoringAlgorithm,
    graph_coloring_assign,
    graph_coloring_balance,
    graph_coloring_get_groups,
)
from kernelc.utils.map import map  # noqa: A004  (Warp's name, shadowing the builtin here)
from kernelc.utils.map_func import create_warp_function
from kernelc.utils.reduce import array_inner, array_sum
from kernelc.utils.runlength import runlength_encode
from kernelc.utils.scan import array_scan
from kernelc.utils.segmented_sort import segmented_sort_pairs
from kernelc.utils.sort import radix_sort_pairs

__all__ = ["GraphColoringAlgorithm", "UtilsTypeError", "UtilsValueError", "array_cast",
           "array_inner", "array_scan", "array_sum", "create_warp_function",
           "graph_coloring_assign", "graph_coloring_balance", "graph_coloring_get_groups", "map",
           "radix_sort_pairs", "runlength_encode", "segmented_sort_pairs"]

"""The builtin table. Importing this package registers every builtin."""

# isort: off
# Registration order matters: the vector/matrix modules extend the scalar entries.
from kernelc.builtins import atomic, memory, random, scalar  # noqa: F401  (registration)
from kernelc.builtins import vector, matrix, quat, quat_euler, spatial, operators_agg  # noqa: F401
from kernelc.builtins import scalar_extra, utility  # noqa: F401
# isort: on
from kernelc.builtins.registry import BUILTINS, Builtin, Expansion, Overload, primitive_keys

__all__ = ["BUILTINS", "Builtin", "Expansion", "Overload", "primitive_keys"]

"""The builtin table. Importing this package registers every builtin."""

from kernelc.builtins import atomic, random, scalar  # noqa: F401  (registration)
from kernelc.builtins import vector, matrix, quat, operators_agg  # noqa: F401,E402
from kernelc.builtins.registry import BUILTINS, Builtin, Expansion, Overload, primitive_keys

__all__ = ["BUILTINS", "Builtin", "Expansion", "Overload", "primitive_keys"]

"""The builtin table. Importing this package registers every builtin."""

from kernelc.builtins import atomic, matrix, operators_agg, quat, random, scalar, vector  # noqa: F401  (registration)  # noqa: F401,E402
from kernelc.builtins.registry import BUILTINS, Builtin, Expansion, Overload, primitive_keys

__all__ = ["BUILTINS", "Builtin", "Expansion", "Overload", "primitive_keys"]

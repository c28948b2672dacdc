"""Internal loads from a raw device address, for kernelc's own library funcs.

Runtime data structures that kernels receive as a `uint64` id (a hash grid's descriptor and
its index arrays) are read through these; users never see them.
"""

from __future__ import annotations

from kernelc import types as T
from kernelc.builtins.registry import Overload, register
from kernelc.ir.nodes import OpCode


def _load_rule(result: T.ScalarType):
    def rule(types, weak):
        address, index = types
        if address != T.uint64 or not (isinstance(index, T.ScalarType) and index.is_int):
            raise TypeError("needs (uint64 address, int index)")
        return (T.uint64, index), result

    return rule


def _load(result: T.ScalarType):
    return lambda em, address, index: em.op(OpCode.LOAD_ADDRESS, (address, index), result)


# The narrow types serve texture texel reads (`kernelc.spatial.texture_lang`).
for _t in (T.int32, T.uint64, T.float32, T.float64, T.int8, T.uint8, T.int16, T.uint16,
           T.uint32, T.float16):
    register(f"_load_{_t.name}", "memory", f"Element `index` of the {_t.name} data at `address`.",
             Overload(("address", "index"), _load_rule(_t), _load(_t)), public=False)

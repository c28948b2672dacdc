"""Static work counts from the IR: floating-point operations and bytes moved per launch.

These feed kernel_history() and the roofline report. A loop whose trip count is not a
compile-time constant makes the count unknown (None), so the report never guesses.
"""

from __future__ import annotations

import math

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

_FLOP_OPS = frozenset({OpCode.ADD, OpCode.SUB, OpCode.MUL, OpCode.DIV, OpCode.FLOORDIV,
                       OpCode.MOD, OpCode.POW, OpCode.NEG, OpCode.CALL})


def per_thread_work(module: ir.Module) -> tuple[float | None, float | None]:
    """(flops, bytes) one thread does; None where a trip count is unknown."""
    funcs = {f.name: f for f in module.funcs}
    memo: dict[str, tuple[float | None, float | None]] = {}

    def block(b: ir.Block, consts: dict[int, object]):
        flops, nbytes = 0.0, 0.0
        for s in b:
            f, n = stmt(s, consts)
            if f is None or n is None:
                return None, None
            flops += f
            nbytes += n
        return flops, nbytes

    def stmt(s: ir.Stmt, consts):
        if isinstance(s, ir.Op):
            if s.opcode == OpCode.CONST:
                consts[s.result.id] = s.attr
            if s.opcode == OpCode.CALL_FUNC:
                if s.attr not in memo:
                    memo[s.attr] = block(funcs[s.attr].body, {})
                return memo[s.attr]
            is_float = s.result is not None and isinstance(s.result.type, T.ScalarType) \
                and s.result.type.is_float
            flops = 1.0 if (s.opcode in _FLOP_OPS and is_float) else 0.0
            if s.opcode in (OpCode.ARRAY_LOAD, OpCode.ATOMIC):
                size = s.args[0].type.dtype.size
                return flops, float(size * (2 if s.opcode == OpCode.ATOMIC else 1))
            return flops, 0.0
        if isinstance(s, ir.ArrayStore):
            return 0.0, float(s.array.type.dtype.size)
        if isinstance(s, ir.If):
            a = block(s.then_body, consts)
            b = block(s.else_body, consts)
            if None in a or None in b:
                return None, None
            return max(a[0], b[0]), max(a[1], b[1])  # an upper bound: the costlier side
        if isinstance(s, ir.For):
            trips = _trip_count(s, consts)
            if trips is None:
                return None, None
            f, n = block(s.body, consts)
            return (None, None) if f is None else (f * trips, n * trips)
        if isinstance(s, ir.While):
            return None, None
        return 0.0, 0.0

    return block(module.kernel.body, {})


def _trip_count(s: ir.For, consts) -> int | None:
    try:
        start, stop, step = (consts[v.id] for v in (s.start, s.stop, s.step))
    except KeyError:
        return None
    return max(0, math.ceil((stop - start) / step)) if step else None


def count_work(kernel, arg_types, dims, lanes: int = 1) -> tuple[float | None, float | None]:
    """(flops, bytes) of a whole launch of `kernel` over `dims`; with `lanes` > 1, of the
    variant for CPU blocks of that many threads (a kernel run once per block if it uses
    tiles, see `ir/lanes.py`)."""
    key = ("work", tuple(arg_types), lanes)
    cached = kernel.compiled.get(key)
    if cached is None:
        from kernelc.ir.passes import run_pipeline

        module = kernel.get_ir(tuple(arg_types), lanes=lanes)
        cached = (*per_thread_work(run_pipeline(module)), module.kernel.lanes)
        kernel.compiled[key] = cached
    f, b, per = cached
    n = -(-math.prod(dims) // per)  # the entry runs once per thread, or once per block
    return (None if f is None else f * n), (None if b is None else b * n)


def atomic_parts(op: ir.Op) -> tuple[ir.Value, tuple[ir.Value, ...], tuple[ir.Value, ...]]:
    """(array, indices, operands) of an ATOMIC op: the array's ndim says where the indices
    end; the operands are (value,), or (compare, value) for "cas"."""
    array = op.args[0]
    ndim = array.type.ndim
    return array, tuple(op.args[1:1 + ndim]), tuple(op.args[1 + ndim:])


def atomic_target(op: ir.Op) -> tuple[str, tuple[int, ...], T.Type]:
    """(kind, field path, updated type) of an ATOMIC op: the path is empty unless the op
    updates one field of an array-of-structs element (gradients of struct arrays)."""
    kind, path = (op.attr, ()) if isinstance(op.attr, str) else op.attr
    t = op.args[0].type.dtype
    for k in path:
        t = t.fields[k][1]
    return kind, path, t


# How `reduction_targets` combines private copies, per atomic kind. Compare-and-swap and
# exchange have no such combination (their result depends on the order of the updates).
_COMBINE = {"add": "add", "sub": "add", "min": "min", "max": "max", "and": "and", "or": "or",
            "xor": "xor"}


def thread_private_params(fn: ir.Function) -> frozenset[int]:
    """Array parameters that each thread touches only at its own element.

    A parameter qualifies when every use of it is a load, store or atomic whose indices are
    exactly the thread's index (`a[tid()]`, or `a[i, j]` with `i, j = tid()`) and it is
    never copied, passed to a func or indexed otherwise. No two threads then share an
    element, so atomics on it need no atomic instruction, provided no other argument
    aliases it (the launcher checks that) and the launch is no wider than the kernel's
    tid() (wider launches run a variant that does not ask: `launch_alias.wide_launch`).
    Returns the parameters' value ids.
    """
    stores: dict[int, list[ir.Value]] = {}
    tid_of: dict[ir.Value, tuple[int, int]] = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.StoreSlot):
            stores.setdefault(s.slot.id, []).append(s.value)
        elif isinstance(s, ir.Op) and s.opcode == OpCode.TID:
            tid_of[s.result] = s.attr
    tid_slots = {sid: tid_of[vals[0]] for sid, vals in stores.items()
                 if len(vals) == 1 and vals[0] in tid_of}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Op) and s.opcode == OpCode.LOAD_SLOT and s.attr.id in tid_slots:
            tid_of[s.result] = tid_slots[s.attr.id]

    def own_index(indices) -> bool:
        axes = [tid_of.get(i) for i in indices]
        if any(a is None for a in axes):
            return False
        if len(axes) == 1 and axes[0] == (0, 0):
            return True
        return all(a == (k, len(axes)) for k, a in enumerate(axes))

    candidates = {p.id for p in fn.params
                  if isinstance(p.type, T.ArrayType) and p.type.dtype is not None}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Op) and s.opcode in (OpCode.ARRAY_LOAD, OpCode.ATOMIC):
            arr, rest = s.args[0], s.args[1:]
            indices = rest if s.opcode == OpCode.ARRAY_LOAD else atomic_parts(s)[1]
            if not own_index(indices):
                candidates.discard(arr.id)
            others = rest
        elif isinstance(s, ir.ArrayStore):
            if not own_index(s.indices):
                candidates.discard(s.array.id)
            others = (*s.indices, s.value)
        elif isinstance(s, ir.Op) and s.opcode == OpCode.ARRAY_SHAPE:
            others = ()
        else:
            from kernelc.ir.passes.rewrite import operands

            others = operands(s)
        for v in others:
            candidates.discard(v.id)
    return frozenset(candidates)


def reduction_targets(fn: ir.Function) -> dict[int, str]:
    """Array parameters that the kernel only updates with atomics of one kind and whose old
    values it never uses: no loads, stores or other uses (its shape may be read).

    Such an array can be accumulated in private copies and combined at the end
    (`ReduceMode.Expand`). Returns the parameters' value ids, each with its combining
    operation: "add" (atomic add and sub), "min", "max", "and", "or" or "xor". An array
    updated by compare-and-swap or exchange never qualifies.
    """
    from kernelc.ir.passes.rewrite import operands

    kinds: dict[int, str] = {}
    array_of: dict[int, int] = {}  # atomic result id -> array id
    used: set[int] = set()
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Op) and s.opcode == OpCode.ATOMIC:
            arr = s.args[0]
            kind = _COMBINE.get(s.attr)
            if kind is None or kinds.setdefault(arr.id, kind) != kind:
                used.add(arr.id)
            array_of[s.result.id] = arr.id
            used.update(v.id for v in s.args[1:])
        elif not (isinstance(s, ir.Op) and s.opcode == OpCode.ARRAY_SHAPE):
            used.update(v.id for v in operands(s))
    # An atomic whose old value is read would see a private copy's value instead.
    used.update(arr for result, arr in array_of.items() if result in used)
    params = {p.id for p in fn.params if isinstance(p.type, T.ArrayType)}
    return {pid: kind for pid, kind in kinds.items() if pid in params and pid not in used}


def order_dependent_atomics(fn: ir.Function, private: frozenset[int]) -> frozenset[int]:
    """The arrays whose atomic updates give results that depend on the order threads run.

    Float add and sub round differently in another order; compare-and-swap and exchange
    keep the last writer; an atomic whose old value is used (a slot counter) hands out
    values in thread order. Integer add/sub/min/max/and/or/xor and float min/max whose old
    values go unused commute exactly. Atomics on thread-private parameters (`private`,
    value ids; see `thread_private_params`) never meet another thread's. Returns the value
    ids of the updated arrays (parameters, or arrays taken from struct fields).
    """
    from kernelc.ir.passes.rewrite import operands

    used: set[int] = set()
    atomics: list[ir.Op] = []
    viewed: dict[int, ir.Value] = {}  # a view's id -> the array it views
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Op) and s.opcode == OpCode.ATOMIC:
            atomics.append(s)
        elif isinstance(s, ir.Op) and s.opcode == OpCode.ARRAY_VIEW:
            viewed[s.result.id] = s.args[0]
        used.update(v.id for v in operands(s))
    found = set()
    for op in atomics:
        array = op.args[0]
        while array.id in viewed:  # an update through a view updates the viewed array
            array = viewed[array.id]
        if array.id in private:
            continue
        kind, _path, t = atomic_target(op)
        scalar = t if isinstance(t, T.ScalarType) else getattr(t, "dtype", None)
        is_float = isinstance(scalar, T.ScalarType) and scalar.is_float
        if (kind in ("cas", "exch") or op.result.id in used
                or (kind in ("add", "sub") and is_float)):
            found.add(array.id)
    return frozenset(found)

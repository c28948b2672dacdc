"""`Tape.visualize`: the operations a `kc.Tape` recorded as a Graphviz dot graph.

Each recorded launch is a node (the kernel's name and launch dimensions), and each array it
uses another; an edge runs from an array into a launch that reads it and from a launch into
an array it writes (found by the same read/write analysis that
`config.verify_autograd_array_access` uses; arrays in `outputs` otherwise). Copies recorded
by `kc.copy` (with `clone`, `to`, `assign`) appear as `copy` nodes. Scopes opened with
`Tape.record_scope_begin` become boxed clusters, and with `simplify_graph` a run of
identical operations (or of identical sequences of them) is drawn once in a cluster labelled
"repeated Nx".

Arrays are named after the variables that hold them where the caller of `visualize` can see
them (`array_labels` first), else `a0`, `a1`, ...
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelc import types as T
from kernelc.runtime.array import array


@dataclass
class _Op:
    """One recorded operation: its label, the arrays it reads and writes, other args."""

    label: str
    reads: list[array]
    writes: list[array]
    details: str
    signature: tuple


@dataclass
class _Group:
    """A scope (`name`) or a run of repeats (`repeat` > 1) of its `items`."""

    name: str | None
    items: list[Any] = field(default_factory=list)
    repeat: int = 1


def _array_key(a: array) -> tuple:
    # Views of the same memory made anew (a slice taken in a loop) are one node.
    return (a.ptr, a.shape, a.strides, a.dtype)


def _struct_arrays(value: Any, prefix: str) -> list[tuple[str, array]]:
    """(field path, array) for the array fields of a struct instance, nested ones too."""
    kc_type = getattr(value, "_kc_type", None)
    if not isinstance(kc_type, T.StructType):
        return []
    found = []
    for name, t in kc_type.fields:
        item = getattr(value, name, None)
        if isinstance(t, T.ArrayType) and isinstance(item, array) and item.ptr is not None:
            found.append((f"{prefix}.{name}", item))
        elif isinstance(t, T.StructType):
            found.extend(_struct_arrays(item, f"{prefix}.{name}"))
    return found


def _access(kernel: Any, values: Sequence[Any], device: Any) -> list[tuple[bool, bool]] | None:
    """(read, written) per argument of a recorded launch, or None if unknown."""
    try:
        from kernelc.autodiff.access import _access as param_access
        from kernelc.runtime.launch import arg_type

        kinds = tuple(arg_type(kernel, n, w, v, device)
                      for n, w, v in zip(kernel.arg_names, kernel.param_types, values))
        return [(used.read, used.written) for used in param_access(kernel, kinds)]
    except Exception:  # (a graph is drawn even where the analysis cannot run)
        return None


def _launch_op(entry: list) -> _Op:
    kernel, dim, _, inputs, outputs, device = entry[:6]
    values = [*inputs, *outputs]
    access = _access(kernel, values, device)
    reads: list[array] = []
    writes: list[array] = []
    scalars = []
    for k, (name, value) in enumerate(zip(kernel.arg_names, values)):
        is_output = k >= len(inputs)
        if isinstance(value, array):
            read, written = access[k] if access is not None else (not is_output, is_output)
            if read or not written:
                reads.append(value)
            if written:
                writes.append(value)
        elif _struct_arrays(value, name):
            for _, a in _struct_arrays(value, name):
                (writes if is_output else reads).append(a)
        else:
            scalars.append(f"{name}={value!r}")
    details = f"dim={dim}" + (f"; {', '.join(scalars)}" if scalars else "")
    signature = (id(kernel), str(dim), *(
        _array_key(v) if isinstance(v, array) else repr(v) for v in values))
    return _Op(kernel.__name__, reads, writes, details, signature)


def _func_op(func: Any) -> _Op:
    info = getattr(func, "_kc_graph", None)
    if info is None:
        name = getattr(func, "__qualname__", "function")
        return _Op(name, [], [], "recorded function", (id(func),))
    label, reads, writes = info
    signature = (label, *(_array_key(a) for a in (*reads, *writes)))
    return _Op(label, list(reads), list(writes), label, signature)


def _scoped(tape: Any, ignore_scopes: bool) -> _Group:
    """The recorded operations as a tree of scopes."""
    root = _Group(None)
    stack = [root]
    marks = [] if ignore_scopes else sorted(
        ((index, k, name) for k, (index, name, _) in enumerate(tape.scopes)),
        key=lambda m: (m[0], m[1]))
    m = 0
    for index, entry in enumerate([*tape.launches, None]):
        while m < len(marks) and marks[m][0] == index:
            name = marks[m][2]
            if name is not None:
                group = _Group(name)
                stack[-1].items.append(group)
                stack.append(group)
            elif len(stack) > 1:
                stack.pop()
            m += 1
        if entry is not None:
            stack[-1].items.append(_func_op(entry) if callable(entry) else _launch_op(entry))
    return root


def _signature(item: Any) -> tuple:
    if isinstance(item, _Op):
        return item.signature
    return (item.name, item.repeat, *(_signature(i) for i in item.items))


def _compress(items: list[Any]) -> list[Any]:
    """Runs of a repeated item or sequence of items become one `_Group` with `repeat`."""
    for item in items:
        if isinstance(item, _Group):
            item.items = _compress(item.items)
    sigs = [_signature(i) for i in items]
    out: list[Any] = []
    i = 0
    while i < len(items):
        best_len, best_count = 1, 1
        for length in range(1, (len(items) - i) // 2 + 1):
            count = 1
            while sigs[i + count * length:i + (count + 1) * length] == sigs[i:i + length]:
                count += 1
            if count > 1 and count * length > best_count * best_len:
                best_len, best_count = length, count
        if best_count > 1:
            out.append(_Group(None, items[i:i + best_len], best_count))
        else:
            out.append(items[i])
        i += best_len * best_count
    return out


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Writer:
    """Emits the dot lines: launch nodes in their clusters, then array nodes and edges."""

    def __init__(self, names: dict[tuple, str], hide_readonly: bool,
                 tracked: set[tuple]) -> None:
        self.names = names
        self.hide_readonly = hide_readonly
        self.tracked = tracked
        self.lines: list[str] = []
        self.arrays: dict[tuple, array] = {}
        self.written: set[tuple] = set()
        self.edges: list[tuple[str, str, bool]] = []  # (from, to, from an array)
        self.clusters = 0
        self.ops = 0

    def group(self, group: _Group, indent: str) -> None:
        for item in group.items:
            if isinstance(item, _Op):
                self.op(item, indent)
                continue
            self.clusters += 1
            label = item.name if item.repeat == 1 else f"repeated {item.repeat}x"
            style = "rounded" if item.repeat == 1 else "dashed,rounded"
            self.lines.append(f"{indent}subgraph cluster_{self.clusters} {{")
            self.lines.append(f"{indent}    label={_quote(label)}; style={_quote(style)};")
            self.group(item, indent + "    ")
            self.lines.append(f"{indent}}}")

    def op(self, op: _Op, indent: str) -> None:
        node = f"op{self.ops}"
        self.ops += 1
        self.lines.append(f"{indent}{node} [label={_quote(op.label)}, shape=box, "
                          f"style=\"rounded,filled\", fillcolor=\"#e8f0fe\", "
                          f"tooltip={_quote(op.details)}];")
        for a in op.reads:
            self.edges.append((self.node_of(a), node, True))
        for a in op.writes:
            self.written.add(_array_key(a))
            self.edges.append((node, self.node_of(a), False))

    def node_of(self, a: array) -> str:
        key = _array_key(a)
        self.arrays.setdefault(key, a)
        return f"arr{list(self.arrays).index(key)}"

    def finish(self, indent: str) -> None:
        hidden = set()
        for k, (key, a) in enumerate(self.arrays.items()):
            if self.hide_readonly and key not in self.written and key not in self.tracked:
                hidden.add(f"arr{k}")
                continue
            name = self.names.get(key, f"a{k}")
            tooltip = f"array: dtype={a.dtype!r}, shape={a.shape}"
            self.lines.append(f"{indent}arr{k} [label={_quote(name)}, shape=ellipse, "
                              f"tooltip={_quote(tooltip)}];")
        for source, target, from_array in self.edges:
            if (source if from_array else target) not in hidden:
                self.lines.append(f"{indent}{source} -> {target};")


def _frame_names(frame: types.FrameType | None, longest: bool) -> dict[tuple, str]:
    """Names of the arrays (and struct fields) the caller's variables hold."""
    names: dict[tuple, str] = {}
    if frame is None:
        return names
    for scope in (frame.f_globals, frame.f_locals):
        for var, value in list(scope.items()):
            found = [(var, value)] if isinstance(value, array) else _struct_arrays(value, var)
            for name, a in found:
                if a.ptr is None:
                    continue
                key = _array_key(a)
                old = names.get(key)
                if old is None or (len(name) > len(old)) == longest and len(name) != len(old):
                    names[key] = name
    return names


def tape_dot(tape: Any, filename: str | None = None, simplify_graph: bool = True,
             hide_readonly_arrays: bool = False, array_labels: dict | None = None,
             choose_longest_node_name: bool = True, ignore_graph_scopes: bool = False,
             track_inputs: Sequence[array] | None = None,
             track_outputs: Sequence[array] | None = None,
             track_input_names: Sequence[str] | None = None,
             track_output_names: Sequence[str] | None = None,
             graph_direction: str = "LR", frame: types.FrameType | None = None) -> str:
    """The dot code of `tape`'s recorded operations (see `Tape.visualize`)."""
    names = _frame_names(frame, choose_longest_node_name)
    tracked: set[tuple] = set()
    for arrays, labels in ((track_inputs or (), track_input_names or ()),
                           (track_outputs or (), track_output_names or ())):
        for k, a in enumerate(arrays):
            tracked.add(_array_key(a))
            if k < len(labels):
                names[_array_key(a)] = labels[k]
    for a, label in (array_labels or {}).items():
        names[_array_key(a)] = label
    root = _scoped(tape, ignore_graph_scopes)
    if simplify_graph:
        root.items = _compress(root.items)
    writer = _Writer(names, hide_readonly_arrays, tracked)
    writer.group(root, "    ")
    for a in (*(track_inputs or ()), *(track_outputs or ())):
        writer.node_of(a)
    writer.finish("    ")
    code = "\n".join([
        'digraph "tape" {',
        '    graph [fontname="Helvetica,Arial,sans-serif", tooltip=" "];',
        '    node [fontname="Helvetica,Arial,sans-serif", margin="0.05,0.02"];',
        f"    rankdir={graph_direction};",
        *writer.lines,
        "}",
        "",
    ])
    if filename is not None:
        with open(filename, "w") as out:
            out.write(code)
    return code

"""Runs generated CUDA-C on the host: the grid emulated by a g++-compiled driver.

`build(source)` compiles a `CudaSource` unchanged, together with a small generated driver,
into a shared library (`g++ -O1 -shared -fPIC -std=c++17`, cached by source hash for the
test session) and returns a `HostKernel`; `HostKernel.launch` packs the arguments with the
emitter's own parameter layout (so the layout is tested too), runs every block and thread
of the grid, and returns the debug error record if a check failed.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import math
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.codegen.cuda import CudaSource
from kernelc.codegen.cuda_layout import ArrayArg
from kernelc.codegen.cuda_types import member
from kernelc.types_vec import HostValue

HEADER = Path(__file__).with_name("kc_host.h")
CXX = os.environ.get("CXX", "g++")
CXXFLAGS = ("-O1", "-shared", "-fPIC", "-std=c++17", "-pthread", "-Werror=return-type")

_cache: dict[str, HostKernel] = {}
_lock = threading.Lock()
_build_dir: list[Path] = []


@dataclass(frozen=True)
class ErrorRecord:
    """The `kc_error` record a failed debug check writes."""

    code: int
    check_id: int
    ndim: int
    index: tuple[int, ...]
    shape: tuple[int, ...]


def driver_source(source: CudaSource) -> str:
    """The source compiled on the host: the CUDA-C unchanged, then `kc_host_run`, which
    unpacks the packed argument buffer and runs the grid."""
    fields = source.params.fields
    unpack = []
    for i, f in enumerate(fields):
        unpack.append(f"    {f.c_type} a{i};\n    memcpy(&a{i}, args + {f.offset}, sizeof(a{i}));")
        unpack.append(
            f"    static_assert(sizeof({f.c_type}) == {f.size} && alignof({f.c_type}) == "
            f'{f.align}, "parameter {f.name}: the layout description disagrees with C++");'
        )
        if isinstance(f.type, T.StructType):  # each field where kernelc.types puts it
            unpack.extend(
                f"    static_assert(offsetof({f.c_type}, {member(f.type, k)[1:]}) == {off}, "
                f'"parameter {f.name}: field {name}");'
                for k, ((name, _), off) in enumerate(zip(f.type.fields, f.type.offsets))
            )
    call_args = ", ".join(f"a{i}" for i in range(len(fields)))
    return f"""#include <pthread.h>
#include <stddef.h>
{source.text}
extern "C" int kc_host_run(const char* args, long long grid, int block, int workers) {{
{chr(10).join(unpack)}
    auto run = [&](int worker) {{
        gridDim.x = (unsigned int)grid;
        blockDim.x = (unsigned int)block;
        for (long long b = worker; b < grid; b += workers) {{
            blockIdx.x = (unsigned int)b;
            for (int t = 0; t < block; ++t) {{
                threadIdx.x = (unsigned int)t;
                {source.entry}({call_args});
            }}
        }}
    }};
    struct Task {{ decltype(run)* run; int worker; }};
    Task tasks[64];
    pthread_t threads[64];
    workers = workers < 1 ? 1 : (workers > 64 ? 64 : workers);
    for (int w = 0; w < workers; ++w) {{
        tasks[w] = Task{{&run, w}};
        pthread_create(&threads[w], nullptr, [](void* task) -> void* {{
            ((Task*)task)->run[0](((Task*)task)->worker);
            return nullptr;
        }}, &tasks[w]);
    }}
    for (int w = 0; w < workers; ++w) pthread_join(threads[w], nullptr);
    fflush(stdout);
    return 0;
}}
"""


class HostKernel:
    """A generated kernel compiled for the host."""

    def __init__(self, source: CudaSource, library: Path):
        self.source = source
        self.library = library
        self._lib = ctypes.CDLL(str(library))
        self._run = self._lib.kc_host_run
        self._run.argtypes = [ctypes.c_char_p, ctypes.c_longlong, ctypes.c_int, ctypes.c_int]
        self._run.restype = ctypes.c_int

    def launch(self, dim: int | Sequence[int], args: Sequence[Any], *, block_dim: int = 32,
               max_blocks: int = 8, workers: int = 1) -> ErrorRecord | None:
        """Runs the kernel over `dim` threads; NumPy arrays are passed as strided views.

        Vector, matrix and struct parameters take host values (`kc.vec3(...)`, a
        `@kc.struct` instance) or their packed bytes. Fewer blocks than threads are launched (at most `max_blocks`), so the grid-stride
        loop is exercised; `workers` > 1 runs blocks on several host threads at once.
        """
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        size = math.prod(dims)
        if size == 0:
            return None
        error = np.zeros(10, dtype=np.int64)  # 80 bytes, the size of kc_error
        values = [  # host vectors / matrices (`kc.vec3(...)`) are values, not arrays
            ArrayArg(a.ctypes.data, a.shape, a.strides)
            if isinstance(a, np.ndarray) and not isinstance(a, HostValue) else a
            for a in args
        ]
        packed = self.source.params.pack(dims, error.ctypes.data, values)
        grid = max(1, min(-(-size // block_dim), max_blocks))
        self._run(packed, grid, block_dim, workers)
        head = error[:2].view(np.int32)
        if head[0] == 0:
            return None
        ndim = int(head[2])
        index = tuple(int(x) for x in error[2:2 + ndim])
        shape = tuple(int(x) for x in error[6:6 + ndim])
        return ErrorRecord(int(head[0]), int(head[1]), ndim, index, shape)


def _directory() -> Path:
    if not _build_dir:
        path = Path(tempfile.mkdtemp(prefix="kc_cuda_host_"))
        # The libraries stay loaded until exit; remove them then, not per test.
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _build_dir.append(path)
    return _build_dir[0]


def build(source: CudaSource) -> HostKernel:
    """The host build of `source` (compiled once per distinct source in a session)."""
    text = driver_source(source)
    key = hashlib.sha256((text + HEADER.read_text()).encode()).hexdigest()[:20]
    with _lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    directory = _directory()
    cpp = directory / f"{key}.cpp"
    lib = directory / f"{key}.so"
    cpp.write_text(text)
    command = [CXX, *CXXFLAGS, f"-I{HEADER.parent}", '-DKC_HOST_EMULATION="kc_host.h"',
               str(cpp), "-o", str(lib)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"host build of {source.entry} failed:\n{done.stderr}")
    kernel = HostKernel(source, lib)
    with _lock:
        _cache[key] = kernel
    return kernel


def build_all(sources: Sequence[CudaSource]) -> list[HostKernel]:
    """Builds several sources in parallel (g++ runs in subprocesses)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        return list(pool.map(build, sources))

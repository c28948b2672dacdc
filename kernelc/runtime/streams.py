"""Streams: ordered work queues of a device, with Warp's names.

On a CUDA device a `Stream` owns a CUstream (non-blocking, so it never serialises with the
legacy default stream). Each device has a current stream, used by launches, copies, fills
and events that name none; `ScopedStream` and `set_stream` change it, and `get_stream`
returns it (initially the device's own stream, created with its context).

On the CPU, where launches run synchronously on the calling thread, a stream is an
ordering marker only: everything issued before a call has finished when the call returns,
so waiting and synchronizing have nothing to do. CPU streams exist so that code written
for streams also runs on the CPU (Warp's streams are CUDA-only).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from kernelc.runtime.context import get_runtime
from kernelc.runtime.device import Device, Devicelike, cuda_runtime, get_device
from kernelc.timing.events import Event


class Stream:
    """A device work queue.

    Args:
        device: The device (None: the current device).
        priority: The CUDA stream priority; lower numbers run first. Clamped to the range
            the device supports (0 is the default priority).
        cuda_stream: Wrap an existing CUstream (an int handle) instead of creating one; the
            stream is then not destroyed by this object.

    Attributes:
        device: The Device.
        priority: The priority asked for.
        handle: The CUstream (None on the CPU).
    """

    def __init__(self, device: Devicelike = None, priority: int = 0,
                 cuda_stream: int | None = None) -> None:
        self.device: Device = get_device(device)
        self.priority = int(priority)
        self.handle: Any = None
        self._owned = False
        if self.device.is_cpu:
            return
        cuda = cuda_runtime()
        cuda.device_info(self.device)
        if cuda_stream is not None:
            self.handle = cuda.cu.CUstream(int(cuda_stream))
            return
        low, high = cuda.call(cuda.cu.cuCtxGetStreamPriorityRange)
        # `high` is the numerically lowest (most urgent) priority.
        clamped = min(max(self.priority, high), low)
        self.handle = cuda.call(cuda.cu.cuStreamCreateWithPriority,
                                int(cuda.cu.CUstream_flags.CU_STREAM_NON_BLOCKING), clamped)
        self._owned = True

    @property
    def cuda_stream(self) -> int:
        """The CUstream handle as an int (0 on the CPU), as Warp's `Stream.cuda_stream`."""
        return int(self.handle) if self.handle is not None else 0

    def __repr__(self) -> str:
        return f"<Stream on {self.device.alias}: 0x{self.cuda_stream:x}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.device == self.device and (
            other.cuda_stream == self.cuda_stream if self.device.is_cuda else other is self)

    def __hash__(self) -> int:
        return hash((self.device.alias, self.cuda_stream if self.device.is_cuda else id(self)))

    def record_event(self, event: Event | None = None) -> Event:
        """Records `event` (a new one if None) at the current end of this stream."""
        if event is None:
            event = Event(self.device)
        event.impl.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Makes work issued to this stream from now on wait for `event`."""
        event.impl.wait(self)

    def wait_stream(self, other: Stream, event: Event | None = None) -> None:
        """Makes work issued to this stream from now on wait for the work queued on `other`."""
        self.wait_event(other.record_event(event))

    def synchronize(self) -> None:
        """Blocks until the work queued on this stream has finished."""
        if self.device.is_cuda:
            cuda = cuda_runtime()
            cuda.device_info(self.device)
            cuda.call(cuda.cu.cuStreamSynchronize, self.handle)

    @property
    def is_complete(self) -> bool:
        """Whether all the work queued on this stream has finished (never blocks)."""
        if self.device.is_cpu:
            return True
        cuda = cuda_runtime()
        (result,) = cuda.cu.cuStreamQuery(self.handle)
        if result == cuda.cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        if result != cuda.cu.CUresult.CUDA_SUCCESS:
            raise cuda.CudaError(f"cuStreamQuery failed with {cuda.error_text(result)}")
        return True

    @property
    def is_capturing(self) -> bool:
        """Whether a graph capture is recording this stream's work (on the CPU: whether a
        CPU capture is open)."""
        if self.device.is_cpu:
            return get_runtime().extras.get("capture") is not None
        cuda = cuda_runtime()
        status = cuda.call(cuda.cu.cuStreamIsCapturing, self.handle)
        return status == cuda.cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE

    def __del__(self) -> None:
        if self._owned:
            try:
                cuda_runtime().cu.cuStreamDestroy(self.handle)
            except Exception:  # interpreter shutdown
                pass


def get_stream(device: Devicelike = None) -> Stream:
    """The current stream of `device` (None: the current device)."""
    dev = get_device(device)
    rt = get_runtime()
    if dev.is_cpu:
        stream = rt.extras.get("cpu_stream")
        if stream is None:
            stream = rt.extras["cpu_stream"] = Stream(dev)
        return stream
    cuda = cuda_runtime()
    info = cuda.device_info(dev)
    if info.current_stream is None:
        # Wrap the device's own stream once, so get_stream always returns the same object.
        wrapper = getattr(info, "null_stream_object", None)
        if wrapper is None:
            wrapper = info.null_stream_object = Stream(dev, cuda_stream=int(info.null_stream))
        return wrapper
    return info.current_stream


def set_stream(stream: Stream, device: Devicelike = None, sync: bool = False) -> None:
    """Makes `stream` the current stream of its device.

    Args:
        stream: The new current stream.
        device: Must be None or the stream's device (accepted for Warp compatibility).
        sync: Make `stream` wait for the work queued on the previous current stream.
    """
    if device is not None and get_device(device) != stream.device:
        raise ValueError(f"stream is on {stream.device.alias}, not {get_device(device).alias}")
    previous = get_stream(stream.device)
    if sync and previous is not stream:
        stream.wait_stream(previous)
    if stream.device.is_cpu:
        get_runtime().extras["cpu_stream"] = stream
    else:
        cuda_runtime().device_info(stream.device).current_stream = stream


def wait_stream(other_stream: Stream, event: Event | None = None) -> None:
    """Makes the current stream of `other_stream`'s device wait for `other_stream`'s work."""
    get_stream(other_stream.device).wait_stream(other_stream, event)


def synchronize_stream(stream: Stream | None = None) -> None:
    """Blocks until the work queued on `stream` (None: the current stream) has finished."""
    (stream if stream is not None else get_stream()).synchronize()


class ScopedStream:
    """Makes a stream (and its device) current inside a ``with`` block.

    Args:
        stream: The stream; None leaves everything as it is.
        sync_enter: The stream first waits for the work of the previous current stream.
        sync_exit: The previous stream, on exit, waits for the work of this stream.
    """

    def __init__(self, stream: Stream | None, sync_enter: bool = True,
                 sync_exit: bool = False) -> None:
        self.stream = stream
        self.sync_enter = sync_enter
        self.sync_exit = sync_exit
        self._saved_stream: Stream | None = None
        self._saved_device: Any = None

    def __enter__(self) -> Stream | None:
        if self.stream is None:
            return None
        rt = get_runtime()
        self._saved_device = rt.current_device
        self._saved_stream = get_stream(self.stream.device)
        rt.current_device = self.stream.device
        set_stream(self.stream, sync=self.sync_enter)
        return self.stream

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.stream is None or self._saved_stream is None:
            return
        if self.sync_exit:
            self._saved_stream.wait_stream(self.stream)
        set_stream(self._saved_stream)
        get_runtime().current_device = self._saved_device

"""`kc.Texture1D`, `kc.Texture2D`, `kc.Texture3D`: regular grids of texels that kernels
sample with filtering and address modes (`kc.texture_sample`), as Warp's textures.

Sampling is done in software on every device, by kernelc funcs
(`kernelc.spatial.texture_lang`); a texture's texels live in one buffer on its device.
Hardware texture objects (CUDA arrays, surfaces, OpenGL interop) are not used.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kernelc import types as T
from kernelc.spatial import texture_data as td
from kernelc.spatial import texture_lang as lang
from kernelc.spatial.texture_modes import (
    TextureAddressMode,
    TextureFilterMode,
    TextureResourceFlags,
    axis_address_mode,
    filter_mode_of,
)

__all__ = ["GLTextureResource", "Texture", "Texture1D", "Texture2D", "Texture3D",
           "TextureAddressMode", "TextureFilterMode", "TextureResourceFlags"]


class Texture:
    """A 1-, 2- or 3-d texture of 1, 2 or 4 channels (use `Texture1D`, `Texture2D` or
    `Texture3D`).

    Texel types are uint8, uint16, uint32, int8, int16, int32, float16 and float32; 8- and
    16-bit integers read as normalised floats ([0, 1] unsigned, [-1, 1] signed), 32-bit
    integers as their float value (closest filtering only), floats as they are.

    Args:
        ndim (int): Number of axes, 1 to 3.
        data (Any): Texels: a NumPy array or kc.array of shape (width,), (height, width) or (depth, height, width), with a last axis of channels or a vector dtype for more than one.
        width (int): Width, when there is no data (else checked against it).
        height (int): Height, when there is no data (else checked against it).
        depth (int): Depth, when there is no data (else checked against it).
        num_channels (int): 1, 2 or 4, when there is no data (else checked against it).
        dtype (Any): Texel type, when there is no data (else checked against it).
        filter_mode (TextureFilterMode | None): Filtering within a level; default LINEAR, CLOSEST for 32-bit integers.
        address_mode (Any): Address mode of every axis, or a tuple with one per axis.
        address_mode_u (TextureAddressMode | None): Address mode of u (overrides `address_mode`).
        address_mode_v (TextureAddressMode | None): Address mode of v (overrides `address_mode`).
        address_mode_w (TextureAddressMode | None): Address mode of w (overrides `address_mode`).
        normalized_coords (bool): Coordinates in [0, 1] across the texture (True) or in texels.
        num_mip_levels (int): Mip levels, made from `data` by a 2x box filter (0: the whole chain).
        mip_filter_mode (TextureFilterMode | None): Filtering between levels (default as `filter_mode`).
        device (Any): The device to keep the texels on.
        surface_access (bool): Not supported (CUDA surfaces).
        cuda_array (int): Not supported (wrapping a CUDA array).

    Raises:
        ValueError: Inconsistent or unsupported arguments.
        NotImplementedError: `surface_access` or `cuda_array` (hardware textures).
    """

    _kc_type: Any = None  # the kernel-side record type, set by each subclass

    def __init__(self, ndim: int, data: Any = None, width: int = 0, height: int = 0,
                 depth: int = 0, num_channels: int = 0, dtype: Any = None,
                 filter_mode: TextureFilterMode | None = None,
                 address_mode: Any = TextureAddressMode.CLAMP,
                 address_mode_u: TextureAddressMode | None = None,
                 address_mode_v: TextureAddressMode | None = None,
                 address_mode_w: TextureAddressMode | None = None,
                 normalized_coords: bool = True, num_mip_levels: int = 1,
                 mip_filter_mode: TextureFilterMode | None = None, device: Any = None,
                 surface_access: bool = False, cuda_array: int = 0) -> None:
        from kernelc.runtime.device import get_device

        if ndim not in (1, 2, 3):
            raise ValueError(f"a texture has 1, 2 or 3 axes, got {ndim}")
        if surface_access or cuda_array:
            raise NotImplementedError("kernelc textures are sampled in software: CUDA surfaces "
                                      "and external CUDA arrays are not supported")
        self._ndim = ndim
        self.device = get_device(device)
        size = [width, height if ndim > 1 else 1, depth if ndim > 2 else 1]
        source = None
        if data is not None:
            given, num_channels, dtype, source = self._check_data(data, ndim, size,
                                                                  num_channels, dtype)
            size = list(given)
        for axis in range(ndim):
            if not isinstance(size[axis], (int, np.integer)) or size[axis] <= 0:
                name = ("width", "height", "depth")[axis]
                raise ValueError(f"texture {name} must be a positive integer, got {size[axis]!r}")
        if num_channels not in (1, 2, 4):
            raise ValueError(f"texture num_channels must be 1, 2 or 4, got {num_channels!r}")
        self._size: td.Shape = tuple(int(n) for n in size)  # type: ignore[assignment]
        self._num_channels = int(num_channels)
        self._dtype = td.storage_type(float if dtype is None else dtype)
        self._modes(filter_mode, mip_filter_mode, address_mode,
                    (address_mode_u, address_mode_v, address_mode_w), normalized_coords)
        self._mip_shapes = td.mip_shapes(self._size, ndim, int(num_mip_levels))
        if self.is_mipmapped and source is None:
            raise ValueError("a mipmapped texture needs its data at construction")
        if self.is_mipmapped and self._dtype in (T.int32, T.uint32) \
                and self._mip_filter_mode != TextureFilterMode.CLOSEST:
            raise ValueError("mipmapped 32-bit integer textures need "
                             "mip_filter_mode=TextureFilterMode.CLOSEST")
        self._allocate(source)

    @staticmethod
    def _check_data(data: Any, ndim: int, size: list[int], num_channels: int,
                    dtype: Any) -> tuple[td.Shape, int, Any, Any]:
        given, channels, scalar, source = td.describe(data, ndim)
        for axis in range(ndim):
            if size[axis] and size[axis] != given[axis]:
                name = ("width", "height", "depth")[axis]
                raise ValueError(f"texture {name} {size[axis]} does not match the data's "
                                 f"{given[axis]}")
        if num_channels and num_channels != channels:
            raise ValueError(f"texture num_channels {num_channels} does not match the data's "
                             f"{channels}")
        if dtype is not None and td.storage_type(dtype) != scalar:
            raise ValueError(f"texture dtype {dtype!r} does not match the data's {scalar!r}")
        return given, channels, scalar, source

    def _modes(self, filter_mode: Any, mip_filter_mode: Any, address_mode: Any,
               axis_modes: tuple[Any, Any, Any], normalized_coords: bool) -> None:
        integer = self._dtype in (T.int32, T.uint32)
        default = TextureFilterMode.CLOSEST if integer else TextureFilterMode.LINEAR
        self._filter_mode = filter_mode_of(filter_mode, "filter mode")
        if self._filter_mode is None:
            self._filter_mode = default
        self._mip_filter_mode = filter_mode_of(mip_filter_mode, "mip filter mode")
        if self._mip_filter_mode is None:
            self._mip_filter_mode = default
        if integer and self._filter_mode != TextureFilterMode.CLOSEST:
            raise ValueError("32-bit integer textures need filter_mode=TextureFilterMode.CLOSEST")
        self._address_modes = tuple(
            axis_address_mode(address_mode, axis_modes[axis], axis) if axis < self._ndim
            else TextureAddressMode.CLAMP for axis in range(3))
        self._normalized_coords = bool(normalized_coords)

    def _allocate(self, source: Any) -> None:
        from kernelc.runtime.array import array

        offsets, nbytes = td.layout(self._mip_shapes, self._num_channels, self._dtype)
        self._offsets = offsets
        levels = None
        if source is not None:
            base = np.ascontiguousarray(source.numpy()).view(self._dtype.np_dtype)
            base = base.reshape(td.array_shape(self._size, self._ndim, self._num_channels))
            levels = td.mip_chain(base, self._mip_shapes, self._ndim)
        self._buffer = array(td.host_buffer(offsets, nbytes, levels), dtype=T.uint8,
                             device=self.device)

    # ---- the kernel-side record (see texture_lang): read by launches and struct packing ----

    @property
    def id(self) -> int:
        """The address of the texture's buffer (what kernels receive as the record's `id`)."""
        return self._buffer.ptr

    @property
    def dtype_code(self) -> int:
        """The texel format code kernels read (`kernelc.spatial.texture_lang`)."""
        return td.FORMATS[self._dtype]

    def numpy_value(self) -> np.void:
        """The kernel-side record of this texture, as one element of a NumPy structured
        array (used to build arrays of textures)."""
        from kernelc.frontend.struct import numpy_dtype, struct_bytes

        kc_type = type(self)._kc_type
        return np.frombuffer(struct_bytes(kc_type, self), numpy_dtype(kc_type))[0]

    # ---- properties ---------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        """Number of axes (1, 2 or 3)."""
        return self._ndim

    @property
    def width(self) -> int:
        """Width in texels."""
        return self._size[0]

    @property
    def height(self) -> int:
        """Height in texels (1 for 1-d textures)."""
        return self._size[1]

    @property
    def depth(self) -> int:
        """Depth in texels (1 for 1- and 2-d textures)."""
        return self._size[2]

    @property
    def num_channels(self) -> int:
        """Number of channels (1, 2 or 4)."""
        return self._num_channels

    @property
    def dtype(self) -> Any:
        """The texel type (`kc.float32`, `kc.uint8`, ...)."""
        return self._dtype

    @property
    def filter_mode(self) -> TextureFilterMode:
        """Filtering within a mip level."""
        return self._filter_mode

    @property
    def mip_filter_mode(self) -> TextureFilterMode:
        """Filtering between mip levels."""
        return self._mip_filter_mode

    @property
    def num_mip_levels(self) -> int:
        """Number of mip levels (1: not mipmapped)."""
        return len(self._mip_shapes)

    @property
    def is_mipmapped(self) -> bool:
        """Whether the texture has more than one mip level."""
        return len(self._mip_shapes) > 1

    @property
    def address_mode_u(self) -> TextureAddressMode:
        """Address mode of u."""
        return self._address_modes[0]

    @property
    def address_mode_v(self) -> TextureAddressMode:
        """Address mode of v (CLAMP for 1-d textures)."""
        return self._address_modes[1]

    @property
    def address_mode_w(self) -> TextureAddressMode:
        """Address mode of w (CLAMP for 1- and 2-d textures)."""
        return self._address_modes[2]

    @property
    def normalized_coords(self) -> bool:
        """Whether coordinates are normalised to [0, 1] (else in texels)."""
        return self._normalized_coords

    @property
    def cuda_array(self) -> int:
        """Not available: kernelc textures are not backed by CUDA arrays."""
        raise RuntimeError("kernelc textures are sampled in software and have no CUDA array")

    @property
    def cuda_texture(self) -> int:
        """Not available: kernelc textures are not CUDA texture objects (use `id`)."""
        raise RuntimeError("kernelc textures are sampled in software and have no CUDA "
                           "texture object; use `id`")

    @property
    def cuda_surface(self) -> int:
        """Not available: kernelc textures have no CUDA surface."""
        raise RuntimeError("kernelc textures are sampled in software and have no CUDA surface")

    # ---- copies ---------------------------------------------------------------------------

    def _texels(self) -> Any:
        """The base level's texels as a 1-d array of bytes on the texture's device."""
        offset = self._offsets[0]
        nbytes = int(np.prod(self._size)) * self._num_channels * self._dtype.size
        return self._buffer[offset:offset + nbytes]

    def _matching(self, other: Any, role: str) -> Any:
        """`other` (texture, NumPy array or kc.array) as bytes of the same layout."""
        from kernelc.runtime.array import array

        if self.is_mipmapped:
            raise RuntimeError("the texels of a mipmapped texture cannot be copied in or out")
        shape = td.array_shape(self._size, self._ndim, self._num_channels)
        if isinstance(other, Texture):
            if other._size != self._size or other._dtype != self._dtype \
                    or other._num_channels != self._num_channels:
                raise ValueError(f"incompatible textures: {role} of {other._describe()} for "
                                 f"{self._describe()}")
            return other._texels()
        if not isinstance(other, (np.ndarray, array)):
            raise ValueError(f"expected a texture, a NumPy array or a kc.array, got "
                             f"{type(other).__name__}")
        contiguous = (other.is_contiguous if isinstance(other, array)
                      else other.flags.c_contiguous or role == "source")
        if not contiguous:  # a NumPy source is copied first, a destination cannot be
            raise ValueError(f"the {role} array must be contiguous")
        size, channels, scalar, data = td.describe(other, self._ndim)
        if size != self._size or channels != self._num_channels or scalar != self._dtype:
            raise ValueError(f"incompatible array: {role} of shape {other.shape} and type "
                             f"{scalar!r} for {self._describe()} (shape {shape})")
        return array(ptr=data.ptr, dtype=T.uint8, shape=data.size * data.dtype.size,
                     device=data.device)

    def _describe(self) -> str:
        size = "x".join(str(n) for n in self._size[:self._ndim])
        return f"a {size} texture of {self._num_channels} {self._dtype!r} channel(s)"

    def copy_from(self, src: Any) -> None:
        """Copies texels in from `src`: a texture, a NumPy array or a kc.array (any device)
        of the texture's shape and dtype.

        Args:
            src (Any): Texels to copy in.
        """
        from kernelc.runtime.memory import copy

        copy(self._texels(), self._matching(src, "source"))

    def copy_to(self, dst: Any) -> None:
        """Copies the texels out to `dst`: a texture, a NumPy array or a kc.array (any
        device) of the texture's shape and dtype.

        Args:
            dst (Any): Where to copy the texels.
        """
        from kernelc.runtime.memory import copy

        copy(self._matching(dst, "destination"), self._texels())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._describe()} on {self.device})"


class Texture1D(Texture):
    """A 1-d texture; `Texture` describes the arguments (there is no height or depth).

    In kernels it is the type of a parameter or struct field, with `.width`.
    """

    _kc_type: ClassVar[Any] = lang.View1D._kc_type

    def __init__(self, data: Any = None, width: int = 0, num_channels: int = 0,
                 dtype: Any = None, filter_mode: TextureFilterMode | None = None,
                 address_mode: Any = TextureAddressMode.CLAMP,
                 address_mode_u: TextureAddressMode | None = None,
                 normalized_coords: bool = True, num_mip_levels: int = 1,
                 mip_filter_mode: TextureFilterMode | None = None, device: Any = None,
                 surface_access: bool = False, cuda_array: int = 0) -> None:
        super().__init__(1, data, width, 1, 1, num_channels, dtype, filter_mode, address_mode,
                         address_mode_u, None, None, normalized_coords, num_mip_levels,
                         mip_filter_mode, device, surface_access, cuda_array)


class Texture2D(Texture):
    """A 2-d texture; `Texture` describes the arguments (there is no depth).

    In kernels it is the type of a parameter or struct field, with `.width` and `.height`.
    """

    _kc_type: ClassVar[Any] = lang.View2D._kc_type

    def __init__(self, data: Any = None, width: int = 0, height: int = 0,
                 num_channels: int = 0, dtype: Any = None,
                 filter_mode: TextureFilterMode | None = None,
                 address_mode: Any = TextureAddressMode.CLAMP,
                 address_mode_u: TextureAddressMode | None = None,
                 address_mode_v: TextureAddressMode | None = None,
                 normalized_coords: bool = True, num_mip_levels: int = 1,
                 mip_filter_mode: TextureFilterMode | None = None, device: Any = None,
                 surface_access: bool = False, cuda_array: int = 0) -> None:
        super().__init__(2, data, width, height, 1, num_channels, dtype, filter_mode,
                         address_mode, address_mode_u, address_mode_v, None, normalized_coords,
                         num_mip_levels, mip_filter_mode, device, surface_access, cuda_array)


class Texture3D(Texture):
    """A 3-d texture; `Texture` describes the arguments.

    In kernels it is the type of a parameter or struct field, with `.width`, `.height` and
    `.depth`.
    """

    _kc_type: ClassVar[Any] = lang.View3D._kc_type

    def __init__(self, data: Any = None, width: int = 0, height: int = 0, depth: int = 0,
                 num_channels: int = 0, dtype: Any = None,
                 filter_mode: TextureFilterMode | None = None,
                 address_mode: Any = TextureAddressMode.CLAMP,
                 address_mode_u: TextureAddressMode | None = None,
                 address_mode_v: TextureAddressMode | None = None,
                 address_mode_w: TextureAddressMode | None = None,
                 normalized_coords: bool = True, num_mip_levels: int = 1,
                 mip_filter_mode: TextureFilterMode | None = None, device: Any = None,
                 surface_access: bool = False, cuda_array: int = 0) -> None:
        super().__init__(3, data, width, height, depth, num_channels, dtype, filter_mode,
                         address_mode, address_mode_u, address_mode_v, address_mode_w,
                         normalized_coords, num_mip_levels, mip_filter_mode, device,
                         surface_access, cuda_array)


class GLTextureResource:
    """Warp's OpenGL texture interop: not supported by kernelc (it raises)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("kernelc has no OpenGL interop: GLTextureResource is not "
                                  "supported")

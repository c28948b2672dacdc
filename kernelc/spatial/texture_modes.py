"""The modes of `kc.Texture1D/2D/3D`: filtering, addressing (Warp's enums), and how a
texture's constructor arguments resolve to them."""

from __future__ import annotations

import enum
from typing import Any

from kernelc.spatial import texture_lang as lang


class TextureFilterMode(enum.IntEnum):
    """How a texture is filtered within a mip level, and between levels."""

    CLOSEST = lang.CLOSEST
    """The nearest texel (point sampling)."""
    LINEAR = lang.LINEAR
    """Linear, bilinear or trilinear interpolation of the neighbouring texels."""


class TextureAddressMode(enum.IntEnum):
    """What a coordinate outside the texture reads, per axis."""

    WRAP = lang.WRAP
    """The texture repeats."""
    CLAMP = lang.CLAMP
    """The edge texel."""
    MIRROR = lang.MIRROR
    """The texture repeats, every other copy mirrored."""
    BORDER = lang.BORDER
    """Zero."""


class TextureResourceFlags(enum.IntEnum):
    """Warp's flags for registering graphics resources (kept for code that names them)."""

    NONE = 0x00
    READ_ONLY = 0x01
    WRITE_DISCARD = 0x02
    SURFACE_LDST = 0x04
    TEXTURE_GATHER = 0x08


def filter_mode_of(value: Any, what: str) -> TextureFilterMode | None:
    """`value` as a filter mode (None stays None: the texel type's default applies).

    Raises:
        ValueError: `value` is not a filter mode (`what` names the argument).
    """
    if value is None:
        return None
    try:
        return TextureFilterMode(value)
    except (TypeError, ValueError):
        raise ValueError(f"invalid texture {what}: {value!r} (use kc.TextureFilterMode)"
                         ) from None


def axis_address_mode(mode: Any, axis_mode: Any, axis: int) -> TextureAddressMode:
    """The address mode of one axis: its own, else the shared one (an int, or a tuple with
    one per axis).

    Raises:
        ValueError: The mode is not an address mode.
    """
    if axis_mode is None:
        axis_mode = mode
        if isinstance(mode, tuple):
            axis_mode = mode[axis] if axis < len(mode) else TextureAddressMode.CLAMP
    if axis_mode is None:
        return TextureAddressMode.CLAMP
    try:
        return TextureAddressMode(axis_mode)
    except (TypeError, ValueError):
        raise ValueError(f"invalid texture address mode for axis {'uvw'[axis]}: {axis_mode!r} "
                         f"(use kc.TextureAddressMode)") from None

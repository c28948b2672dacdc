"""Kernels that misuse textures, for the error tests of tests/test_texture.py (each fails
to compile when it is first launched; the tests pin the reported line and column)."""

import kernelc as wp


@wp.kernel
def vec3_for_2d(tex: wp.Texture2D, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, wp.vec3(0.5, 0.5, 0.5), dtype=float)


@wp.kernel
def int_coordinate(tex: wp.Texture1D, out: wp.array(dtype=float)):
    i = wp.tid()
    out[0] = wp.texture_sample(tex, i, dtype=float)


@wp.kernel
def double_coordinates(tex: wp.Texture2D, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, wp.vec2d(0.5, 0.5), dtype=float)


@wp.kernel
def vec3_result(tex: wp.Texture3D, out: wp.array(dtype=wp.vec3)):
    out[0] = wp.texture_sample(tex, 0.5, 0.5, 0.5, dtype=wp.vec3)


@wp.kernel
def not_a_texture(tex: wp.uint64, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, 0.5, dtype=float)


@wp.kernel
def missing_dtype(tex: wp.Texture1D, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, 0.5)


@wp.kernel
def unknown_keyword(tex: wp.Texture2D, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, wp.vec2(0.5, 0.5), dtype=float, level=1.0)


@wp.kernel
def double_lod(tex: wp.Texture1D, out: wp.array(dtype=float)):
    out[0] = wp.texture_sample(tex, 0.5, dtype=float, lod=wp.float64(1.0))

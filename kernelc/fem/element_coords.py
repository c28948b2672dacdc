"""The coordinates of world points in elements: `fem.element_coordinates(domain, e, x)` (the
element coordinates whose position is x, possibly outside the element) and
`fem.element_closest_point(domain, e, x)` (the element's closest point to x and the squared
distance), per geometry as Warp computes them:

- grids: closed forms (cells: x divided by the cell size, less the cell's corner; sides:
  the coordinate along the side, in 3-d as Warp projects it, clamping coordinates to the
  cell's sizes);
- triangle and tetrahedron meshes: one linear step from the element's centre (their maps
  are affine) and the simplex projections of `closest_point.py`; quadrilateral mesh sides
  likewise (straight edges, segment projection);
- quadrilateral mesh cells, hexahedral meshes (linear steps for parallelepiped cells) and
  deformed geometries: Newton steps from the centre, then projected gradient steps, with
  Warp's iteration counts and tolerances.
"""

from typing import Any

import kernelc as kc
from kernelc.fem.closest_point import closest_point_funcs
from kernelc.fem.element import Element
from kernelc.fem.types import make_free_sample, vec_type

# Warp's iteration counts and tolerances (squared coordinate steps), per scalar size.
_ITERATIONS = {4: 24, 8: 48}
_EPS = {4: 2.0 ** -20, 8: 2.0 ** -44}


def coordinates_func(geo: Any, side: bool) -> Any:
    """(element arg, element index, position) -> element coordinates."""
    from kernelc.fem.grid2d import Grid2D
    from kernelc.fem.grid3d import Grid3D

    if isinstance(geo, Grid2D):
        return _grid2d_side_coordinates(geo) if side else _grid_cell_coordinates(geo, 2)
    if isinstance(geo, Grid3D):
        return _grid3d_side_coordinates(geo) if side else _grid_cell_coordinates(geo, 3)
    if hasattr(geo, "cell_coordinates"):  # geometries with closed forms of their own
        return geo.side_coordinates if side else geo.cell_coordinates
    return _generic_coordinates(geo, side, _is_linear(geo, side))


def closest_point_func(geo: Any, side: bool) -> Any:
    """(element arg, element index, position) -> (coordinates of the closest point, squared
    distance)."""
    from kernelc.fem.grid2d import Grid2D
    from kernelc.fem.grid3d import Grid3D

    if isinstance(geo, Grid2D):
        return _grid2d_side_closest(geo) if side else _grid_cell_closest(geo, 2)
    if isinstance(geo, Grid3D):
        return _grid3d_side_closest(geo) if side else _grid_cell_closest(geo, 3)
    if hasattr(geo, "cell_closest_point"):
        return geo.side_closest_point if side else geo.cell_closest_point
    simplex = _simplex_closest(geo, side)
    if simplex is not None:
        return simplex
    return _generic_closest(geo, side, _generic_coordinates(geo, side, _is_linear(geo, side)))


def _is_linear(geo: Any, side: bool) -> bool:
    """Whether Warp takes the element map for affine (one linear step)."""
    from kernelc.fem.hexmesh import Hexmesh
    from kernelc.fem.quadmesh import Quadmesh
    from kernelc.fem.tetmesh import Tetmesh
    from kernelc.fem.trimesh import Trimesh

    if geo.base is not geo:  # deformed geometries
        return False
    if isinstance(geo, (Trimesh, Tetmesh)):
        return True
    if isinstance(geo, Quadmesh):
        return side
    if isinstance(geo, Hexmesh):
        return bool(geo.parallelepiped_cells)
    return False


def _parts(geo: Any, side: bool) -> tuple:
    """(reference element, position func, deformation gradient func) of cells or sides."""
    if side:
        return geo.reference_side(), geo.side_position, geo.side_deformation_gradient
    return geo.reference_cell(), geo.cell_position, geo.cell_deformation_gradient


def _coord_delta(element: Element, scalar: Any) -> Any:
    """(reference-space step) -> the step in element coordinates."""
    Coords = vec_type(3, scalar)
    zero = scalar(0.0)
    if element == Element.LINE_SEGMENT:
        @kc.func
        def segment_delta(d: Any):
            return Coords(d[0], zero, zero)

        return segment_delta
    if element == Element.TRIANGLE:
        @kc.func
        def triangle_delta(d: Any):
            return Coords(-d[0] - d[1], d[0], d[1])

        return triangle_delta
    if element == Element.SQUARE:
        @kc.func
        def square_delta(d: Any):
            return Coords(d[0], d[1], zero)

        return square_delta

    @kc.func
    def solid_delta(d: Any):
        return Coords(d[0], d[1], d[2])

    return solid_delta


def _inverse_gradient(geo: Any, side: bool) -> Any:
    """(element arg, s) -> the (pseudo-)inverse of the element's deformation gradient: the
    cells' own; on sides, F / |F|^2 for edges, (F^T F)^-1 F^T for faces."""
    if not side:
        return geo.cell_inverse_deformation_gradient
    gradient = geo.side_deformation_gradient
    if geo.reference_side().dimension == 1:
        @kc.func
        def edge_inverse(arg: Any, s: Any):
            F = gradient(arg, s)
            return F / kc.dot(F, F)  # the single row of the pseudo-inverse

        return edge_inverse

    @kc.func
    def face_inverse(arg: Any, s: Any):
        F = gradient(arg, s)
        Ft = kc.transpose(F)
        return kc.inverse(Ft * F) * Ft

    return face_inverse


def _apply_inverse(edge: bool, scalar: Any) -> Any:
    """(inverse, vector) -> the reference-space step (a 1-vector for edges)."""
    vec1 = vec_type(1, scalar)
    if edge:
        @kc.func
        def edge_step(inverse: Any, v: Any):
            return vec1(kc.dot(inverse, v))

        return edge_step

    @kc.func
    def matrix_step(inverse: Any, v: Any):
        return inverse * v

    return matrix_step


def _generic_coordinates(geo: Any, side: bool, linear: bool) -> Any:
    element, position, _ = _parts(geo, side)
    scalar = geo.scalar_type
    center = geo.coords_type(*element.center)
    inverse = _inverse_gradient(geo, side)
    step = _apply_inverse(side and element.dimension == 1, scalar)
    delta = _coord_delta(element, scalar)
    size = 8 if scalar == kc.float64 else 4
    iterations, eps = _ITERATIONS[size], scalar(_EPS[size])

    @kc.func
    def linear_coordinates(arg: Any, element_index: int, pos: Any):
        s = make_free_sample(element_index, center)
        d = step(inverse(arg, s), pos - position(arg, s))
        return center + delta(d)

    @kc.func
    def newton_coordinates(arg: Any, element_index: int, pos: Any):
        coords = center
        for _k in range(iterations):
            s = make_free_sample(element_index, coords)
            d = step(inverse(arg, s), pos - position(arg, s))
            if kc.length_sq(d) < eps:
                break
            coords = coords + delta(d)
        return coords

    return linear_coordinates if linear else newton_coordinates


def _project(element: Element, scalar: Any) -> Any:
    """Coordinates -> the nearest coordinates inside the element (Warp's projections)."""
    Coords = vec_type(3, scalar)
    zero, one, half = scalar(0.0), scalar(1.0), scalar(0.5)

    @kc.func
    def clamp_box(v: Any):
        return kc.min(kc.max(v, Coords(zero)), Coords(one))

    if element == Element.TRIANGLE:
        @kc.func
        def onto_triangle(v: Any):
            n = kc.max(zero, (v[0] + v[1] - one) * half)
            a = kc.clamp(v[0] - n, zero, one)
            b = kc.clamp(v[1] - n, zero, one)
            return Coords(a, b, one - (a + b))

        return onto_triangle
    if element == Element.TETRAHEDRON:
        third = scalar(1.0 / 3.0)

        @kc.func
        def onto_tetrahedron(v: Any):
            # the half-space l1 + l2 + l3 <= 1, then the three edges' ones, then the cube
            n = kc.max(zero, (v[0] + v[1] + v[2] - one) * third)
            c = v - Coords(n)
            n = kc.max(zero, (c[0] + c[1] - one) * half)
            c = c - Coords(n, n, zero)
            n = kc.max(zero, (c[1] + c[2] - one) * half)
            c = c - Coords(zero, n, n)
            n = kc.max(zero, (c[2] + c[0] - one) * half)
            c = c - Coords(n, zero, n)
            return clamp_box(c)

        return onto_tetrahedron
    return clamp_box


def _generic_closest(geo: Any, side: bool, coordinates: Any) -> Any:
    element, position, gradient = _parts(geo, side)
    scalar = geo.scalar_type
    project = _project(element, scalar)
    delta = _coord_delta(element, scalar)
    edge = side and element.dimension == 1
    size = 8 if scalar == kc.float64 else 4
    iterations, eps = _ITERATIONS[size], scalar(_EPS[size])

    vec1 = vec_type(1, scalar)

    @kc.func
    def descent_step(F: Any, v: Any):
        # the gradient step of |x - pos|^2 / 2 in reference space, scaled by |F|^2
        if kc.static(edge):
            return vec1(kc.dot(v, F) / kc.dot(F, F))
        else:
            return (v * F) / kc.ddot(F, F)

    @kc.func
    def closest_point(arg: Any, element_index: int, pos: Any):
        coords = coordinates(arg, element_index, pos)
        current = coords
        x = position(arg, make_free_sample(element_index, coords))
        for _k in range(iterations):
            current = coords
            s = make_free_sample(element_index, current)
            x = position(arg, s)
            coords = project(current + delta(descent_step(gradient(arg, s), pos - x)))
            if kc.length_sq(coords - current) < eps:
                break
        return current, kc.length_sq(pos - x)

    return closest_point


def _simplex_closest(geo: Any, side: bool) -> Any:
    """Closest points on the cells and sides of triangle and tetrahedron meshes and on the
    (straight) sides of quadrilateral meshes, or None for other elements."""
    from kernelc.fem.quadmesh import Quadmesh
    from kernelc.fem.tetmesh import Tetmesh
    from kernelc.fem.trimesh import Trimesh

    if geo.base is not geo or not isinstance(geo, (Trimesh, Tetmesh, Quadmesh)):
        return None
    if isinstance(geo, Quadmesh) and not side:
        return None
    funcs = closest_point_funcs(geo.scalar_type)
    Coords = geo.coords_type
    zero = geo.scalar_type(0.0)
    tetrahedra = isinstance(geo, Tetmesh)
    if side and not tetrahedra:
        on_segment = funcs.on_segment

        @kc.func
        def edge_closest(arg: Any, side_index: int, pos: Any):
            v = arg.side_vertices[side_index]
            p0 = arg.cell_arg.positions[v[0]]
            e = arg.cell_arg.positions[v[1]] - p0
            dist, t = on_segment(pos - p0, e, kc.length_sq(e))
            return Coords(t, zero, zero), dist

        return edge_closest
    if side or not tetrahedra:
        on_triangle = funcs.on_triangle

        @kc.func
        def corners(arg: Any, index: int):
            if kc.static(side):
                v = arg.side_vertices[index]
                return (arg.cell_arg.positions[v[0]], arg.cell_arg.positions[v[1]],
                        arg.cell_arg.positions[v[2]])
            else:
                return (arg.positions[arg.cell_vertices[index, 0]],
                        arg.positions[arg.cell_vertices[index, 1]],
                        arg.positions[arg.cell_vertices[index, 2]])

        @kc.func
        def triangle_closest(arg: Any, index: int, pos: Any):
            p0, p1, p2 = corners(arg, index)
            dist, coords = on_triangle(pos - p0, p1 - p0, p2 - p0)
            return coords, dist

        return triangle_closest
    on_tetrahedron = funcs.on_tetrahedron

    @kc.func
    def tetrahedron_closest(arg: Any, cell: int, pos: Any):
        p0 = arg.positions[arg.cell_vertices[cell, 0]]
        dist, coords = on_tetrahedron(pos - p0, arg.positions[arg.cell_vertices[cell, 1]] - p0,
                                      arg.positions[arg.cell_vertices[cell, 2]] - p0,
                                      arg.positions[arg.cell_vertices[cell, 3]] - p0)
        return coords, dist

    return tetrahedron_closest


# ---- grids ---------------------------------------------------------------------------------


def _grid_cell(dimension: int) -> Any:
    """(res, cell index) -> the cell's integer position in its environment."""
    if dimension == 2:
        @kc.func
        def cell_xy(res: Any, global_cell: int):
            cell = global_cell % (res[0] * res[1])
            x = cell // res[1]
            return x, cell - res[1] * x

        return cell_xy

    @kc.func
    def cell_xyz(res: Any, global_cell: int):
        cell = global_cell % (res[0] * res[1] * res[2])
        x = cell // (res[1] * res[2])
        y = (cell - res[1] * res[2] * x) // res[2]
        return x, y, cell - res[1] * res[2] * x - res[2] * y

    return cell_xyz


def _grid_corner(geo: Any, dimension: int) -> Any:
    scalar = geo.scalar_type
    vec = vec_type(dimension, scalar)
    cell_of = _grid_cell(dimension)
    if dimension == 2:
        @kc.func
        def corner_2d(arg: Any, cell: int):
            x, y = cell_of(arg.res, cell)
            return vec(scalar(x), scalar(y))

        return corner_2d

    @kc.func
    def corner_3d(arg: Any, cell: int):
        x, y, z = cell_of(arg.res, cell)
        return vec(scalar(x), scalar(y), scalar(z))

    return corner_3d


def _grid_cell_coordinates(geo: Any, dimension: int) -> Any:
    scalar, Coords = geo.scalar_type, geo.coords_type
    corner = _grid_corner(geo, dimension)

    @kc.func
    def grid_cell_coordinates(arg: Any, cell: int, pos: Any):
        c = kc.cw_div(pos - arg.origin, arg.cell_size) - corner(arg, cell)
        if kc.static(dimension == 2):
            return Coords(c[0], c[1], scalar(0.0))
        else:
            return Coords(c[0], c[1], c[2])

    return grid_cell_coordinates


def _grid_cell_closest(geo: Any, dimension: int) -> Any:
    scalar, Coords = geo.scalar_type, geo.coords_type
    vec = vec_type(dimension, scalar)
    corner = _grid_corner(geo, dimension)

    @kc.func
    def grid_cell_closest(arg: Any, cell: int, pos: Any):
        local = pos - (kc.cw_mul(corner(arg, cell), arg.cell_size) + arg.origin)
        clamped = kc.min(kc.max(local, vec(scalar(0.0))), arg.cell_size)
        c = kc.cw_div(clamped, arg.cell_size)
        dist = kc.length_sq(local - clamped)
        if kc.static(dimension == 2):
            return Coords(c[0], c[1], scalar(0.0)), dist
        else:
            return Coords(c[0], c[1], c[2]), dist

    return grid_cell_closest


def _grid2d_side_coordinate(geo: Any) -> Any:
    from kernelc.fem.grid2d import _grid2d_funcs

    funcs = _grid2d_funcs(geo.scalar_type)
    get_side, is_flipped = funcs.get_side, funcs.is_flipped
    scalar = geo.scalar_type

    @kc.func
    def side_coordinate(arg: Any, side_index: int, pos: Any):
        # (coordinate along the side, the side's long axis)
        axis, origin = get_side(arg, side_index)
        along = 1 - axis
        cells = arg.cell_arg
        t = (pos[along] - cells.origin[along]) / cells.cell_size[along] - scalar(origin[1])
        return kc.where(is_flipped(axis, origin), scalar(1.0) - t, t), along

    return side_coordinate


def _grid2d_side_coordinates(geo: Any) -> Any:
    coordinate, Coords, zero = _grid2d_side_coordinate(geo), geo.coords_type, geo.scalar_type(0.0)

    @kc.func
    def grid2d_side_coordinates(arg: Any, side_index: int, pos: Any):
        t, along = coordinate(arg, side_index, pos)
        return Coords(t, zero, zero)

    return grid2d_side_coordinates


def _grid2d_side_closest(geo: Any) -> Any:
    coordinate, Coords, scalar = _grid2d_side_coordinate(geo), geo.coords_type, geo.scalar_type

    @kc.func
    def grid2d_side_closest(arg: Any, side_index: int, pos: Any):
        t, along = coordinate(arg, side_index, pos)
        clamped = kc.clamp(t, scalar(0.0), scalar(1.0))
        gap = (t - clamped) * arg.cell_arg.cell_size[along]
        return Coords(clamped, scalar(0.0), scalar(0.0)), gap * gap

    return grid2d_side_closest


def _grid3d_side_parts(geo: Any) -> Any:
    from kernelc.fem.grid3d import _grid3d_funcs

    get_side = _grid3d_funcs(geo.scalar_type).get_side
    scalar = geo.scalar_type
    vec3 = vec_type(3, scalar)
    vec2 = vec_type(2, scalar)

    @kc.func
    def side_coordinates_and_sizes(arg: Any, side_index: int, pos: Any):
        # the side's coordinates, and the cell sizes along them
        axis, origin = get_side(arg, side_index)
        cells = arg.cell_arg
        w = kc.cw_div(pos - cells.origin, cells.cell_size)
        a1, a2 = (axis + 1) % 3, (axis + 2) % 3
        local = vec3(w[axis], w[a1], w[a2]) - vec3(scalar(origin[0]), scalar(origin[1]),
                                                   scalar(origin[2]))
        c0 = kc.where(origin[0] == 0, scalar(1.0) - local[1], local[1])
        return vec2(c0, local[2]), vec2(cells.cell_size[a1], cells.cell_size[a2])

    return side_coordinates_and_sizes


def _grid3d_side_coordinates(geo: Any) -> Any:
    parts, Coords, zero = _grid3d_side_parts(geo), geo.coords_type, geo.scalar_type(0.0)

    @kc.func
    def grid3d_side_coordinates(arg: Any, side_index: int, pos: Any):
        c, sizes = parts(arg, side_index, pos)
        return Coords(c[0], c[1], zero)

    return grid3d_side_coordinates


def _grid3d_side_closest(geo: Any) -> Any:
    parts, Coords, scalar = _grid3d_side_parts(geo), geo.coords_type, geo.scalar_type
    vec2 = vec_type(2, scalar)

    @kc.func
    def grid3d_side_closest(arg: Any, side_index: int, pos: Any):
        # Warp clamps the (unit) side coordinates to the cell's sizes, then divides by them;
        # kept for Warp's results (exact for unit cells)
        c, sizes = parts(arg, side_index, pos)
        clamped = kc.min(kc.max(c, vec2(scalar(0.0))), sizes)
        unit = kc.cw_div(clamped, sizes)
        return Coords(unit[0], unit[1], scalar(0.0)), kc.length_sq(c - clamped)

    return grid3d_side_closest


__all__ = ["closest_point_func", "coordinates_func"]

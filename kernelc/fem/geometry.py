"""The geometry interface shared by grids (`Grid2D`, `Grid3D`) and meshes (`Trimesh2D`,
`Trimesh3D`, `Tetmesh`).

A geometry has cells and sides. Kernels see it through two argument structs, `CellArg`
and `SideArg` (a side argument holds its cell argument), and through funcs that take one
of them and a `Sample` (attributes of the geometry object, generated once per scalar
type). Host-side topology queries (which sides are on the boundary, which cells touch a
side) are NumPy functions, used to build assembly index arrays.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.types import coords_type, sample_type


@kc.struct
class SideIndexArg:
    """Kernel argument of `Geometry.boundary_side_index`: the boundary's side indices."""

    boundary_side_indices: kc.array(dtype=kc.int32)


@kc.func
def _boundary_side_index(args: SideIndexArg, boundary_side_index: int):
    return args.boundary_side_indices[boundary_side_index]


class Geometry:
    """Base class of geometries (Warp's `warp.fem.Geometry`).

    Subclasses set `dimension`, `CellArg`, `SideArg`, and the device funcs named in
    `CELL_FUNCS` and `SIDE_FUNCS`. The side inner / outer inverse deformation gradients
    take the side argument and the sample already moved into that cell.
    """

    dimension: int = 0
    CellArg: type
    SideArg: type
    # `geo.boundary_side_index(geo.side_index_arg_value(device), i)` in a kernel: the side
    # index of the i-th boundary side (the same struct and func on every geometry).
    SideIndexArg = SideIndexArg
    boundary_side_index = _boundary_side_index

    # Device funcs every geometry provides (args, s) -> value, or (args, index) -> index.
    CELL_FUNCS = ("cell_position", "cell_deformation_gradient",
                  "cell_inverse_deformation_gradient", "cell_measure", "cell_normal")
    SIDE_FUNCS = ("side_position", "side_deformation_gradient",
                  "side_inner_inverse_deformation_gradient",
                  "side_outer_inverse_deformation_gradient", "side_measure",
                  "side_measure_ratio", "side_normal", "side_inner_cell_index",
                  "side_outer_cell_index", "side_inner_cell_coords", "side_outer_cell_coords",
                  "side_from_cell_coords", "side_to_cell_arg")

    def __init__(self, scalar_type: Any = kc.float32) -> None:
        if scalar_type not in (kc.float32, kc.float64):
            raise TypeError(f"geometry scalar type must be float32 or float64, got {scalar_type}")
        self._scalar_type = scalar_type

    @property
    def scalar_type(self) -> Any:
        """Scalar type of positions and element coordinates."""
        return self._scalar_type

    @property
    def coords_type(self) -> Any:
        """Vector type of element coordinates."""
        return coords_type(self._scalar_type)

    @property
    def sample_type(self) -> Any:
        """Sample struct passed to integrands."""
        return sample_type(self._scalar_type)

    @property
    def cell_dimension(self) -> int:
        """Intrinsic dimension of the cells."""
        return self.reference_cell().dimension

    @property
    def name(self) -> str:
        """Identifies the geometry kind and precision; equal names share compiled kernels."""
        suffix = "" if self._scalar_type == kc.float32 else "_f64"
        env = "_env" if self.environment_count() > 1 else ""
        return f"{type(self).__name__}{env}{suffix}"

    @property
    def base(self) -> "Geometry":
        """The geometry itself (Warp's deformed geometries have another base)."""
        return self

    def __str__(self) -> str:
        return self.name

    def environment_count(self) -> int:
        """Number of environments: topologically separate parts of the geometry that may
        overlap in space (sparse grids built by `from_environment_voxels`); 1 otherwise."""
        return 1

    @property
    def cell_env(self) -> Any:
        """The environment of each cell (an int array), or None for geometries of one
        environment."""
        return None

    def host_cell_environments(self) -> np.ndarray:
        """The environment of each cell, as a NumPy int array."""
        cell_env = self.cell_env
        if cell_env is None:
            return np.arange(self.cell_count()) * self.environment_count() // max(
                self.cell_count(), 1)  # environments of equal sizes, one after the other
        return np.asarray(cell_env.numpy(), dtype=np.int64)[: self.cell_count()]

    def cell_bvh_groups(self, device: Any = None) -> Any:
        """The environment of each cell, as the group Warp's lookup BVH files it under (an
        int32 array)."""
        return kc.array(self.host_cell_environments().astype(np.int32), dtype=kc.int32,
                        device=device)

    def cell_count(self) -> int:
        """Number of cells."""
        raise NotImplementedError

    def side_count(self) -> int:
        """Number of sides (interior and boundary)."""
        raise NotImplementedError

    def boundary_side_count(self) -> int:
        """Number of sides on the boundary."""
        raise NotImplementedError

    def vertex_count(self) -> int:
        """Number of vertices."""
        raise NotImplementedError

    def reference_cell(self) -> Element:
        """Kind of the cells."""
        raise NotImplementedError

    def reference_side(self) -> Element:
        """Kind of the sides."""
        raise NotImplementedError

    def cell_arg_value(self, device: Any = None) -> Any:
        """The `CellArg` instance for kernels."""
        raise NotImplementedError

    def side_arg_value(self, device: Any = None) -> Any:
        """The `SideArg` instance for kernels."""
        raise NotImplementedError

    def side_index_arg_value(self, device: Any = None) -> Any:
        """The `SideIndexArg` instance for kernels (boundary side -> side index); on
        grids, whose `SideIndexArg` is their `SideArg`, the side argument."""
        if self.SideIndexArg is not SideIndexArg:
            return self.side_arg_value(device)
        device = kc.get_device(device)
        cache = getattr(self, "_args", None)
        key = ("side_index", str(device))
        if cache is not None and key in cache:
            return cache[key]
        arg = SideIndexArg()
        indices = np.ascontiguousarray(self.boundary_side_indices(), dtype=np.int32)
        arg.boundary_side_indices = kc.array(indices, dtype=kc.int32, device=device)
        if cache is not None:
            cache[key] = arg
        return arg

    def fill_side_index_arg(self, args: Any, device: Any = None) -> None:
        """Fills a `SideIndexArg` instance for `device`."""
        value = self.side_index_arg_value(device)
        for name in type(value).__annotations__:
            setattr(args, name, getattr(value, name))

    # ---- lookups -----------------------------------------------------------------------

    # Whether Warp needs a BVH for this geometry's lookups (meshes and deformed
    # geometries); grids look cells up directly.
    _lookup_needs_bvh: bool = False

    def supports_cell_lookup(self, device: Any = None) -> bool:
        """Whether `fem.lookup` is supported on `device`, as Warp reports it: always on
        grids; on meshes and deformed geometries once a BVH was built there
        (`build_bvh=True` or `build_bvh()`). kernelc's mesh lookups search every cell and
        work without one; only this flag follows Warp's."""
        if not self._lookup_needs_bvh:
            return True
        return kc.get_device(device).alias in self.__dict__.get("_bvh_devices", ())

    def build_bvh(self, device: Any = None) -> None:
        """Marks cell lookups as supported on `device` (None: the current device). Warp
        builds a BVH here; kernelc's lookups search every cell and need none."""
        self.__dict__.setdefault("_bvh_devices", set()).add(kc.get_device(device).alias)

    def update_bvh(self, device: Any = None) -> None:
        """As `build_bvh`: nothing to refit."""
        self.build_bvh(device)

    # ---- host topology -----------------------------------------------------------------

    def boundary_side_indices(self) -> np.ndarray:
        """Side index of each boundary side, in boundary order (int32)."""
        raise NotImplementedError

    def side_cells(self, sides: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inner and outer cell of each side (the same cell for a boundary side)."""
        raise NotImplementedError

    def host_cell_positions(self, coords: np.ndarray) -> np.ndarray:
        """(cells, points, dimension) world positions, in float64, of the points of cell
        coordinates `coords` (points, 3) in every cell."""
        raise NotImplementedError


def check_environment_count(env_count: Any) -> int:
    """An environment count (None: 1), checked."""
    count = 1 if env_count is None else int(env_count)
    if count < 1:
        raise ValueError("Environment count must be at least one")
    return count


def __getattr__(name: str) -> Any:
    # `fem.geometry.DeformedGeometry`, Warp's spelling; imported late because the deformed
    # geometry module builds on this one.
    if name == "DeformedGeometry":
        from kernelc.fem.deformed import DeformedGeometry

        return DeformedGeometry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

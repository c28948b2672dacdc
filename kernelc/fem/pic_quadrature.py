"""`fem.PicQuadrature`: particles as quadrature points (Warp's `warp.fem.PicQuadrature`,
for particle-in-cell and material point methods).

Each particle is found in a cell of the domain (by world position, with the domain's
partition lookup, or given as (cell, coordinates)), or, GIMP-style, overlaps several cells
(2-d arrays of cells, coordinates and fractions, a row per particle): each (particle, cell)
overlap is a point, an evaluation point. The points of a cell are its overlaps, by
increasing particle index, and a point's index (`s.qp_index`) is its particle's. A
point's weight is its particle's measure over its cell's measure at the point (so that
weight x cell measure, what integrals sum, is the particle's measure), or without
measures one over the number of points in the cell, times its fraction. Particles are
binned on the host: by geometry cell, or with `use_domain_element_indices` by the cell's
index in the domain. Integrals over it run kernels of their own (`pic_kernels.py`): the
number of points varies from cell to cell.
"""

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.domain import GeometryDomain
from kernelc.fem.quadrature import Quadrature
from kernelc.fem.types import (
    NULL_ELEMENT_INDEX,
    OUTSIDE,
    ElementKind,
    coords_type,
    make_free_sample,
)


class PicQuadrature(Quadrature):
    """Quadrature at particles spread over the cells of `domain`.

    Args:
        domain: A domain of cells (of a geometry or a geometry partition).
        positions: The particles' world positions (a `kc.array` of vectors), or a tuple
            (cell indices, cell coordinates) of arrays, or (cell indices, coordinates,
            fractions), the fractions multiplying the weights. GIMP-style, these are 2-d
            arrays of shape (particles, cells per particle): a particle's cells, its
            coordinates in each and the fraction of its measure there; entries whose cell
            is -1 (`NULL_ELEMENT_INDEX`) are left out.
        measures: Each particle's measure (area or volume), a `kc.array`; None shares each
            cell among its particles.
        requires_grad: Accepted for Warp's sake.
        max_dist: On a geometry partition, how far from a position to look for the
            partition's cells (`fem.partition_lookup`; at least half a cell on grids).
        use_domain_element_indices: Bin by the cells' indices in the domain instead of in
            the geometry (cell indices given in `positions` are then domain indices).
        env_indices: The environment of each particle (an int array), given with world
            positions on a geometry of several environments (required there): a particle
            is looked for among its environment's cells only.
        temporary_store: Accepted for Warp's sake.

    Raises:
        ValueError: A domain of sides, cell index, coordinate and fraction arrays of
            different shapes (or of more than 2 dimensions), or measures of another shape
            than (particles,).
    """

    def __init__(self, domain: GeometryDomain, positions: Any, measures: Any = None,
                 requires_grad: bool = False, max_dist: float = 0.0,
                 use_domain_element_indices: bool = False, env_indices: Any = None,
                 temporary_store: Any = None) -> None:
        super().__init__(domain)
        if domain.element_kind != ElementKind.CELL:
            raise ValueError("PicQuadrature needs a domain of cells")
        self._by_domain = bool(use_domain_element_indices)
        self._scalar = domain.geometry.scalar_type
        self._max_dist = float(max_dist)
        self._env_indices = _checked_env_indices(domain, positions, env_indices)
        self._bin(positions, measures)
        self._device_arrays: dict[str, Any] = {}

    @property
    def name(self) -> str:
        scope = "domain" if self._by_domain else "geometry"
        return f"PicQuadrature_{self._domain.name}_{scope}"

    @property
    def domain(self) -> GeometryDomain:
        """The domain integrated over. It may be replaced by another domain of cells of the
        same geometry (a partition's, say): particles stay binned by geometry cell, and
        integrals then run over the new domain's cells."""
        return self._domain

    @domain.setter
    def domain(self, domain: GeometryDomain) -> None:
        if self._by_domain and domain is not self._domain:
            raise RuntimeError("Cannot change the domain if use_domain_element_indices is True")
        if domain.element_kind != self._domain.element_kind or \
                _base(domain.geometry) is not _base(self._domain.geometry):
            raise RuntimeError("The new domain must use the same base geometry and kind of "
                               "elements as the current one.")
        self._domain = domain

    @property
    def uses_domain_element_indices(self) -> bool:
        """Whether particles are binned by domain element (else by geometry cell)."""
        return self._by_domain

    def total_point_count(self) -> int:
        """Number of particles."""
        return self._particle_count

    def evaluation_point_count(self) -> int:
        """Number of points: particles placed in a cell of the domain, or GIMP-style,
        (particle, cell) overlaps. Warp's also counts the entries left out."""
        return len(self._point_particle)

    def max_points_per_element(self) -> int:
        """Largest number of points in one cell."""
        return int(np.diff(self._offsets).max(initial=0))

    def active_cell_count(self) -> int:
        """Number of cells holding at least one particle."""
        return int(np.count_nonzero(np.diff(self._offsets)))

    @property
    def cell_particle_offsets(self) -> Any:
        """Where each bin's particles start in `cell_particle_indices` (one more entry
        than bins), a `kc.array`."""
        return self.pic_arrays()[0]

    @property
    def cell_particle_indices(self) -> Any:
        """The particle of each point, bin after bin, a `kc.array`."""
        return self.pic_arrays()[1]

    @property
    def _cell_particle_coords(self) -> Any:
        """The cell coordinates of each point, a `kc.array` (Warp's private name, read by
        its tests)."""
        return self.pic_arrays()[2]

    @property
    def _cell_particle_fraction(self) -> Any:
        """The weight of each point (its fraction times measure over cell measure), a
        `kc.array` (Warp's private name, read by its tests)."""
        return self.pic_arrays()[3]

    def evaluation_point_element_indices(self, device: Any = None) -> Any:
        """For each point, (its domain element, its index among the element's points), a
        `kc.array` of `vec2i` (-1 for bins of elements outside the domain). A point's
        evaluation index is its position in `cell_particle_indices`: its bin's offset
        plus its index in the bin."""
        counts = np.diff(self._offsets)
        bins = np.repeat(np.arange(len(counts)), counts)
        if self._by_domain:
            elements = bins
        else:
            to_domain = np.full(len(counts), -1, dtype=np.int64)
            to_domain[self._domain.element_indices()] = np.arange(self._domain.element_count())
            elements = to_domain[bins]
        local = np.arange(len(bins)) - self._offsets[bins]
        pairs = np.stack([elements, np.where(elements >= 0, local, -1)], axis=1)
        return kc.array(pairs.astype(np.int32), dtype=kc.vec2i, device=device)

    def point_writes(self, device: Any = None) -> Any:
        """1 for each particle's last point (in evaluation order), 0 for its others, a
        `kc.array`: `interpolate(..., at=pic)` writes a particle's value from that point
        (what Warp leaves in it on the CPU, its points writing one after the other)."""
        key = "writes_" + str(kc.get_device(device))
        if key not in self._device_arrays:
            writes = np.zeros(len(self._point_particle), dtype=np.int32)
            backwards = self._point_particle[::-1]
            _, first = np.unique(backwards, return_index=True)
            writes[len(writes) - 1 - first] = 1
            self._device_arrays[key] = kc.array(writes, dtype=kc.int32, device=device)
        return self._device_arrays[key]

    def fill_element_mask(self, mask: Any) -> None:
        """Sets `mask[i]` to 1 for bins holding particles, 0 for the others."""
        mask.assign(np.where(np.diff(self._offsets) > 0, 1, 0).astype(np.int32)[
            : mask.shape[0]])

    def pic_arrays(self, device: Any = None) -> tuple:
        """(bin offsets, particle index, coordinates and weight of each point), as
        `kc.array`s on `device`; points are in evaluation order, bin after bin."""
        key = str(kc.get_device(device))
        if key not in self._device_arrays:
            self._device_arrays[key] = (
                kc.array(self._offsets, dtype=kc.int32, device=device),
                kc.array(self._point_particle, dtype=kc.int32, device=device),
                kc.array(self._point_coords, dtype=coords_type(self._scalar), device=device),
                kc.array(self._point_weights, dtype=self._scalar, device=device))
        return self._device_arrays[key]

    def run_type(self) -> type:
        """The `integrate` launches for this quadrature (`pic_kernels.PicRun`)."""
        from kernelc.fem.pic_kernels import PicRun

        return PicRun

    # ---- binning -----------------------------------------------------------------------

    def _bin(self, positions: Any, measures: Any) -> None:
        domain = self._domain
        fractions = None
        if isinstance(positions, kc.array):
            cells, coords = self._locate_cells(positions)
        else:
            cells, coords, fractions = _given_particles(positions)
        self._particle_count = cells.shape[0]
        per_particle = 1 if cells.ndim == 1 else cells.shape[1]
        cells, coords = cells.reshape(-1), coords.reshape(-1, 3)
        bins = domain.element_count() if self._by_domain else domain.geometry_element_count()
        valid = (cells >= 0) & (cells < bins)
        # entries by bin, by increasing particle (and cell slot) in a bin
        order = np.argsort(np.where(valid, cells, bins), kind="stable")[: valid.sum()]
        self._offsets = np.concatenate([[0], np.cumsum(np.bincount(cells[order],
                                                                   minlength=bins))])
        self._point_particle = (order // per_particle).astype(np.int32)
        np_scalar = kc.types.as_type(self._scalar).np_dtype.type
        self._point_coords = np.ascontiguousarray(coords[order], dtype=np_scalar)
        if fractions is not None:
            fractions = fractions.reshape(-1)[order]
        self._point_weights = self._weights(cells[order], measures, fractions, np_scalar)

    def _locate_cells(self, positions: Any) -> tuple[np.ndarray, np.ndarray]:
        """(bin, cell coordinates) of world positions: -1 for those in no cell of the
        domain."""
        domain = self._domain
        cells, coords = _locate(domain, positions, self._max_dist, self._env_indices)
        self.cell_indices = kc.array(cells.astype(np.int32), dtype=kc.int32,
                                     device=positions.device)
        if self._by_domain:  # geometry cell -> domain element (-1 outside the domain)
            to_domain = np.full(domain.geometry_element_count(), NULL_ELEMENT_INDEX,
                                dtype=np.int64)
            elements = domain.element_indices()
            to_domain[elements] = np.arange(len(elements))
            return np.where(cells >= 0, to_domain[np.maximum(cells, 0)], -1), coords
        inside = np.zeros(domain.geometry_element_count() + 1, dtype=bool)
        inside[domain.element_indices()] = True
        return np.where(inside[cells], cells, -1), coords

    def _weights(self, bins: np.ndarray, measures: Any, fractions: Any,
                 np_scalar: Any) -> np.ndarray:
        """Each point's weight: its particle's measure over its cell's measure at the point
        (or one over the points of its bin), times its fraction."""
        if measures is None:
            counts = np.diff(self._offsets)[bins]
            weights = np_scalar(1.0) / counts.astype(np_scalar)
        else:
            values = np.asarray(measures.numpy() if isinstance(measures, kc.array)
                                else measures)
            if values.shape != (self._particle_count,):
                raise ValueError("Measures should be an 1d array or length equal to particle "
                                 "count")
            cells = self._domain.element_indices()[bins] if self._by_domain else bins
            cell_measures = _cell_measures(self._domain, cells, self._point_coords)
            weights = values[self._point_particle].astype(np_scalar) / cell_measures
        if fractions is not None:
            weights = weights * fractions.astype(np_scalar)
        return np.ascontiguousarray(weights, dtype=np_scalar)


def _given_particles(positions: Any) -> tuple[np.ndarray, np.ndarray, Any]:
    """(cells, coordinates, fractions or None) of particles given as (cell indices,
    coordinates[, fractions]): 1-d arrays (one cell a particle) or GIMP-style 2-d arrays
    (particles, cells per particle), as NumPy arrays; cells of shape (particles[, cells per
    particle]), coordinates with a last axis of 3."""
    if not isinstance(positions, (tuple, list)) or len(positions) not in (2, 3):
        raise ValueError("positions must be an array, or a tuple (cell indices, "
                         "coordinates[, fractions])")
    arrays, shapes = [], []
    for k, item in enumerate(positions):
        if isinstance(item, kc.array):  # a kc.array's shape leaves out its vectors' length
            arrays.append(np.asarray(item.numpy()))
            shapes.append(tuple(item.shape))
        else:
            arrays.append(np.asarray(item))
            shapes.append(arrays[-1].shape[:-1] if k == 1 else arrays[-1].shape)
    if len(shapes[0]) not in (1, 2):
        raise ValueError("Cell indices must be a 1d array (a cell per particle) or a 2d array "
                         "(particles, cells per particle)")
    if arrays[1].shape != (*shapes[0], 3):
        shapes[1] = None
    if any(shape != shapes[0] for shape in shapes[1:]):
        what = "Cell index and coordinates" if len(shapes) == 2 else \
            "Cell index, coordinates and fraction"
        raise ValueError(f"{what} arrays must have the same shape")
    fractions = arrays[2] if len(arrays) == 3 else None
    return arrays[0].astype(np.int64), arrays[1], fractions


def _base(geometry: Any) -> Any:
    """The geometry a deformed geometry deforms (itself otherwise)."""
    return getattr(geometry, "base", geometry)


# ---- kernels of the binning: lookups and cell measures, one per domain kind ----------------

_KERNELS: dict[tuple, Any] = {}


def _checked_env_indices(domain: GeometryDomain, positions: Any, env_indices: Any) -> Any:
    """The particles' environments as an int32 array, checked as Warp checks them; None
    where the geometry has one environment (every particle is in it)."""
    several = domain.geometry.environment_count() > 1
    if not isinstance(positions, kc.array):
        if env_indices is not None:
            raise ValueError("Environment indices can only be provided with world-space "
                             "particle positions")
        return None
    if env_indices is None:
        if several:
            raise ValueError("World-space PicQuadrature over a multi-environment geometry "
                             "requires explicit environment indices")
        return None
    if not isinstance(env_indices, kc.array):
        raise ValueError("Environment indices must be a kernelc array")
    if tuple(env_indices.shape) != (positions.shape[0],):
        raise ValueError("Environment indices must have one entry per particle position")
    if not np.issubdtype(np.dtype(kc.types.as_type(env_indices.dtype).np_dtype), np.integer):
        raise ValueError("Environment indices must have an integer dtype")
    if not several:
        return None
    return kc.array(env_indices.numpy().astype(np.int32), dtype=kc.int32,
                    device=positions.device)


def _locate(domain: GeometryDomain, positions: Any, max_dist: float, envs: Any = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """(geometry cell, cell coordinates) of each position: the cell by the domain's
    partition lookup (Warp's: on a partition, a partition cell near the position), the
    coordinates of the position in it (outside it for positions outside the geometry: not
    the lookup's closest point), as Warp bins particles. With environments (`envs`, one
    per position), each is looked up in its environment, among the geometry's cells."""
    from kernelc.fem.domain_index import domain_arg_type, domain_arg_value
    from kernelc.fem.domain_ops import domain_operator

    if envs is not None:
        return _locate_in_environments(domain, positions, max_dist, envs)
    key = ("locate", domain.name, repr(kc.types.as_type(positions.dtype)))
    if key not in _KERNELS:
        lookup = domain_operator(domain, "partition_lookup")
        coordinates = domain_operator(domain, "element_coordinates")
        Coords = coords_type(domain.geometry.scalar_type)
        DomainArg, Position = domain_arg_type(domain), positions.dtype

        @kc.kernel(enable_backward=False)
        def pic_locate(domain_arg: DomainArg, points: kc.array(dtype=Position),
                       max_dist: float, cells: kc.array(dtype=int),
                       coords: kc.array(dtype=Coords)):
            p = kc.tid()
            s = lookup(domain_arg, points[p], max_dist)
            cells[p] = s.element_index
            if s.element_index != NULL_ELEMENT_INDEX:
                coords[p] = coordinates(domain_arg.geo, s.element_index, points[p])

        _KERNELS[key] = pic_locate
    n = positions.shape[0]
    cells = kc.full(n, NULL_ELEMENT_INDEX, dtype=kc.int32, device=positions.device)
    coords = kc.full(n, coords_type(domain.geometry.scalar_type)(OUTSIDE),
                     dtype=coords_type(domain.geometry.scalar_type), device=positions.device)
    if n:
        kc.launch(_KERNELS[key], dim=n, inputs=[domain_arg_value(domain, positions.device),
                                               positions, max_dist, cells, coords],
                  device=positions.device)
    return cells.numpy().astype(np.int64), coords.numpy()


def _locate_in_environments(domain: GeometryDomain, positions: Any, max_dist: float,
                            envs: Any) -> tuple[np.ndarray, np.ndarray]:
    """`_locate` with each position's environment: the geometry's own lookup in that
    environment; on a partition, a cell found outside it counts as none."""
    from kernelc.fem.domain_ops import domain_operator

    geo = domain.geometry
    key = ("locate_env", geo.name, repr(kc.types.as_type(positions.dtype)))
    if key not in _KERNELS:
        lookup = geo.cell_lookup
        coordinates = domain_operator(domain, "element_coordinates")
        Coords = coords_type(geo.scalar_type)
        CellArg, Position = geo.CellArg, positions.dtype

        @kc.kernel(enable_backward=False)
        def pic_locate_env(cell_arg: CellArg, points: kc.array(dtype=Position),
                           envs: kc.array(dtype=kc.int32), max_dist: float,
                           cells: kc.array(dtype=int), coords: kc.array(dtype=Coords)):
            p = kc.tid()
            s = lookup(cell_arg, points[p], max_dist, envs[p])
            cells[p] = s.element_index
            if s.element_index != NULL_ELEMENT_INDEX:
                coords[p] = coordinates(cell_arg, s.element_index, points[p])

        _KERNELS[key] = pic_locate_env
    n, device = positions.shape[0], positions.device
    Coords = coords_type(geo.scalar_type)
    cells = kc.full(n, NULL_ELEMENT_INDEX, dtype=kc.int32, device=device)
    coords = kc.full(n, Coords(OUTSIDE), dtype=Coords, device=device)
    if n:
        kc.launch(_KERNELS[key], dim=n, inputs=[geo.cell_arg_value(device), positions, envs,
                                               max_dist, cells, coords], device=device)
    found = cells.numpy().astype(np.int64)
    inside = np.zeros(geo.cell_count() + 1, dtype=bool)
    inside[domain.element_indices()] = True
    return np.where(inside[found], found, -1), coords.numpy()


def _cell_measures(domain: GeometryDomain, cells: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """The measure of each of `cells` at the points of cell coordinates `coords`."""
    scalar = domain.geometry.scalar_type
    key = ("measure", domain.name)
    if key not in _KERNELS:
        measure, Coords, ElementArg = domain.element_measure, coords_type(scalar), domain.ElementArg

        @kc.kernel(enable_backward=False)
        def pic_cell_measures(elt_arg: ElementArg, cells: kc.array(dtype=int),
                              coords: kc.array(dtype=Coords), out: kc.array(dtype=scalar)):
            p = kc.tid()
            out[p] = measure(elt_arg, make_free_sample(cells[p], coords[p]))

        _KERNELS[key] = pic_cell_measures
    out = kc.full(len(cells), np.nan, dtype=scalar)
    if len(cells):
        kc.launch(_KERNELS[key], dim=len(cells), inputs=[
            domain.element_arg_value(), kc.array(cells.astype(np.int32), dtype=kc.int32),
            kc.array(coords, dtype=coords_type(scalar)), out])
    return out.numpy()


__all__ = ["PicQuadrature"]

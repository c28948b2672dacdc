"""The `UsdRenderer` methods that write data-sized geometry: meshes, point clouds, line lists
and strips, references to other USD files, and the ground.

Arrays may be kernelc arrays (on any device), Warp arrays, NumPy arrays or nested lists; they
are copied to the host once and handed to USD as whole `Vt` arrays, never element by element.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from kernelc.render.usd_support import (
    GROUND_INDICES,
    add_xform_ops,
    ground_geometry,
    host_array,
    int_array,
    is_single_color,
    segment_transforms,
    set_xform,
    vec3f_array,
    visibility,
)


class GeometryMixin:
    """Mesh, point, line, arrow, reference and ground methods of `UsdRenderer`, and the
    prim helpers all its `render_*` methods share."""

    # Set by UsdRenderer.__init__; declared for readers and type checkers.
    _pxr: Any
    stage: Any
    root: Any
    time: float
    up_axis: str
    _shape_constructors: dict[str, Any]
    _shape_custom_scale: dict[str, tuple]

    def _resolve_path(self, name: str, parent_body: str | None = None,
                      is_template: bool = False) -> Any:
        root = self.root.GetPath()
        if is_template:
            return root.AppendChild("_template_shapes").AppendChild(name)
        if parent_body is None:
            return root.AppendChild(name)
        return root.AppendChild(parent_body).AppendChild(name)

    def _define_shape(self, schema: Any, child: str, name: str, parent_body: str | None,
                      is_template: bool) -> tuple[Any, Any, bool]:
        """The shape's prim (defined on first use) and the path `render_*` returns.

        A template is an instanceable class Scope `/root/_template_shapes/<name>` holding the
        shape as `child`, for `add_shape_instance` to reference.
        """
        pxr = self._pxr
        prim_path = self._resolve_path(name, parent_body, is_template)
        shape_path = prim_path
        if is_template:
            prim = pxr.UsdGeom.Scope.Define(self.stage, prim_path).GetPrim()
            prim.SetInstanceable(True)
            prim.SetSpecifier(pxr.Sdf.SpecifierClass)
            shape_path = prim_path.AppendChild(child)
        shape = schema.Get(self.stage, shape_path)
        created = not shape
        if created:
            shape = schema.Define(self.stage, shape_path)
        return shape, prim_path, created

    def _finish_shape(self, shape: Any, schema: Any, name: str, is_template: bool, pos: Any,
                      rot: Any, scale: Any, visible: bool, xform_time: float) -> None:
        self._shape_constructors[name] = schema
        if not is_template:
            set_xform(self._pxr, shape, pos, rot, scale, xform_time)
        shape.GetVisibilityAttr().Set(visibility(visible), self.time)

    def _set_color(self, shape: Any, color: Any) -> None:
        if color is not None:
            shape.GetDisplayColorAttr().Set(vec3f_array(self._pxr, color), self.time)

    def render_mesh(self, name: str, points: Any, indices: Any, colors: Any = None,
                    pos: Any = (0.0, 0.0, 0.0), rot: Any = (0.0, 0.0, 0.0, 1.0),
                    scale: Any = (1.0, 1.0, 1.0), update_topology: bool = False,
                    parent_body: str | None = None, is_template: bool = False,
                    smooth_shading: bool = True, visible: bool = True) -> Any:
        """A triangle mesh; points are written each frame, triangles on the first and on request.

        Args:
            name: Name of the prim.
            points: Vertex positions, (n, 3) or an array of vec3.
            indices: Triangle vertex indices, 3 per triangle (flat or (m, 3)).
            colors: One RGB color, or one per vertex; optional.
            pos: Position (x, y, z).
            rot: Rotation quaternion (x, y, z, w).
            scale: Scale (x, y, z).
            update_topology: Write `indices` again (always done on the first call).
            parent_body: Name of a registered body to parent the mesh to, or None.
            is_template: Make a template for `add_shape_instance` instead of a shape.
            smooth_shading: Accepted for Warp compatibility; unused.
            visible: Whether the mesh is shown.

        Returns:
            The prim path (the template's when `is_template`).
        """
        pxr = self._pxr
        schema = pxr.UsdGeom.Mesh
        mesh, prim_path, created = self._define_shape(schema, "mesh", name, parent_body,
                                                      is_template)
        if created:
            single = colors is not None and is_single_color(colors)
            pxr.UsdGeom.Primvar(mesh.GetDisplayColorAttr()).SetInterpolation(
                "constant" if single else "vertex")
            add_xform_ops(pxr, mesh)
            update_topology = True
        mesh.GetPointsAttr().Set(vec3f_array(pxr, points), self.time)
        if update_topology:
            triangles = int_array(pxr, indices)
            mesh.GetFaceVertexIndicesAttr().Set(triangles, self.time)
            counts = np.full(len(triangles) // 3, 3, dtype=np.int32)
            mesh.GetFaceVertexCountsAttr().Set(pxr.Vt.IntArray.FromNumpy(counts), self.time)
        if colors is not None:
            mesh.GetDisplayColorAttr().Set(vec3f_array(pxr, colors), self.time)
        self._shape_custom_scale[name] = tuple(host_array(scale).reshape(3))
        self._finish_shape(mesh, schema, name, is_template, pos, rot, scale, visible,
                           self.time)
        return prim_path

    def render_points(self, name: str, points: Any, radius: Any, colors: Any = None,
                      as_spheres: bool = True, visible: bool = True) -> Any:
        """A point cloud: instanced spheres (a PointInstancer) or a UsdGeom.Points prim.

        Args:
            name: Name of the prim.
            points: Positions, (n, 3) or an array of vec3.
            radius: One radius, or one per point.
            colors: One RGB color, or one per point; optional.
            as_spheres: Instanced spheres (True) or USD points (False).
            visible: Whether the points are shown.

        Returns:
            The prim path.
        """
        pxr = self._pxr
        path = self._resolve_path(name)
        positions = vec3f_array(pxr, points)
        radii = host_array(radius, np.float32)
        per_point_radius = radii.ndim > 0
        single_color = colors is not None and is_single_color(colors)
        color_interpolation = "vertex" if colors is not None and not single_color else "constant"
        if as_spheres:
            prim = pxr.UsdGeom.PointInstancer.Get(self.stage, path)
            if not prim:
                prim = pxr.UsdGeom.PointInstancer.Define(self.stage, path)
                sphere = pxr.UsdGeom.Sphere.Define(self.stage, path.AppendChild("sphere"))
                prim.CreatePrototypesRel().SetTargets([sphere.GetPath()])
                prim.CreateProtoIndicesAttr().Set(
                    pxr.Vt.IntArray.FromNumpy(np.zeros(len(positions), dtype=np.int32)))
            prim.GetPositionsAttr().Set(positions, self.time)
            # Unit spheres scaled by the radius, uniformly in x, y, z.
            scales = np.repeat(radii.reshape(-1, 1), 3, axis=1)
            if not per_point_radius:
                scales = np.broadcast_to(scales, (len(positions), 3))
            prim.GetScalesAttr().Set(vec3f_array(pxr, scales), self.time)
            if colors is not None:
                primvars = pxr.UsdGeom.PrimvarsAPI(prim)
                primvar = primvars.GetPrimvar("displayColor")
                if not primvar:
                    primvar = primvars.CreatePrimvar("displayColor",
                                                     pxr.Sdf.ValueTypeNames.Color3fArray,
                                                     color_interpolation, 1)
                primvar.Set(vec3f_array(pxr, colors), self.time)
        else:
            prim = pxr.UsdGeom.Points.Get(self.stage, path)
            if not prim:
                prim = pxr.UsdGeom.Points.Define(self.stage, path)
                pxr.UsdGeom.Primvar(prim.GetWidthsAttr()).SetInterpolation(
                    "vertex" if per_point_radius else "constant")
                pxr.UsdGeom.Primvar(prim.GetDisplayColorAttr()).SetInterpolation(
                    color_interpolation)
            prim.GetPointsAttr().Set(positions, self.time)
            widths = np.ascontiguousarray((radii * np.float32(2.0)).reshape(-1))
            prim.GetWidthsAttr().Set(pxr.Vt.FloatArray.FromNumpy(widths), self.time)
            if colors is not None:
                prim.GetDisplayColorAttr().Set(vec3f_array(pxr, colors), self.time)
        prim.GetVisibilityAttr().Set(visibility(visible), self.time)
        return prim.GetPath()

    def _render_segments(self, name: str, start: np.ndarray, end: np.ndarray, radius: float,
                         visible: bool) -> Any:
        """A PointInstancer of capsules (radius `radius`, unit height) on each segment."""
        pxr = self._pxr
        path = self.root.GetPath().AppendChild(name)
        instancer = pxr.UsdGeom.PointInstancer.Get(self.stage, path)
        if not instancer:
            instancer = pxr.UsdGeom.PointInstancer.Define(self.stage, path)
            capsule = pxr.UsdGeom.Capsule.Define(self.stage, path.AppendChild("capsule"))
            capsule.GetRadiusAttr().Set(radius)
            instancer.CreatePrototypesRel().SetTargets([capsule.GetPath()])
        mid, quat, scales = segment_transforms(start, end)
        orientations = pxr.Vt.QuathArray.FromNumpy(np.ascontiguousarray(quat, np.float16))
        instancer.GetPositionsAttr().Set(vec3f_array(pxr, mid), self.time)
        instancer.GetOrientationsAttr().Set(orientations, self.time)
        instancer.GetScalesAttr().Set(vec3f_array(pxr, scales), self.time)
        proto_indices = np.zeros(len(mid), dtype=np.int32)
        instancer.GetProtoIndicesAttr().Set(pxr.Vt.IntArray.FromNumpy(proto_indices), self.time)
        instancer.GetVisibilityAttr().Set(visibility(visible), self.time)
        return instancer

    def render_line_list(self, name: str, vertices: Any, indices: Any, color: Any = None,
                         radius: float = 0.01, visible: bool = True) -> None:
        """Separate segments, drawn as capsules, between pairs of vertices.

        Args:
            name: Name of the prim.
            vertices: Vertex positions, (n, 3) or an array of vec3.
            indices: Vertex indices, two per segment.
            color: Accepted for Warp compatibility; not written (as in Warp).
            radius: Capsule radius (written on the first call).
            visible: Whether the lines are shown.
        """
        points = host_array(vertices).reshape(-1, 3)
        pairs = host_array(indices, np.int64).reshape(-1)
        count = len(pairs) // 2
        if count < 1:
            return
        pairs = pairs[: 2 * count].reshape(count, 2)
        self._render_segments(name, points[pairs[:, 0]], points[pairs[:, 1]], radius, visible)

    def render_line_strip(self, name: str, vertices: Any, color: Any = None,
                          radius: float = 0.01, visible: bool = True) -> None:
        """A polyline, drawn as capsules between consecutive vertices.

        Args:
            name: Name of the prim.
            vertices: Vertex positions, (n, 3) or an array of vec3.
            color: Optional RGB display color of the capsules.
            radius: Capsule radius (written on the first call).
            visible: Whether the line is shown.
        """
        points = host_array(vertices).reshape(-1, 3)
        if len(points) < 2:
            return
        instancer = self._render_segments(name, points[:-1], points[1:], radius, visible)
        if color is not None:
            capsule = self._pxr.UsdGeom.Capsule.Get(
                self.stage, instancer.GetPath().AppendChild("capsule"))
            capsule.GetDisplayColorAttr().Set(vec3f_array(self._pxr, color), self.time)

    def render_ref(self, name: str, path: str | os.PathLike, pos: Any, rot: Any, scale: Any,
                   color: Any = None) -> None:
        """An Xform `/root/<name>` referencing another USD file (its default prim).

        Args:
            name: Name of the prim.
            path: The USD file to reference (added on the first call).
            pos: Position (x, y, z).
            rot: Rotation quaternion (x, y, z, w).
            scale: Scale (x, y, z).
            color: Optional RGB display color for the referenced geometry.
        """
        pxr = self._pxr
        prim_path = self.root.GetPath().AppendChild(name)
        ref = pxr.UsdGeom.Xform.Get(self.stage, prim_path)
        if not ref:
            ref = pxr.UsdGeom.Xform.Define(self.stage, prim_path)
            ref.GetPrim().GetReferences().AddReference(os.fspath(path))
            add_xform_ops(pxr, ref)
        set_xform(pxr, ref, pos, rot, scale, self.time)
        if color is None:
            return
        value = vec3f_array(pxr, color)
        prims = iter(pxr.Usd.PrimRange(ref.GetPrim()))
        for prim in prims:
            # The outermost geometry of each branch takes the color; its children inherit it.
            if prim.IsA(pxr.UsdGeom.Gprim):
                pxr.UsdGeom.Gprim(prim).GetDisplayColorAttr().Set(value, self.time)
                prims.PruneChildren()

    def render_ground(self, size: float = 100.0, plane: Any = None) -> None:
        """A double-sided square `/root/ground` across the up axis (no time samples).

        Args:
            size: Half the side length.
            plane: Optional plane (nx, ny, nz, d) to turn the square onto.
        """
        pxr = self._pxr
        mesh = pxr.UsdGeom.Mesh.Define(self.stage, self.root.GetPath().AppendChild("ground"))
        mesh.CreateDoubleSidedAttr().Set(True)
        points, normals = ground_geometry(self.up_axis, size, plane)
        mesh.GetPointsAttr().Set(vec3f_array(pxr, points))
        mesh.GetNormalsAttr().Set(vec3f_array(pxr, normals))
        mesh.GetFaceVertexCountsAttr().Set([4])
        mesh.GetFaceVertexIndicesAttr().Set(list(GROUND_INDICES))

    def render_arrow(self, name: str, pos: Any, rot: Any, base_radius: float,
                     base_height: float, cap_radius: float | None = None,
                     cap_height: float | None = None, parent_body: str | None = None,
                     is_template: bool = False, up_axis: int = 1, color: Any = None,
                     visible: bool = True) -> Any:
        """An arrow along axis `up_axis`: an Xform holding a cylinder `base` and a cone `cap`.

        Args:
            name: Name of the prim.
            pos: Position (x, y, z) of the arrow's foot.
            rot: Rotation quaternion (x, y, z, w).
            base_radius: Radius of the shaft.
            base_height: Length of the shaft.
            cap_radius: Radius of the head (default 1.8 * base_radius).
            cap_height: Length of the head (default 0.18 * base_height).
            parent_body: Name of a registered body to parent the arrow to, or None.
            is_template: Make a template for `add_shape_instance` instead of a shape.
            up_axis: The arrow's axis: 0, 1 or 2 (X, Y, Z).
            color: Optional RGB display color.
            visible: Whether the arrow is shown.

        Returns:
            The prim path (the template's when `is_template`).
        """
        # Warp's USD renderer needs both cap sizes; its OpenGL renderer's defaults fill them.
        cap_radius = base_radius * 1.8 if cap_radius is None else cap_radius
        cap_height = base_height * 0.18 if cap_height is None else cap_height
        pxr = self._pxr
        schema = pxr.UsdGeom.Xform
        arrow, prim_path, created = self._define_shape(schema, "arrow", name, parent_body,
                                                       is_template)
        if created:
            add_xform_ops(pxr, arrow)
        axis = np.zeros(3)
        axis[up_axis] = 1.0
        parts = ((pxr.UsdGeom.Cylinder, "base", base_radius, base_height, 0.5 * base_height),
                 (pxr.UsdGeom.Cone, "cap", cap_radius, cap_height,
                  base_height + 0.5 * cap_height))
        for part_schema, child, radius, height, offset in parts:
            part_path = arrow.GetPath().AppendChild(child)
            part = part_schema.Get(self.stage, part_path)
            if not part:
                part = part_schema.Define(self.stage, part_path)
                add_xform_ops(pxr, part)
            part.GetRadiusAttr().Set(float(radius))
            part.GetHeightAttr().Set(float(height))
            part.GetAxisAttr().Set("XYZ"[up_axis])
            set_xform(pxr, part, axis * offset)  # at time code 0, as Warp writes it
            self._set_color(part, color)
        self._finish_shape(arrow, schema, name, is_template, pos, rot, (1.0, 1.0, 1.0),
                           visible, self.time)
        return prim_path

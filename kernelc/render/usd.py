"""`UsdRenderer`: writes a simulation's shapes, meshes, points and lines to an OpenUSD stage.

The stage has the layout Warp's `warp.render.UsdRenderer` gives it (a `/root` Xform holding
every prim, a dome light and a distant light, one time sample per frame), so a USD viewer
plays a kernelc program's stage exactly like Warp's. Meshes, points, lines, arrows,
references and the ground, and the prim helpers every `render_*` method shares, are in
`usd_geometry.GeometryMixin`; this file has the stage, frames, bodies, instances and the
primitive shapes.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from kernelc.render.usd_geometry import GeometryMixin
from kernelc.render.usd_support import (
    add_xform_ops,
    host_array,
    import_pxr,
    set_xform,
    vec3f_array,
)

_LOG = logging.getLogger("kernelc.render")

_AXIS_TOKENS = ("X", "Y", "Z")  # the `axis` token of capsules, cylinders and cones


class UsdRenderer(GeometryMixin):
    """Writes 3-D shapes, meshes, point clouds and lines to a USD stage, frame by frame.

    Every prim lives under `/root`, whose scale op applies `scaling` to the whole scene.
    `begin_frame(t)` sets the time code (`round(t * fps)`) of what the `render_*` calls
    that follow write; `save()` writes the stage to disk. Needs OpenUSD's Python bindings
    (`pip install usd-core`).

    Args:
        stage: Path of a new USD file, or an open `pxr.Usd.Stage` to write into.
        up_axis: The stage's up axis: "Y" or "Z" (USD has no X-up stages).
        fps: Frames per second of the animation (time codes per second).
        scaling: Uniform scale applied to everything under `/root`.
    """

    def __init__(self, stage: str | os.PathLike | Any, up_axis: str = "Y", fps: int = 60,
                 scaling: float = 1.0) -> None:
        self._pxr = pxr = import_pxr()
        self.up_axis = up_axis.upper()
        if self.up_axis not in ("Y", "Z"):  # USD's stage metric knows no other up axis
            raise ValueError(f"a USD stage is Y-up or Z-up; up_axis {up_axis!r} cannot be "
                             "written (Warp's renderer fails on 'X' as well)")
        if isinstance(stage, (str, os.PathLike)):
            self.stage = _create_stage(pxr, os.fspath(stage))
        elif isinstance(stage, pxr.Usd.Stage):
            self.stage = stage
        else:
            raise TypeError("UsdRenderer needs a file path or a pxr.Usd.Stage, "
                            f"got {type(stage).__name__}")
        self.fps = float(fps)
        self.time = 0.0
        # Warp's flags for simulation renderers that draw a model's parts; kept for them.
        self.draw_points = True
        self.draw_springs = False
        self.draw_triangles = False
        self._shape_constructors: dict[str, Any] = {}  # shape name -> its UsdGeom schema
        self._shape_custom_scale: dict[str, tuple] = {}  # boxes, meshes: scale of instances

        self.root = pxr.UsdGeom.Xform.Define(self.stage, "/root")
        self.root.ClearXformOpOrder()
        value = float(scaling)
        self.root.AddScaleOp().Set(pxr.Gf.Vec3d(value, value, value), 0.0)
        self.stage.SetDefaultPrim(self.root.GetPrim())
        self.stage.SetStartTimeCode(0.0)
        self.stage.SetEndTimeCode(0.0)
        self.stage.SetFramesPerSecond(self.fps)
        pxr.UsdGeom.SetStageUpAxis(self.stage, getattr(pxr.UsdGeom.Tokens, self.up_axis.lower()))
        self._add_lights()

    def _add_lights(self) -> None:
        # The lighting Warp's stages carry, so that both look the same in a viewer.
        pxr = self._pxr
        dome = pxr.UsdLux.DomeLight.Define(self.stage, "/dome_light")
        distant = pxr.UsdLux.DistantLight.Define(self.stage, "/distant_light")
        for light, angles, kelvin, exposure in ((dome, (-90.0, -30.0, 0.0), 6150.0, 9.0),
                                                (distant, (-35.0, 45.0, 0.0), 7250.0, 10.0)):
            light.AddRotateXYZOp().Set(angles)
            light.GetEnableColorTemperatureAttr().Set(True)
            light.GetColorTemperatureAttr().Set(kelvin)
            light.GetIntensityAttr().Set(1.0)
            light.GetExposureAttr().Set(exposure)
        dome.GetPrim().CreateAttribute("visibleInPrimaryRay",
                                       pxr.Sdf.ValueTypeNames.Bool).Set(False)

    # ---- frames, bodies, instances ------------------------------------------------------

    def begin_frame(self, time: float) -> None:
        """Starts a frame: later writes go to time code `round(time * fps)`.

        Args:
            time: The frame's simulation time in seconds.
        """
        self.time = round(time * self.fps)
        self.stage.SetEndTimeCode(self.time)

    def end_frame(self) -> None:
        """Ends a frame (nothing to do for a USD stage)."""

    def register_body(self, body_name: str) -> None:
        """Adds an Xform `/root/<body_name>` that shapes can be parented to.

        Args:
            body_name: Name of the body's prim.
        """
        path = self.root.GetPath().AppendChild(body_name)
        add_xform_ops(self._pxr, self._pxr.UsdGeom.Xform.Define(self.stage, path))

    def add_shape_instance(self, name: str, shape: Any, body: str | None, pos: Any, rot: Any,
                           scale: Any = (1.0, 1.0, 1.0), color1: Any = None, color2: Any = None,
                           custom_index: int = -1, visible: bool = True) -> None:
        """Places an instance of a shape made by a `render_*` call (usually a template).

        Args:
            name: Name of the instance's prim.
            shape: The prim path a `render_*` call returned.
            body: Name of a registered body to parent the instance to, or None.
            pos: Position (x, y, z).
            rot: Rotation quaternion (x, y, z, w).
            scale: Scale (x, y, z), times the shape's own (a box's extents, a mesh's scale).
            color1: Accepted for Warp compatibility; not written (as in Warp).
            color2: Accepted for Warp compatibility; not written (as in Warp).
            custom_index: Accepted for Warp compatibility; unused.
            visible: False writes nothing.
        """
        if not visible:
            return
        pxr = self._pxr
        shape = pxr.Sdf.Path(str(shape))
        instance = self._shape_constructors[shape.name].Define(
            self.stage, self._resolve_path(name, body))
        instance.GetPrim().GetReferences().AddInternalReference(shape)
        add_xform_ops(pxr, instance)
        scale = host_array(scale).reshape(3)
        if shape.name in self._shape_custom_scale:
            scale = scale * host_array(self._shape_custom_scale[shape.name]).reshape(3)
        set_xform(pxr, instance, pos, rot, scale, self.time)

    # ---- primitive shapes ---------------------------------------------------------------

    def render_plane(self, name: str, pos: Any, rot: Any, width: float, length: float,
                     color: Any = (1.0, 1.0, 1.0), color2: Any = None,
                     parent_body: str | None = None, is_template: bool = False,
                     u_scaling: float = 1.0, v_scaling: float = 1.0,
                     visible: bool = True) -> Any:
        """A double-sided quad in its local XZ plane (written once; later calls move it).

        Args:
            name: Name of the prim.
            pos: Position (x, y, z), written at time code 0 as Warp does.
            rot: Rotation quaternion (x, y, z, w).
            width: Half the size along X (100 when not positive).
            length: Half the size along Z (100 when not positive).
            color: Accepted for Warp compatibility; not written (as in Warp).
            color2: Accepted for Warp compatibility; not written.
            parent_body: Name of a registered body to parent the plane to, or None.
            is_template: Make a template for `add_shape_instance` instead of a shape.
            u_scaling: Accepted for Warp compatibility; unused.
            v_scaling: Accepted for Warp compatibility; unused.
            visible: Whether the plane is shown.

        Returns:
            The prim path (the template's when `is_template`).
        """
        pxr = self._pxr
        plane, prim_path, created = self._define_shape(pxr.UsdGeom.Mesh, "plane", name,
                                                       parent_body, is_template)
        if created:
            plane.CreateDoubleSidedAttr().Set(True)
            w = width if width > 0.0 else 100.0
            h = length if length > 0.0 else 100.0
            plane.GetPointsAttr().Set(vec3f_array(
                pxr, ((-w, 0.0, -h), (w, 0.0, -h), (w, 0.0, h), (-w, 0.0, h))))
            plane.GetNormalsAttr().Set(vec3f_array(pxr, ((0.0, 1.0, 0.0),) * 4))
            plane.GetFaceVertexCountsAttr().Set([4])
            plane.GetFaceVertexIndicesAttr().Set([0, 1, 2, 3])
            add_xform_ops(pxr, plane)
        self._finish_shape(plane, pxr.UsdGeom.Mesh, name, is_template, pos, rot,
                           (1.0, 1.0, 1.0), visible, 0.0)
        return prim_path

    def render_sphere(self, name: str, pos: Any, rot: Any, radius: float,
                      parent_body: str | None = None, is_template: bool = False,
                      color: Any = None, visible: bool = True) -> Any:
        """A sphere; its radius, color and transform are written each frame.

        Args:
            name: Name of the prim.
            pos: Position (x, y, z).
            rot: Rotation quaternion (x, y, z, w).
            radius: Radius.
            parent_body: Name of a registered body to parent the sphere to, or None.
            is_template: Make a template for `add_shape_instance` instead of a shape.
            color: Optional RGB display color.
            visible: Whether the sphere is shown.

        Returns:
            The prim path (the template's when `is_template`).
        """
        schema = self._pxr.UsdGeom.Sphere
        sphere, prim_path, created = self._define_shape(schema, "sphere", name, parent_body,
                                                        is_template)
        if created:
            add_xform_ops(self._pxr, sphere)
        sphere.GetRadiusAttr().Set(float(radius), self.time)
        self._set_color(sphere, color)
        self._finish_shape(sphere, schema, name, is_template, pos, rot, (1.0, 1.0, 1.0),
                           visible, self.time)
        return prim_path

    def _render_round_shape(self, schema: Any, child: str, name: str, pos: Any, rot: Any,
                            radius: float, height: float, parent_body: str | None,
                            is_template: bool, up_axis: int, color: Any, visible: bool) -> Any:
        # Capsules, cylinders and cones: radius, height and axis are written without a time.
        shape, prim_path, created = self._define_shape(schema, child, name, parent_body,
                                                       is_template)
        if created:
            add_xform_ops(self._pxr, shape)
        shape.GetRadiusAttr().Set(float(radius))
        shape.GetHeightAttr().Set(float(height))
        shape.GetAxisAttr().Set(_AXIS_TOKENS[up_axis])
        self._set_color(shape, color)
        self._finish_shape(shape, schema, name, is_template, pos, rot, (1.0, 1.0, 1.0),
                           visible, self.time)
        return prim_path

    def render_capsule(self, name: str, pos: Any, rot: Any, radius: float, half_height: float,
                       parent_body: str | None = None, is_template: bool = False,
                       up_axis: int = 1, color: Any = None, visible: bool = True) -> Any:
        """A capsule along axis `up_axis` (0, 1, 2 = X, Y, Z).

        Args:
            name: Name of the prim.
            pos: Position (x, y, z).
            rot: Rotation quaternion (x, y, z, w).
            radius: Radius of the cylinder and the caps.
            half_height: Half the length of the cylindrical part.
            parent_body: Name of a registered body to parent the capsule to, or None.
            is_template: Make a template for `add_shape_instance` instead of a shape.
            up_axis: The capsule's axis: 0, 1 or 2.
            color: Optional RGB display color.
            visible: Whether the capsule is shown.

        Returns:
            The prim path (the template's when `is_template`).
        """
        return self._render_round_shape(self._pxr.UsdGeom.Capsule, "capsule", name, pos, rot,
                                        radius, half_height * 2.0, parent_body, is_template,
                                        up_axis, color, visible)

    def render_cylinder(self, name: str, pos: Any, rot: Any, radius: float, half_height: float,
                        parent_body: str | None = None, is_template: bool = False,
                        up_axis: int = 1, color: Any = None, visible: bool = True) -> Any:
        """A closed cylinder along axis `up_axis` (0, 1, 2 = X, Y, Z).

        Args:
            name: Name of the prim.
            pos: Position (x, y, z).
            rot: Rotation quaternion (x, y, z, w).
            radius: Radius.
            half_height: Half the length.
            parent_body: Name of a registered body to parent the cylinder to, or None.
            is_template: Make a template for `add_shape_instance` instead of a shape.
            up_axis: The cylinder's axis: 0, 1 or 2.
            color: Optional RGB display color.
            visible: Whether the cylinder is shown.

        Returns:
            The prim path (the template's when `is_template`).
        """
        return self._render_round_shape(self._pxr.UsdGeom.Cylinder, "cylinder", name, pos,
                                        rot, radius, half_height * 2.0, parent_body,
                                        is_template, up_axis, color, visible)

    def render_cone(self, name: str, pos: Any, rot: Any, radius: float, half_height: float,
                    parent_body: str | None = None, is_template: bool = False,
                    up_axis: int = 1, color: Any = None, visible: bool = True) -> Any:
        """A cone along axis `up_axis` (0, 1, 2 = X, Y, Z), apex towards the positive end.

        Args:
            name: Name of the prim.
            pos: Position (x, y, z).
            rot: Rotation quaternion (x, y, z, w).
            radius: Radius of the base.
            half_height: Half the height.
            parent_body: Name of a registered body to parent the cone to, or None.
            is_template: Make a template for `add_shape_instance` instead of a shape.
            up_axis: The cone's axis: 0, 1 or 2.
            color: Optional RGB display color.
            visible: Whether the cone is shown.

        Returns:
            The prim path (the template's when `is_template`).
        """
        return self._render_round_shape(self._pxr.UsdGeom.Cone, "cone", name, pos, rot, radius,
                                        half_height * 2.0, parent_body, is_template, up_axis,
                                        color, visible)

    def render_box(self, name: str, pos: Any, rot: Any, extents: Any,
                   parent_body: str | None = None, is_template: bool = False,
                   color: Any = None, visible: bool = True) -> Any:
        """A box: a USD Cube (side 2) scaled by `extents`, its half sizes.

        Args:
            name: Name of the prim.
            pos: Position (x, y, z).
            rot: Rotation quaternion (x, y, z, w).
            extents: Half sizes (x, y, z).
            parent_body: Name of a registered body to parent the box to, or None.
            is_template: Make a template for `add_shape_instance` instead of a shape.
            color: Optional RGB display color.
            visible: Whether the box is shown.

        Returns:
            The prim path (the template's when `is_template`).
        """
        schema = self._pxr.UsdGeom.Cube
        cube, prim_path, created = self._define_shape(schema, "cube", name, parent_body,
                                                      is_template)
        if created:
            add_xform_ops(self._pxr, cube)
        self._set_color(cube, color)
        self._shape_custom_scale[name] = tuple(host_array(extents).reshape(3))
        self._finish_shape(cube, schema, name, is_template, pos, rot, extents, visible,
                           self.time)
        return prim_path

    def save(self) -> bool:
        """Writes the stage to its file.

        Returns:
            True when the stage was saved, False when saving failed (the error is logged).
        """
        try:
            self.stage.Save()
        except Exception as err:  # pxr raises Tf.ErrorException; report, as Warp does
            _LOG.error("failed to save the USD stage: %s", err)
            return False
        _LOG.info("saved the USD stage at %r", self.stage.GetRootLayer().realPath)
        return True


def _create_stage(pxr: Any, path: str) -> Any:
    """A new, empty stage in the file `path`."""
    layer = pxr.Sdf.Layer.Find(path)
    if layer is not None:
        # Still open in this process (a second renderer on one path), so CreateNew would
        # refuse it: start that layer afresh instead.
        layer.Clear()
        return pxr.Usd.Stage.Open(layer)
    return pxr.Usd.Stage.CreateNew(path)

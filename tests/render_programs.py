"""Render programs run through both Warp's and kernelc's `UsdRenderer`, and the tools that
compare the USD files they write.

Each program makes one renderer through `make(**kwargs)`, draws a few frames and saves.
Array-like arguments go through an `Inputs` object, so the same program hands Warp NumPy
arrays and tuples while kernelc gets NumPy, nested lists, or kernelc arrays and vectors.
Stages are compared spec by spec (`layer_snapshot`): prim paths, specifiers, types,
references, relationship targets, every authored attribute's type, metadata, default
value and time samples.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# ---- how a program passes arrays ---------------------------------------------------------


@dataclass(frozen=True)
class Inputs:
    """Converters from NumPy / tuples to what a program passes the renderer."""

    points: Callable[[np.ndarray], Any]  # (n, 3) positions and per-vertex colors
    vector: Callable[[tuple], Any]  # positions, scales
    quat: Callable[[tuple], Any]  # rotations (x, y, z, w)
    indices: Callable[[np.ndarray], Any]
    scalars: Callable[[np.ndarray], Any]  # per-point radii


NUMPY_INPUTS = Inputs(np.asarray, tuple, tuple, np.asarray, np.asarray)
LIST_INPUTS = Inputs(lambda a: np.asarray(a).tolist(), list, list,
                     lambda a: np.asarray(a).tolist(), lambda a: np.asarray(a).tolist())


def kernelc_inputs() -> Inputs:
    """kernelc arrays for array data, kernelc vectors and quaternions for the rest."""
    import kernelc as kc

    return Inputs(lambda a: kc.array(np.asarray(a, np.float32), dtype=kc.vec3),
                  lambda v: kc.vec3(*v), lambda q: kc.quat(*q),
                  lambda a: kc.array(np.asarray(a, np.int32), dtype=kc.int32),
                  lambda a: kc.array(np.asarray(a, np.float32), dtype=kc.float32))


# Frame times at 60 fps: time codes 0, 1, 3 (2.6 rounds up) and 6.
TIMES = (0.0, 1.0 / 60.0, 2.6 / 60.0, 0.1)


def _cloud(frame: int, count: int = 7) -> np.ndarray:
    return np.random.default_rng(100 + frame).uniform(-2.0, 2.0, (count, 3))


# ---- the programs ------------------------------------------------------------------------


def shapes(make: Callable[..., Any], inp: Inputs, workdir: Path) -> None:
    """Every primitive shape, moving, with colors, bodies and visibility changes."""
    r = make()
    r.register_body("body")
    turn = (0.0, 0.0, 0.38268343, 0.9238795)  # 45 degrees about z
    for f, t in enumerate(TIMES):
        r.begin_frame(t)
        r.render_sphere("sphere", inp.vector((0.1 * f, 1.0, 0.0)), inp.quat(turn), 0.5 + f,
                        color=(1.0, 0.2, 0.1))
        r.render_sphere("plain_sphere", (f, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.25,
                        parent_body="body", visible=f != 2)
        r.render_capsule("capsule", inp.vector((0.0, f, 0.0)), inp.quat(turn), 0.2, 0.5,
                         up_axis=0, color=(0.0, 1.0, 0.0))
        r.render_cylinder("cylinder", (0.0, 0.0, f), (0.0, 0.0, 0.0, 1.0), 0.3, 0.75 + f,
                          parent_body="body")
        r.render_cone("cone", (1.0, f, 0.0), (0.0, 0.0, 0.0, 1.0), 0.4, 0.6, up_axis=2,
                      color=(0.1, 0.2, 0.9), visible=f != 1)
        r.render_box("box", inp.vector((f, 2.0, 0.0)), inp.quat(turn),
                     inp.vector((0.5, 1.0 + f, 1.5)), color=(0.5, 0.5, 0.5))
        r.render_plane("plane", (0.0, f, 0.0), turn, 2.0, 3.0)
        r.render_plane("big_plane", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.0, -1.0,
                       parent_body="body", visible=f != 3)
        r.render_arrow("arrow", (0.0, f, 0.0), turn, 0.05, 1.0, 0.1, 0.25, color=(1, 1, 0))
        r.render_arrow("arrow_z", (f, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.05, 2.0, 0.2, 0.5,
                       up_axis=2, parent_body="body")
        r.end_frame()
    r.save()


def templates(make: Callable[..., Any], inp: Inputs, workdir: Path) -> None:
    """Template shapes and their instances, under bodies and not, scaled, hidden."""
    r = make()
    r.register_body("arm")
    ident = (0.0, 0.0, 0.0, 1.0)
    tri = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    made = {
        "sphere": r.render_sphere("t_sphere", None, None, 0.5, is_template=True),
        "capsule": r.render_capsule("t_capsule", None, None, 0.1, 0.4, is_template=True,
                                    color=(1.0, 0.0, 0.0)),
        "cylinder": r.render_cylinder("t_cylinder", None, None, 0.2, 0.3, is_template=True,
                                      up_axis=2),
        "cone": r.render_cone("t_cone", None, None, 0.2, 0.3, is_template=True),
        "box": r.render_box("t_box", None, None, (0.5, 0.25, 0.125), is_template=True),
        "mesh": r.render_mesh("t_mesh", inp.points(tri), inp.indices([0, 1, 2, 0, 2, 3]),
                              colors=(0.2, 0.4, 0.6), scale=(2.0, 2.0, 2.0), is_template=True),
        "plane": r.render_plane("t_plane", None, None, 1.0, 1.0, is_template=True),
        "arrow": r.render_arrow("t_arrow", None, None, 0.1, 1.0, 0.2, 0.3, is_template=True),
    }
    for f, t in enumerate(TIMES):
        r.begin_frame(t)
        for i, (kind, shape) in enumerate(made.items()):
            body = "arm" if i % 2 else None
            pos = inp.vector((float(i), float(f), 0.0))
            r.add_shape_instance(f"{kind}_instance", shape, body, pos, inp.quat(ident),
                                 inp.vector((1.0, 1.0 + f, 2.0)))
        r.add_shape_instance("hidden", made["sphere"], None, (0, 0, 0), ident, visible=False)
        r.end_frame()
    r.save()


def meshes(make: Callable[..., Any], inp: Inputs, workdir: Path) -> None:
    """Meshes without colors, with one color, per-vertex colors, and changing topology."""
    r = make()
    quads = np.array([[0, 1, 2], [0, 2, 3], [1, 4, 2], [2, 4, 5], [3, 2, 6]])
    for f, t in enumerate(TIMES):
        r.begin_frame(t)
        points = _cloud(f)
        r.render_mesh("plain", inp.points(points), inp.indices(quads.reshape(-1)))
        r.render_mesh("tinted", inp.points(points), inp.indices(quads), colors=(0.35, 0.55, 0.9),
                      pos=inp.vector((1.0, f, 0.0)), rot=inp.quat((0.0, 0.6, 0.0, 0.8)),
                      scale=inp.vector((1.0, 2.0, 3.0)))
        r.render_mesh("painted", inp.points(points), inp.indices(quads),
                      colors=inp.points(np.abs(points) / 2.0), visible=f != 2)
        topology = quads[: 5 - f] if f < 3 else quads[::-1]
        r.render_mesh("retopo", inp.points(points), inp.indices(topology),
                      update_topology=f in (1, 3))
        r.end_frame()
    r.save()


def points(make: Callable[..., Any], inp: Inputs, workdir: Path) -> None:
    """Point clouds as sphere instancers and as UsdGeom.Points, every radius/color form."""
    r = make()
    for f, t in enumerate(TIMES):
        r.begin_frame(t)
        cloud = _cloud(f, 9)
        radii = 0.05 + 0.01 * np.arange(9) + 0.001 * f
        colors = np.abs(cloud) / 2.0
        r.render_points("spheres", inp.points(cloud), 0.1, colors=(0.8, 0.3, 0.2))
        r.render_points("spheres_sized", inp.points(cloud), inp.scalars(radii),
                        colors=inp.points(colors))
        r.render_points("spheres_plain", inp.points(cloud), 0.2 + f, visible=f != 1)
        r.render_points("dots", inp.points(cloud), 0.05, as_spheres=False)
        r.render_points("dots_sized", inp.points(cloud), inp.scalars(radii),
                        colors=inp.points(colors), as_spheres=False)
        r.render_points("dots_tinted", inp.points(cloud), 0.03, colors=(0.1, 0.9, 0.1),
                        as_spheres=False, visible=f != 3)
        r.end_frame()
    r.save()


def lines(make: Callable[..., Any], inp: Inputs, workdir: Path) -> None:
    """Line lists and strips: random segments and segments along and against +Z."""
    r = make()
    axis_aligned = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, -1.0],
                             [3.0, 0.0, -1.0], [3.0, 4.0, -1.0], [3.0, 4.0, 5.0]])
    for f, t in enumerate(TIMES):
        r.begin_frame(t)
        cloud = _cloud(f, 8)
        r.render_line_list("list", inp.points(cloud), inp.indices([0, 1, 1, 2, 3, 4, 6, 7]),
                           color=(1.0, 0.0, 0.0), radius=0.02)
        r.render_line_list("list_axes", inp.points(axis_aligned + f),
                           inp.indices([0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 0]), visible=f != 2)
        r.render_line_strip("strip", inp.points(cloud), color=(0.0, 0.5, 1.0), radius=0.05)
        r.render_line_strip("strip_axes", inp.points(axis_aligned * (1 + f)), color=(1, 1, 1))
        r.render_line_strip("single_point", inp.points(cloud[:1]), color=(1, 1, 1))
        r.render_line_list("no_lines", inp.points(cloud), inp.indices([3]))
        r.end_frame()
    r.save()


REF_ASSET = "ref_asset.usda"  # next to each stage, so both stages hold the same reference


def write_ref_asset(folder: Path) -> None:
    """A small USD file for `render_ref`: nested geometry under a default prim."""
    from pxr import Usd, UsdGeom

    path = folder / REF_ASSET
    if path.exists():
        return
    stage = Usd.Stage.CreateNew(str(path))
    root = UsdGeom.Xform.Define(stage, "/asset")
    UsdGeom.Cube.Define(stage, "/asset/body")
    UsdGeom.Sphere.Define(stage, "/asset/body/inner")  # under geometry: left uncolored
    UsdGeom.Scope.Define(stage, "/asset/group")
    UsdGeom.Sphere.Define(stage, "/asset/group/ball")
    stage.SetDefaultPrim(root.GetPrim())
    stage.Save()


def refs(make: Callable[..., Any], inp: Inputs, workdir: Path) -> None:
    """References to another USD file, moved each frame, with and without a color."""
    write_ref_asset(workdir)
    r = make()
    for f, t in enumerate(TIMES):
        r.begin_frame(t)
        r.render_ref("ref", "./" + REF_ASSET, inp.vector((f, 0.0, 0.0)),
                     inp.quat((0.0, 0.0, 0.0, 1.0)), inp.vector((1.0, 1.0, 1.0 + f)),
                     color=(0.9, 0.1, 0.1) if f != 2 else None)
        r.render_ref("plain_ref", "./" + REF_ASSET, (0.0, f, 0.0), (0.0, 0.6, 0.0, 0.8),
                     (2.0, 2.0, 2.0))
        r.end_frame()
    r.save()


def z_up(make: Callable[..., Any], inp: Inputs, workdir: Path) -> None:
    """A Z-up stage at 30 fps scaled by 2.5: ground, shapes, points."""
    r = make(up_axis="Z", fps=30, scaling=2.5)
    r.render_ground(size=10.0)
    for f, t in enumerate(TIMES):
        r.begin_frame(t * 2.0)
        r.render_sphere("ball", (0.0, 0.0, 1.0 + f), (0.0, 0.0, 0.0, 1.0), 0.5)
        r.render_points("cloud", inp.points(_cloud(f)), 0.05, colors=(0.1, 0.2, 0.3))
        r.end_frame()
    r.save()


def y_up_ground(make: Callable[..., Any], inp: Inputs, workdir: Path) -> None:
    """A Y-up stage at 24 fps: a ground of half size 2, one capsule at 0.5 s."""
    r = make(fps=24)
    r.render_ground(size=2.0)
    r.begin_frame(0.5)
    r.render_capsule("c", (1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.1, 0.2, up_axis=0)
    r.save()


PROGRAMS: dict[str, Callable[[Callable[..., Any], Inputs, Path], None]] = {
    "shapes": shapes, "templates": templates, "meshes": meshes, "points": points,
    "lines": lines, "refs": refs, "z_up": z_up, "y_up_ground": y_up_ground,
}

# ---- comparing stages --------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A USD value as Python/NumPy data that compares with tolerances."""
    from pxr import Gf, Sdf

    if isinstance(value, dict):  # time samples
        return {float(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (Gf.Quatf, Gf.Quatd, Gf.Quath)):
        return np.array([value.real, *value.imaginary], dtype=np.float64)
    if isinstance(value, (Sdf.Path, Sdf.Specifier, Sdf.Variability, Sdf.AssetPath)):
        return str(value)
    if hasattr(value, "__len__"):
        try:
            array = np.array(value)
        except (TypeError, ValueError):
            return str(value)
        return array if array.dtype.kind in "fiub" else [str(v) for v in value]
    return str(value)  # list ops (references, relationship targets), tokens, ...


def layer_snapshot(path: str | Path) -> dict[str, dict[str, Any]]:
    """Every spec of the USD file at `path` with its fields, keyed by spec path."""
    from pxr import Sdf

    layer = Sdf.Layer.OpenAsAnonymous(str(path))  # read from disk, not a cached layer
    assert layer is not None, f"cannot open {path}"

    def fields(spec: Any) -> dict[str, Any]:
        return {key: _plain(spec.GetInfo(key)) for key in spec.ListInfoKeys()}

    snapshot = {"/": fields(layer.pseudoRoot)}
    pending = list(layer.rootPrims)
    while pending:
        spec = pending.pop()
        snapshot[str(spec.path)] = fields(spec)
        for prop in spec.properties:
            snapshot[str(prop.path)] = fields(prop)
        pending.extend(spec.nameChildren)
    return snapshot


def assert_same(got: Any, want: Any, where: str = "", rtol: float = 1e-6,
                atol: float = 1e-6) -> None:
    """Asserts two snapshots (or parts) agree; floats to `rtol`/`atol`, halves to 1e-3."""
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{where}: {got!r} is not a dict"
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        assert not missing and not extra, f"{where}: missing {missing}, extra {extra}"
        for key in want:
            assert_same(got[key], want[key], f"{where} {key}", rtol, atol)
    elif isinstance(want, np.ndarray):
        got = np.asarray(got)
        assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
        if want.dtype.kind == "f":
            # Halves (quath orientations) round to one of two neighbours.
            tol = max(atol, 1e-3) if want.dtype == np.float16 else atol
            scale = max(1.0, float(np.abs(want).max(initial=0.0)))
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       rtol=rtol, atol=tol * scale, err_msg=where)
        else:
            np.testing.assert_array_equal(got, want, err_msg=where)
    elif isinstance(want, float) and not isinstance(want, bool):
        assert np.isclose(got, want, rtol=rtol, atol=atol), f"{where}: {got} != {want}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


# ---- Warp's examples that write a stage --------------------------------------------------


@dataclass(frozen=True)
class RenderExample:
    """One of Warp's examples run as a script: its command-line arguments and shrink edits."""

    args: tuple[str, ...] = ()
    shrink: tuple[tuple[str, str], ...] = ()
    rtol: float = 1e-4  # simulations: kernelc and Warp round differently


RENDER_EXAMPLES: dict[str, RenderExample] = {
    "example_sample_mesh": RenderExample(),  # default arguments: 16 frames
    "example_mesh_intersect": RenderExample(),  # default arguments: one frame of references
    "example_mesh": RenderExample(("--num-frames", "3")),
    "example_wave": RenderExample(("--num-frames", "3")),
    "example_dem": RenderExample(("--num-frames", "2"), (
        (r"self\.sim_substeps = 64", "self.sim_substeps = 4"),
        (r"particle_grid\(32, 64, 32", "particle_grid(16, 32, 16"))),
    "example_sph": RenderExample(("--num-frames", "2"), (
        (r"int\(32 / self\.smoothing_length\)", "2"),)),
}


def example_source(path: Path, module: str, shrink: tuple[tuple[str, str], ...]) -> str:
    """The example's source, shrunk, with `module` (warp or kernelc) imported as `wp`."""
    text = path.read_text()
    for pattern, replacement in shrink:
        text, count = re.subn(pattern, replacement, text)
        if count == 0:
            raise LookupError(f"{path.name}: the example changed; {pattern!r} no longer matches")
    if module != "warp":
        text = text.replace("import warp as wp\n", f"import {module} as wp\n")
        text = re.sub(r"^import warp\.render\n", "", text, flags=re.M)
    return text

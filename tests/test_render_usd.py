"""`kernelc.render.UsdRenderer` writes the USD stages Warp's `warp.render.UsdRenderer` writes.

The programs of `tests/render_programs.py` run once through Warp's renderer (in a Warp
subprocess) and here through kernelc's, fed NumPy arrays, nested lists or kernelc arrays;
the two files must hold the same specs: prim paths and types, references, relationship
targets, and every attribute's type, metadata, value and time samples (floats to rounding).
Warp's own examples that write a stage run as scripts under both and are compared the same
way. The rest checks what has no Warp oracle: the optional `pxr` dependency, the missing
OpenGL viewer, and kernelc's behaviour where Warp's renderer raises.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
from tests import render_programs as rp
from tests.conftest import run_python, run_warp
from tests.warp_examples import examples_dir

HAVE_PXR = importlib.util.find_spec("pxr") is not None
if HAVE_PXR:
    from pxr import Gf, Sdf, Usd, UsdGeom

# Everything but the tests of a missing `pxr` and of OpenGL needs usd-core.
needs_pxr = pytest.mark.skipif(not HAVE_PXR, reason="usd-core (pxr) is not installed")

ROOT = Path(__file__).resolve().parents[1]

_WARP_DRIVER = f"""
import sys
from pathlib import Path

sys.path.insert(0, {str(ROOT)!r})
import warp.render
from tests import render_programs as rp

folder = Path(sys.argv[0]).parent / "stages"
folder.mkdir()
for name, program in rp.PROGRAMS.items():
    path = str(folder / (name + ".usda"))
    program(lambda **kw: warp.render.UsdRenderer(path, **kw), rp.NUMPY_INPUTS, folder)

from warp._src.render import utils
rng = np.random.default_rng(7)
faces, vertices = rng.integers(0, 20, (30, 3)), rng.uniform(-1.0, 1.0, (20, 3))
for key, thickness in (("one", 0.05), ("each", list(rng.uniform(0.01, 0.1, 20)))):
    results["faces_" + key], results["vertices_" + key] = utils.solidify_mesh(
        faces, vertices, thickness)
results["faces"], results["vertices"] = faces, vertices
results["thickness"] = np.array(thickness)
results["bourke"] = np.array([utils.bourke_color_map(-1.0, 3.0, v)
                              for v in np.linspace(-2.0, 4.0, 61)])
results["tab10"] = np.array([utils.tab10_color_map(i) for i in range(23)])
"""


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    """Warp's stages for every program (in a folder) and its render utilities' results."""
    if not HAVE_PXR:
        pytest.skip("usd-core (pxr) is not installed")
    folder = tmp_path_factory.mktemp("warp_render")
    results = run_warp(_WARP_DRIVER, folder)
    return folder / "stages", results


_INPUTS = {"numpy": lambda: rp.NUMPY_INPUTS, "lists": lambda: rp.LIST_INPUTS,
           "kernelc": rp.kernelc_inputs}


@needs_pxr
@pytest.mark.parametrize("inputs", list(_INPUTS))
@pytest.mark.parametrize("name", list(rp.PROGRAMS))
def test_program_writes_warps_stage(name, inputs, warp_run, tmp_path):
    warp_stages, _ = warp_run
    path = str(tmp_path / f"{name}.usda")
    rp.PROGRAMS[name](lambda **kw: kc.render.UsdRenderer(path, **kw), _INPUTS[inputs](),
                      tmp_path)
    want = rp.layer_snapshot(warp_stages / f"{name}.usda")
    got = rp.layer_snapshot(path)
    assert len(want) > 10  # lights, root, the program's prims and their attributes
    rp.assert_same(got, want, name)


@needs_pxr
def test_stage_content_is_what_a_viewer_needs(tmp_path):
    """Spot checks on kernelc's own output, independent of Warp."""
    path = tmp_path / "scene.usda"
    rp.shapes(lambda **kw: kc.render.UsdRenderer(str(path), **kw), rp.NUMPY_INPUTS, tmp_path)
    stage = Usd.Stage.Open(str(path))
    assert stage.GetDefaultPrim().GetPath() == Sdf.Path("/root")
    assert UsdGeom.GetStageUpAxis(stage) == "Y"
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (0.0, 6.0)
    assert stage.GetFramesPerSecond() == 60.0
    sphere = UsdGeom.Sphere(stage.GetPrimAtPath("/root/sphere"))
    assert sphere.GetRadiusAttr().GetTimeSamples() == [0.0, 1.0, 3.0, 6.0]
    assert sphere.GetRadiusAttr().Get(3.0) == pytest.approx(2.5)
    world = sphere.ComputeLocalToWorldTransform(3.0)
    assert np.allclose(world.ExtractTranslation(), (0.2, 1.0, 0.0))
    box = UsdGeom.Cube(stage.GetPrimAtPath("/root/box"))
    assert np.allclose(box.ComputeLocalToWorldTransform(1.0).Transform(Gf.Vec3d(1, 0, 0))
                       - Gf.Vec3d(1.0, 2.0, 0.0), (0.5 * 0.70710677, 0.5 * 0.70710677, 0.0))
    cone = stage.GetPrimAtPath("/root/cone")
    assert UsdGeom.Imageable(cone).ComputeVisibility(1.0) == "invisible"
    assert UsdGeom.Imageable(cone).ComputeVisibility(3.0) == "inherited"
    assert stage.GetPrimAtPath("/root/body/cylinder").IsA(UsdGeom.Cylinder)


@needs_pxr
def test_scaling_and_up_axis_reach_the_stage(tmp_path):
    renderer = kc.render.UsdRenderer(str(tmp_path / "z.usd"), up_axis="z", fps=25, scaling=3.0)
    renderer.begin_frame(0.2)
    renderer.render_sphere("s", (1.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 1.0)
    assert renderer.time == 5 and renderer.up_axis == "Z" and renderer.fps == 25.0
    assert renderer.save()
    stage = Usd.Stage.Open(str(tmp_path / "z.usd"))
    assert UsdGeom.GetStageUpAxis(stage) == "Z"
    world = UsdGeom.Xformable(stage.GetPrimAtPath("/root/s")).ComputeLocalToWorldTransform(5.0)
    assert np.allclose(world.ExtractTranslation(), (3.0, 0.0, 0.0))


def test_render_utilities_match_warps(warp_run):
    _, want = warp_run
    for key in ("one", "each"):
        thickness = 0.05 if key == "one" else want["thickness"]
        faces, vertices = kc.render.solidify_mesh(want["faces"], want["vertices"], thickness)
        assert faces.dtype == np.int32 and vertices.dtype == np.float32
        np.testing.assert_array_equal(faces, want["faces_" + key])
        np.testing.assert_allclose(vertices, want["vertices_" + key], rtol=1e-6, atol=1e-6)
    bourke = [kc.render.bourke_color_map(-1.0, 3.0, v) for v in np.linspace(-2.0, 4.0, 61)]
    np.testing.assert_array_equal(np.array(bourke), want["bourke"])
    tab10 = [kc.render.tab10_color_map(i) for i in range(23)]
    np.testing.assert_array_equal(np.array(tab10), want["tab10"])


# ---- where Warp's renderer raises, kernelc does the evident thing -----------------------


@needs_pxr
def test_ground_on_a_plane(tmp_path):
    # Warp 1.19's render_ground(plane=...) raises (a NumPy axis for quat_from_axis_angle).
    for up_axis, plane in (("Y", (0.0, 1.0, 0.3, 0.5)), ("Z", (1.0, 0.0, 0.0, -2.0)),
                           ("Y", (0.0, -1.0, 0.0, 1.0)), ("Y", (0.0, 1.0, 0.0, 0.25))):
        renderer = kc.render.UsdRenderer(str(tmp_path / f"g{up_axis}{plane[3]}.usda"),
                                         up_axis=up_axis)
        renderer.render_ground(size=4.0, plane=list(plane))
        mesh = UsdGeom.Mesh(renderer.stage.GetPrimAtPath("/root/ground"))
        points = np.array(mesh.GetPointsAttr().Get())
        normal = np.array(plane[:3]) / np.linalg.norm(plane[:3])
        np.testing.assert_allclose(points @ normal, plane[3], atol=1e-5)
        np.testing.assert_allclose(np.array(mesh.GetNormalsAttr().Get()),
                                   np.tile(normal, (4, 1)), atol=1e-6)
        side = np.linalg.norm(points[0] - points[1])
        assert side == pytest.approx(8.0, rel=1e-6)


@needs_pxr
def test_arrow_default_caps_and_uncolored_strip(tmp_path):
    # Warp's USD renderer raises on cap sizes of None and on a line strip without a color.
    renderer = kc.render.UsdRenderer(str(tmp_path / "a.usda"))
    path = renderer.render_arrow("arrow", (0, 0, 0), (0, 0, 0, 1), 0.1, 2.0)
    cap = UsdGeom.Cone(renderer.stage.GetPrimAtPath(path.AppendChild("cap")))
    assert cap.GetRadiusAttr().Get() == pytest.approx(0.18)
    assert cap.GetHeightAttr().Get() == pytest.approx(0.36)
    renderer.render_line_strip("strip", np.eye(3))
    capsule = renderer.stage.GetPrimAtPath("/root/strip/capsule")
    assert not UsdGeom.Capsule(capsule).GetDisplayColorAttr().HasAuthoredValue()


@needs_pxr
def test_stage_object_and_reused_path(tmp_path):
    stage = Usd.Stage.CreateInMemory()
    renderer = kc.render.UsdRenderer(stage)
    renderer.render_box("b", (0, 0, 0), (0, 0, 0, 1), (1, 1, 1))
    assert renderer.stage is stage and stage.GetPrimAtPath("/root/b").IsA(UsdGeom.Cube)
    # A second renderer on a file that is still open in this process starts it afresh.
    path = tmp_path / "again.usda"
    first = kc.render.UsdRenderer(path)
    first.render_sphere("old", (0, 0, 0), (0, 0, 0, 1), 1.0)
    second = kc.render.UsdRenderer(str(path))
    second.render_sphere("new", (0, 0, 0), (0, 0, 0, 1), 1.0)
    assert second.save()
    saved = Usd.Stage.Open(str(path))
    assert saved.GetPrimAtPath("/root/new") and not saved.GetPrimAtPath("/root/old")
    assert first.stage.GetRootLayer() is second.stage.GetRootLayer()


@needs_pxr
def test_bad_arguments_raise(tmp_path):
    with pytest.raises(TypeError, match="file path or a pxr.Usd.Stage"):
        kc.render.UsdRenderer(42)
    for axis in ("X", "W"):
        with pytest.raises(ValueError, match="Y-up or Z-up"):
            kc.render.UsdRenderer(str(tmp_path / f"{axis}.usda"), up_axis=axis)


# ---- the optional dependency and the missing viewer ---------------------------------------


def test_without_pxr_the_error_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pxr", None)  # `from pxr import ...` now fails
    with pytest.raises(ImportError, match="pip install usd-core"):
        kc.render.UsdRenderer(str(tmp_path / "x.usd"))


def test_render_imports_without_pxr():
    proc = run_python("""
        import sys
        sys.modules["pxr"] = None  # as if usd-core were not installed
        import kernelc as wp
        print(sorted(n for n in dir(wp.render) if not n.startswith("_")))
        try:
            wp.render.UsdRenderer("x.usd")
        except ImportError as err:
            print("ImportError:", err)
        """)
    assert proc.returncode == 0, proc.stderr
    assert "UsdRenderer" in proc.stdout and "OpenGLRenderer" in proc.stdout
    assert "ImportError:" in proc.stdout and "pip install usd-core" in proc.stdout


def test_opengl_renderer_is_an_honest_error():
    with pytest.raises(NotImplementedError, match="UsdRenderer") as info:
        kc.render.OpenGLRenderer(screen_width=1024, screen_height=1024, vsync=False)
    assert isinstance(info.value, kc.render.OpenGLUnavailableError)
    assert "no OpenGL viewer" in str(info.value)
    # Warp's examples guard their viewer with `except Exception` and carry on.
    try:
        renderer = kc.render.OpenGLRenderer(title="example")
    except Exception:
        renderer = None
    assert renderer is None


# ---- Warp's examples, run as scripts with their default stage path -----------------------


def _run_example(name: str, module: str, folder: Path, env: dict[str, str]) -> Path:
    spec = rp.RENDER_EXAMPLES[name]
    folder.mkdir()
    script = folder / f"{name}.py"
    script.write_text(rp.example_source(examples_dir() / f"{name}.py", module, spec.shrink))
    proc = subprocess.run([sys.executable, str(script), *spec.args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{name} under {module}:\n{proc.stderr[-3000:]}"
    stage = folder / f"{name}.usd"  # the examples' default --stage-path
    assert stage.exists(), f"{name} under {module} wrote no stage"
    return stage


@needs_pxr
@pytest.mark.parametrize("name", list(rp.RENDER_EXAMPLES))
def test_warp_example_writes_warps_stage(name, tmp_path, kernel_cache_dir):
    if examples_dir() is None:
        pytest.skip("warp-lang (with its examples) is not installed")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]), KERNELC_CACHE_DIR=str(kernel_cache_dir))
    want = rp.layer_snapshot(_run_example(name, "warp", tmp_path / "warp", env))
    got = rp.layer_snapshot(_run_example(name, "kernelc", tmp_path / "kernelc", env))
    assert len(want) > 10
    spec = rp.RENDER_EXAMPLES[name]
    rp.assert_same(got, want, name, rtol=spec.rtol, atol=spec.rtol)

"""`OpenGLRenderer`: a name Warp programs refer to; kernelc has no interactive viewer.

Constructing it raises `OpenGLUnavailableError` (a `NotImplementedError`). Warp's examples
build their OpenGL viewer inside `try: ... except Exception`, or only without `--headless`,
so under kernelc they warn and carry on without a window.
"""

from __future__ import annotations

from typing import Any, NoReturn


class OpenGLUnavailableError(NotImplementedError):
    """Raised on constructing `OpenGLRenderer`: kernelc has no OpenGL viewer."""


class OpenGLRenderer:
    """Warp's interactive OpenGL viewer, which kernelc does not implement.

    Constructing one raises `OpenGLUnavailableError`, whatever the arguments. Write the scene
    to a file with `kernelc.render.UsdRenderer` instead and play it in a USD viewer
    (usdview, Blender, NVIDIA Omniverse).

    Args:
        args: Warp's positional arguments (ignored).
        kwargs: Warp's keyword arguments (ignored).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise OpenGLUnavailableError(
            "kernelc has no OpenGL viewer: wp.render.OpenGLRenderer is not implemented. "
            "Write the scene to a USD file with wp.render.UsdRenderer(stage_path) and open it "
            "in a USD viewer (usdview, Blender, Omniverse)."
        )

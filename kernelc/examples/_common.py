"""Command-line handling shared by the examples."""

from __future__ import annotations

import argparse
import os


def parser(description: str, frames: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default="cpu", help="'cpu' (default) or 'cuda'")
    p.add_argument("--num-frames", type=int, default=frames, help="simulation steps to run")
    p.add_argument("--output", default=None, help="folder for images or .npz frames")
    return p


def output_dir(path: str | None) -> str | None:
    if path:
        os.makedirs(path, exist_ok=True)
    return path


def save_png(path: str, image) -> bool:
    """Writes a 2-d float image in [0, 1] as a grey PNG if Pillow is installed."""
    try:
        from PIL import Image
    except ImportError:
        return False
    import numpy as np

    Image.fromarray((np.clip(image, 0.0, 1.0) * 255).astype(np.uint8)).save(path)
    return True

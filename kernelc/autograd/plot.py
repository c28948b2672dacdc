"""`jacobian_plot`: draws Jacobians as one image per (input, output) pair (needs matplotlib,
which kernelc does not require: it is imported only when a plot is asked for)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kernelc.autograd.metadata import FunctionMetadata
from kernelc.frontend.decorators import Kernel


def jacobian_plot(jacobians: dict[tuple[int, int], Any], kernel: FunctionMetadata | Kernel,
                  inputs: Sequence[Any] | None = None, show_plot: bool = True,
                  show_colorbar: bool = True, scale_colors_per_submatrix: bool = False,
                  title: str | None = None, colormap: str = "coolwarm",
                  log_scale: bool = False) -> Any:
    """Shows the Jacobians of `jacobian` or `jacobian_fd` in one figure.

    The figure has a column per input and a row per output that occur in `jacobians`;
    each pair's Jacobian is an image with one pixel per (output scalar, input scalar),
    labelled with the argument names. Pairs missing from `jacobians` leave their cell empty.

    Args:
        jacobians: `(input index, output index)` -> Jacobian (a kernelc or NumPy array).
        kernel: The kernel the Jacobians belong to (then `inputs` is needed for the labels),
            or a `FunctionMetadata` describing it.
        inputs: The kernel's inputs, when `kernel` is a kernel.
        show_plot: Call `matplotlib.pyplot.show()` before returning.
        show_colorbar: Draw a colour bar (one per image with `scale_colors_per_submatrix`).
        scale_colors_per_submatrix: Scale each image's colours to its own range rather than
            to the range of all of them.
        title: The figure title (default: "<key> kernel Jacobian").
        colormap: A matplotlib colormap name.
        log_scale: Show `log10(|J| + 1e-8)` instead of `J`.

    Returns:
        The matplotlib Figure, or None when `jacobians` is empty.

    Raises:
        ValueError: `kernel` is a kernel and `inputs` is None, or `kernel` is neither.
        ImportError: matplotlib is not installed.
    """
    if isinstance(kernel, Kernel):
        if inputs is None:
            raise ValueError("inputs must be provided when kernel is a kernelc kernel")
        metadata = FunctionMetadata()
        metadata.update_from_kernel(kernel, inputs)
    elif isinstance(kernel, FunctionMetadata):
        metadata = kernel
    else:
        raise ValueError("kernel must be a kernelc kernel or a FunctionMetadata, got "
                         f"{type(kernel).__name__}")
    if not jacobians:
        return None
    try:
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError as err:
        raise ImportError("jacobian_plot needs matplotlib (pip install matplotlib)") from err

    images = {pair: _image(jac, log_scale) for pair, jac in jacobians.items()}
    columns = sorted({i for i, _ in images})
    rows = sorted({o for _, o in images})
    widths = [max(m.shape[1] for (i, _), m in images.items() if i == col) for col in columns]
    heights = [max(m.shape[0] for (_, o), m in images.items() if o == row) for row in rows]
    fig, axes = plt.subplots(len(rows), len(columns), squeeze=False, figsize=(7, 7),
                             layout="constrained",
                             gridspec_kw={"width_ratios": [max(w, 1) for w in widths],
                                          "height_ratios": [max(h, 1) for h in heights]})
    fig.suptitle(title if title is not None else f"{metadata.key or 'unknown'} kernel Jacobian")
    low, high = _range(list(images.values()))
    for r, output_i in enumerate(rows):
        for c, input_i in enumerate(columns):
            ax = axes[r, c]
            image = images.get((input_i, output_i))
            if image is None:
                ax.axis("off")
                continue
            if scale_colors_per_submatrix:
                low, high = _range([image])
            drawn = ax.imshow(image, cmap=colormap, vmin=low, vmax=high, aspect="auto",
                              interpolation="nearest",
                              extent=(0, image.shape[1], image.shape[0], 0))
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # pixels are indices
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            if r == len(rows) - 1 or (input_i, rows[r + 1]) not in images:
                ax.set_xlabel(_label(metadata.input_labels, input_i))
            if c == 0 or (columns[c - 1], output_i) not in images:
                ax.set_ylabel(_label(metadata.output_labels, output_i))
            if show_colorbar and scale_colors_per_submatrix:
                fig.colorbar(drawn, ax=ax)
    if show_colorbar and not scale_colors_per_submatrix:
        mappable = plt.cm.ScalarMappable(cmap=colormap,
                                         norm=plt.Normalize(vmin=low, vmax=high))
        fig.colorbar(mappable, ax=axes)
    if show_plot:
        plt.show()
    return fig


def _image(jac: Any, log_scale: bool) -> np.ndarray:
    values = np.asarray(jac.numpy() if hasattr(jac, "numpy") else jac, dtype=np.float64)
    values = values.reshape(values.shape[0], -1)
    return np.log10(np.abs(values) + 1e-8) if log_scale else values


def _range(images: list[np.ndarray]) -> tuple[float, float]:
    """The smallest and largest finite value over `images` ((0, 0) if there are none)."""
    finite = [m[np.isfinite(m)] for m in images]
    finite = [m for m in finite if m.size]
    if not finite:
        return 0.0, 0.0
    return float(min(m.min() for m in finite)), float(max(m.max() for m in finite))


def _label(labels: list[str] | None, index: int) -> str:
    return labels[index] if labels is not None and 0 <= index < len(labels) else str(index)

"""Where every figure paam draws is made and written: matplotlib without a display, and PNGs
written with a palette of at most 256 colours.

Line plots, scatter plots and box plots have few colours beyond anti-aliasing's blends, so a
palette image looks the same and takes less than half the bytes of matplotlib's RGBA one (figures
travel to the GPU machine with the checkout, under a size limit). ``python -m paam.figures FILE.png ...`` rewrites PNGs written before in
place.

Nothing here imports matplotlib at import time.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _palette(image):
    """``image`` as a palette image of at most 256 colours (no dithering: flat areas and lines
    stay clean). An image that is one already comes back as it is."""
    from PIL import Image
    if image.mode == "P":
        return image
    return image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                                         dither=Image.Dither.NONE)


def save(fig, path: str | Path, dpi: int = 100,
         rect: tuple[float, float, float, float] = (0, 0, 1, 1)) -> Path:
    """Lay ``fig`` out (``tight_layout`` within ``rect``: leave room below for a figure legend,
    say), write it to ``path`` as a palette PNG and close it."""
    from PIL import Image
    path = Path(path)
    fig.tight_layout(rect=rect)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    import matplotlib.pyplot as plt
    plt.close(fig)
    buf.seek(0)
    with Image.open(buf) as image:
        _palette(image).save(path, format="PNG", optimize=True)
    return path


def shrink(path: str | Path) -> tuple[int, int]:
    """Rewrite the PNG at ``path`` as a palette PNG where that makes it smaller; (bytes
    before, bytes after)."""
    from PIL import Image
    path = Path(path)
    before = path.stat().st_size
    with Image.open(path) as image:
        if image.format != "PNG":
            raise ValueError(f"{path}: not a PNG ({image.format})")
        buf = io.BytesIO()
        _palette(image).save(buf, format="PNG", optimize=True)
    if buf.tell() >= before:
        return before, before
    path.write_bytes(buf.getvalue())
    return before, buf.tell()


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m paam.figures FILE.png ...", file=sys.stderr)
        return 2
    total_before = total_after = skipped = 0
    for p in paths:
        try:
            before, after = shrink(p)
        except (OSError, ValueError) as exc:
            print(f"skipped {p}: {exc}", file=sys.stderr)
            skipped += 1
            continue
        total_before += before
        total_after += after
    print(f"{len(paths)} files ({skipped} skipped): {total_before / 2**20:.2f} -> "
          f"{total_after / 2**20:.2f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

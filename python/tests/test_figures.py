"""paam.figures: palette PNGs that look like matplotlib's own and take fewer bytes."""
import io

import numpy as np
import pytest
from PIL import Image

from paam import figures


def _figure():
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    rng = np.random.default_rng(1)
    for c in ("#e8a04c", "#8c6bb1", "#4c9be8"):
        ax.plot(rng.normal(size=200).cumsum(), color=c, label=c)
        ax.scatter(np.arange(50), rng.normal(size=50), color=c, s=8)
    ax.boxplot([rng.normal(size=100) for _ in range(3)], patch_artist=True)
    ax.legend()
    ax.set_title("a figure like the evaluation's")
    return fig


def _rgba(fig, dpi):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def test_save_writes_a_smaller_palette_png_that_looks_the_same(tmp_path):
    fig = _figure()
    fig.tight_layout()
    plain = _rgba(fig, 100)
    out = figures.save(fig, tmp_path / "f.png", dpi=100)
    with Image.open(out) as im:
        assert im.format == "PNG" and im.mode == "P"
        got = np.asarray(im.convert("RGB"), dtype=np.int16)
    with Image.open(io.BytesIO(plain)) as im:
        want = np.asarray(im.convert("RGB"), dtype=np.int16)
    assert got.shape == want.shape
    assert out.stat().st_size < 0.6 * len(plain)
    diff = np.abs(got - want)
    assert diff.mean() < 0.5           # per channel, of 255
    assert (diff.max(axis=2) > 24).mean() < 0.002   # hardly a pixel visibly off


def test_save_closes_the_figure(tmp_path):
    plt = figures.pyplot()
    fig = _figure()
    figures.save(fig, tmp_path / "f.png")
    assert not plt.fignum_exists(fig.number)


def test_shrink_rewrites_an_rgba_png_once(tmp_path):
    fig = _figure()
    path = tmp_path / "old.png"
    path.write_bytes(_rgba(fig, 80))
    figures.pyplot().close(fig)
    before, after = figures.shrink(path)
    assert after < before and path.stat().st_size == after
    assert figures.shrink(path) == (after, after)   # a palette PNG stays as it is


def test_shrink_refuses_what_is_not_a_png(tmp_path):
    path = tmp_path / "x.png"
    Image.new("RGB", (8, 8)).save(path, format="JPEG")
    with pytest.raises(ValueError, match="not a PNG"):
        figures.shrink(path)


def test_the_command_line_reports_and_skips_bad_files(tmp_path, capsys):
    fig = _figure()
    good = tmp_path / "a.png"
    good.write_bytes(_rgba(fig, 80))
    figures.pyplot().close(fig)
    missing = tmp_path / "missing.png"
    assert figures.main([str(good), str(missing)]) == 0
    cap = capsys.readouterr()
    assert "skipped" in cap.err and "missing.png" in cap.err
    assert "2 files" in cap.out
    assert figures.main([]) == 2

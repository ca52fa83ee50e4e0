"""tqdm-compatible progress-bar lines (the simulator cannot install tqdm)."""

from __future__ import annotations

_PARTIALS = " ▏▎▍▌▋▊▉█"


def _fmt_interval(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _rates(n: int, elapsed: float) -> tuple[str, str]:
    if n <= 0 or elapsed <= 0:
        return "?", "?it/s"
    rate = n / elapsed
    rate_fmt = f"{1 / rate:5.2f}s/it" if rate < 1 else f"{rate:5.2f}it/s"
    return "", rate_fmt


def _remaining(n: int, total: int, elapsed: float) -> str:
    if n <= 0 or elapsed <= 0:
        return "?"
    return _fmt_interval((total - n) * elapsed / n)


def shards_line(desc: str, n: int, total: int, elapsed: float) -> str:
    """SGLang's BAR_FORMAT for checkpoint shards (one line per update)."""
    pct = 100.0 * n / total if total else 100.0
    _, rate = _rates(n, elapsed)
    return (
        f"{desc}: {pct:3.0f}% Completed | {n}/{total} "
        f"[{_fmt_interval(elapsed)}<{_remaining(n, total, elapsed)}, {rate}]"
    )


def tqdm_line(desc: str, n: int, total: int, elapsed: float, width: int = 10) -> str:
    """tqdm's default meter with a 10-cell bar (what a non-tty stderr gets)."""
    frac = n / total if total else 1.0
    cells = frac * width
    full = int(cells)
    bar = "█" * full
    if full < width:
        bar += _PARTIALS[int((cells - full) * 8)] + " " * (width - full - 1)
    _, rate = _rates(n, elapsed)
    return (
        f"{desc}: {frac * 100:3.0f}%|{bar}| {n}/{total} "
        f"[{_fmt_interval(elapsed)}<{_remaining(n, total, elapsed)}, {rate}]"
    )

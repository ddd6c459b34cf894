"""Files written whole: a stop or a failure midway leaves the old file, never half a new one."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def write_whole(path: Path, write: Callable[[Path], object]) -> None:
    """`write(temporary)` beside `path`, then one rename puts it in place. The temporary (`*.partial`)
    matches no pattern a reader looks for, and a write that fails or is stopped removes it."""
    temporary = path.with_name(path.name + ".partial")
    try:
        write(temporary)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, path)

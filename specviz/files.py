"""Files written whole: a stop or a failure midway leaves the old file, never half a new one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_whole(path: Path, write: Callable[[Path], object]) -> None:
    """`write(temporary)` beside `path`, then one rename puts it in place. The temporary (`*.<pid>.partial`:
    two processes may write the same cached measurement at once) matches no pattern a reader looks for,
    and a write that fails or is stopped removes it."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        write(temporary)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, path)


def save_whole_dir(path: Path, save: Callable[[Path], object]) -> None:
    """`save(folder)` into a new folder beside `path`, then one rename puts it in place: a process that
    finds the folder finds all of it. Where another process put it there first, its folder stays;
    a save that fails or is stopped leaves nothing behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}-"))
    try:
        save(staging)
        staging.rename(path)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not path.exists():
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise

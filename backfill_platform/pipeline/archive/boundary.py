"""The archive root is a boundary: what a local archive may read below it.

The platform reads whatever its listing names, and it runs with credentials and a filesystem that the
stream's producers do not have. So an entry below the root is read only if it is a regular, readable
file whose real path is inside the (resolved) root. A symlink leading outside (to a host file, or an hour
folder linked to an outside folder), a FIFO (a read would block forever), a device (`/dev/zero` never
ends), a socket, a broken or looping link and an unreadable file are never opened: the listing skips them
and `LocalArchive.unlisted_files` reports each with its reason, so they are counted and named, not lost.

A symlink whose target stays inside the root is followed, as before. Judged from `os.scandir` entries,
so an ordinary file costs no system call beyond the directory read and one `access`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# Each refusal's reason starts with this, so the accounting can tell them from the layout's reasons.
REFUSED = "refused at the archive boundary, never read: "

_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def is_refusal(why: str) -> bool:
    return why.startswith(REFUSED)


def inside(path: Path, root: Path) -> bool:
    """Whether `path`'s real location (links resolved) is `root` or below it (`root` is resolved)."""
    try:
        return path.resolve(strict=True).is_relative_to(root)
    except (OSError, RuntimeError):  # missing, a loop, unreadable parent
        return False


def folder_refusal(folder: Path, root: Path) -> str | None:
    """Why the files of `folder` (below `root`) are not read: it is reached through a link leading out."""
    if inside(folder, root):
        return None
    return REFUSED + "a folder reached through a symlink leading outside the archive root"


def entry_refusal(entry: os.DirEntry, root: Path, want_dir: bool = False) -> str | None:
    """Why the file (or, with `want_dir`, the folder) `entry` is not read, or None if it may be."""
    try:
        if entry.is_symlink():
            target = Path(entry.path)
            try:
                real = target.resolve(strict=True)
            except (OSError, RuntimeError):
                return REFUSED + "a broken or looping symlink"
            if not real.is_relative_to(root):
                return REFUSED + "a symlink leading outside the archive root"
            mode = os.stat(real).st_mode
        else:
            mode = entry.stat(follow_symlinks=False).st_mode
    except OSError as exc:
        return REFUSED + f"cannot be examined ({exc.strerror})"
    wanted = stat.S_ISDIR(mode) if want_dir else stat.S_ISREG(mode)
    if not wanted:
        kind = "a regular file" if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "a special file")
        return REFUSED + f"{kind}, not a {'folder' if want_dir else 'regular file'}"
    if not os.access(entry.path, os.R_OK | (os.X_OK if want_dir else 0)):
        return REFUSED + "unreadable (permission denied)"
    return None


def lstat_size(path: Path) -> int:
    """The size an entry reports without following it (a link's own; 0 if it cannot be examined)."""
    try:
        return path.lstat().st_size
    except OSError:
        return 0

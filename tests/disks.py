"""A small filesystem that can be filled and freed: a tmpfs of a few MB
(mounting needs root; the fixture unmounts it in its teardown)."""

from __future__ import annotations

import os
import pathlib
import subprocess


class SmallDisk:
    def __init__(self, path: pathlib.Path, size_mb: int) -> None:
        self.path = path
        self.size_mb = size_mb
        self._filler = path / ".filler"

    def mount(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m", "tmpfs", str(self.path)], check=True)

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], check=True)

    def free_bytes(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def fill(self, leave_bytes: int = 0) -> None:
        """Take all free space but ``leave_bytes`` (into a filler file that ``free`` removes)."""
        chunk = b"\0" * (1 << 20)
        fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            while (room := self.free_bytes() - leave_bytes) > 0:
                try:
                    os.write(fd, chunk[: max(min(room, len(chunk)), 4096)])
                except OSError:
                    break
        finally:
            os.close(fd)

    def free(self) -> None:
        self._filler.unlink(missing_ok=True)

    def grow(self, size_mb: int) -> None:
        """More room without removing anything (what an operator extending the volume does)."""
        subprocess.run(["mount", "-o", f"remount,size={size_mb}m", str(self.path)], check=True)
        self.size_mb = size_mb

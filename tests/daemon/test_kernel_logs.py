"""Each agent kernel's own log file: private, appended to, never through a link, the newest kept."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from prime_kernel.daemon import kernel_logs


def test_a_kernel_log_is_private_and_appended_to(tmp_path: Path) -> None:
    for text in (b"first\n", b"second\n"):
        fd = kernel_logs.open_log(tmp_path, "k1")
        try:
            os.write(fd, text)
        finally:
            os.close(fd)
    folder = tmp_path / "logs" / "kernels"
    assert (folder / "k1.log").read_bytes() == b"first\nsecond\n"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "k1.log").stat().st_mode & 0o777 == 0o600


def test_a_link_in_place_of_the_log_is_refused(tmp_path: Path) -> None:
    """Agent code could plant a link to make the daemon write elsewhere."""
    folder = tmp_path / "logs" / "kernels"
    folder.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.write_text("untouched")
    (folder / "k1.log").symlink_to(target)
    with pytest.raises(OSError) as raised:
        kernel_logs.open_log(tmp_path, "k1")
    assert raised.value.errno == errno.ELOOP
    assert target.read_text() == "untouched"


def test_only_the_newest_logs_are_kept(tmp_path: Path) -> None:
    for i in range(5):
        log = tmp_path / f"k{i}.log"
        log.write_text(str(i))
        os.utime(log, (1000 + i, 1000 + i))
    (tmp_path / "notes.txt").write_text("not a log")
    kernel_logs.prune(tmp_path, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k3.log", "k4.log", "notes.txt"]

"""Host uids for agent kernels (server as root): one per kernel, never the same one for two
servers, and the root shared with the agents' group by a POSIX ACL that new files inherit."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from prime_kernel.daemon.agent_users import AgentUsers, processes_of

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="setting uids needs root")


def test_a_uid_per_kernel_and_none_shared_between_servers(tmp_path: Path) -> None:
    one = AgentUsers(71000, 3, 71000, lock_dir=tmp_path)
    other = AgentUsers(71000, 3, 71000, lock_dir=tmp_path)  # another server on the machine
    a, b = one.take("k1"), one.take("k2")
    assert a != b and one.take("k1") == a  # a restarted kernel keeps its uid
    c = other.take("k3")
    assert c not in (a, b)
    with pytest.raises(RuntimeError, match="no free uid"):
        other.take("k4")
    one.give_back("k1")
    assert other.take("k4") == a


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder any user may reach (pytest's own are under a 0700 one): as in the sandbox,
    where the folders above the root are made 0755."""
    folder = Path(tempfile.mkdtemp(prefix="prime-acl-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


@root_only
def test_the_root_is_shared_with_the_agents_group(tmp_path: Path, open_folder: Path) -> None:
    root = open_folder / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "old.txt").write_text("made before")
    (root / ".prime").mkdir(mode=0o700)
    users = AgentUsers(71000, 10, 71000, lock_dir=tmp_path)
    users.share(str(root), skip=[str(root / ".prime")])
    (root / "sub" / "new.txt").write_text("made after")  # by the server, after the ACL

    def as_agent(uid: int, path: Path) -> int:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setgroups([])
                os.setresgid(71000, 71000, 71000)
                os.setresuid(uid, uid, uid)
                with open(path, "a") as f:
                    f.write("x")
                code = 0
            except OSError:
                code = 2
            finally:
                os._exit(code)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    uid = users.take("k1")
    assert as_agent(uid, root / "sub" / "old.txt") == 0  # existing files
    assert as_agent(uid, root / "sub" / "agent.txt") == 0  # new files in existing folders
    assert as_agent(uid, root / "sub" / "new.txt") == 0  # files made later by others
    assert as_agent(uid, root / ".prime" / "x") == 2  # the store is not shared
    assert (root / "sub" / "agent.txt").stat().st_uid == uid


@root_only
def test_a_uid_goes_back_only_once_none_of_its_processes_runs(tmp_path: Path) -> None:
    # A uid of this test process alone: no other server or test hands it out.
    first = 90_000_000 + os.getpid()
    users = AgentUsers(first, 1, first, lock_dir=tmp_path)
    uid = users.take("k1")
    # What a kernel's sandbox can leave as it ends: a process, and orphans it forked.
    left = subprocess.Popen(
        ["/bin/sh", "-c", "sleep 600 & sleep 600 & exec sleep 600"],
        user=uid,
        group=first,
        extra_groups=[],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,  # open in the orphans too: read to its end once they are gone
    )
    assert len(processes_of(uid)) >= 1
    users.give_back("k1")
    assert processes_of(uid) == []
    assert left.wait(10) == -9
    assert left.stdout is not None and left.stdout.read() == b""  # every holder ended
    assert AgentUsers(first, 1, first, lock_dir=tmp_path).take("k2") == uid  # free again


def test_processes_of_a_uid_are_found_by_their_status_and_zombies_are_not() -> None:
    me = os.getpid()
    assert processes_of(os.getuid(), [me]) == [me]
    assert me in processes_of(os.getuid())  # the scan of every process finds it too
    assert processes_of(os.getuid() + 1, [me]) == []
    zombie = subprocess.Popen(["true"])
    # Ended, not yet waited for: a zombie, which holds no resource of its uid.
    os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOWAIT)
    assert processes_of(os.getuid(), [zombie.pid]) == []
    zombie.wait()
    assert processes_of(os.getuid(), [zombie.pid]) == []  # gone: no status to read

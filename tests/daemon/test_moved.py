"""Settings that moved keep working under their old name for one release: copied to the new
class with a warning, the new name winning when both are given, the given config untouched."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from traitlets import Int
from traitlets.config import Config, LoggingConfigurable

from prime_kernel.daemon.daemon import Daemon
from prime_kernel.daemon.gateway import GatewayLauncher, KernelPlacement
from prime_kernel.daemon.launcher import KernelLauncher, LocalLauncher
from prime_kernel.daemon.moved import relocate
from prime_kernel.daemon.sandbox import KernelLimits, Sandbox, SandboxMounts


class Old(LoggingConfigurable):
    def __init__(self, **kwargs: object) -> None:
        self.notes = relocate("Old", {"size": "New"}, kwargs)
        super().__init__(**kwargs)
        self.new = New(parent=self)


class New(LoggingConfigurable):
    size = Int(1, config=True)


def test_an_old_name_in_the_config_reaches_the_new_class_with_a_warning() -> None:
    given = Config({"Old": {"size": 5}})
    old = Old(config=given)
    assert old.new.size == 5
    assert old.notes == [
        "c.Old.size is deprecated: use c.New.size (the old name goes in the next release)"
    ]
    assert given == Config({"Old": {"size": 5}})  # read, not changed


def test_the_new_name_wins_over_the_old_one() -> None:
    old = Old(config=Config({"Old": {"size": 5}, "New": {"size": 7}}))
    assert old.new.size == 7
    assert "ignored: c.New.size is set too, and wins" in old.notes[0]
    same = Old(config=Config({"Old": {"size": 7}, "New": {"size": 7}}))
    assert same.notes == []


def test_an_old_keyword_argument_and_the_parents_config() -> None:
    assert Old(size=3).new.size == 3
    parent = LoggingConfigurable(config=Config({"Old": {"size": 4}}))
    assert Old(parent=parent).new.size == 4
    assert Old().notes == [] and Old().new.size == 1


def test_the_daemons_moved_settings(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = Config(
        {"Daemon": {"pool_size": 0, "max_depth": 2, "max_turns": 5, "max_concurrent": 7}}
    )
    with caplog.at_level(logging.WARNING):
        daemon = Daemon(root_dir=str(tmp_path), config=config, cell_timeout=9.0, compact_at=0.5)
    assert daemon.custody.pool_size == 0 and daemon.custody.cell_timeout == 9.0
    assert daemon.admission.max_depth == 2
    assert daemon.host.max_turns == 5 and daemon.host.compact_at == 0.5
    assert daemon.max_concurrent == 7  # not moved: still the Daemon's
    assert "c.Daemon.pool_size is deprecated: use c.KernelCustody.pool_size" in caplog.text
    assert "Daemon(cell_timeout=...) is deprecated" in caplog.text
    assert "c.Daemon.max_turns is deprecated: use c.Host.max_turns" in caplog.text


def test_the_router_passivation_and_recovery_read_their_own_settings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = Config(
        {
            "Daemon": {
                "model_timeout": 0.0,
                "direct_openai": False,
                "idle_timeout": 5.0,
                "auto_resume": False,
            }
        }
    )
    with caplog.at_level(logging.WARNING):
        daemon = Daemon(root_dir=str(tmp_path), config=old, stop_snapshot_timeout=2.0)
    assert daemon.router.timeout is None and not daemon.router.direct_openai
    assert daemon.passivation.idle_timeout == 5.0
    assert not daemon.recovery.auto_resume and daemon.recovery.stop_snapshot_timeout == 2.0
    assert "c.Daemon.model_timeout is deprecated: use c.ModelRouter.model_timeout" in caplog.text
    assert "c.Daemon.idle_timeout is deprecated: use c.Passivation.idle_timeout" in caplog.text
    assert "Daemon(stop_snapshot_timeout=...) is deprecated" in caplog.text

    new = Config({"ModelRouter": {"model_timeout": 3.0}, "Recovery": {"auto_resume": False}})
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        daemon = Daemon(root_dir=str(tmp_path / "new"), config=new)
    assert daemon.router.timeout == 3.0 and daemon.router.direct_openai
    assert not daemon.recovery.auto_resume and daemon.passivation.idle_timeout == 1800.0
    assert "deprecated" not in caplog.text


def test_the_harness_moved_settings_reach_the_refiner_and_the_learner(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = Config(
        {
            "Harness": {
                "refine_model": "scripted/old",
                "refine_timeout": 5.0,
                "learn": False,
                "examples_shown": 3,
                "review_policy": "auto",
            },
            "Refiner": {"refine_timeout": 9.0},
        }
    )
    with caplog.at_level(logging.WARNING):
        daemon = Daemon(root_dir=str(tmp_path), config=old)
    assert daemon.refiner.refine_model == "scripted/old" and daemon.refiner.refine_timeout == 9.0
    assert not daemon.learner.learn and daemon.learner.examples_shown == 3
    assert daemon.harness.review_policy == "auto"  # not moved: the harness's own
    assert "c.Harness.refine_model is deprecated: use c.Refiner.refine_model" in caplog.text
    assert "c.Harness.learn is deprecated: use c.Learner.learn" in caplog.text
    assert "c.Harness.refine_timeout is deprecated and ignored" in caplog.text
    assert "review_policy" not in caplog.text
    assert old["Harness"]["learn"] is False  # the given config is read, not changed


def test_the_collectors_settings_reach_the_spills_its_new_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = Config({"Collector": {"spill_threshold": 5, "snapshot_cap": 7}})
    with caplog.at_level(logging.WARNING):
        daemon = Daemon(root_dir=str(tmp_path), config=old)
    assert daemon.spills.spill_threshold == 5 and daemon.spills.snapshot_cap == 7
    assert daemon.snapshots.cap() == 7  # read through the spills
    assert "c.Collector.spill_threshold is deprecated: use c.Spills.spill_threshold" in caplog.text


def test_where_agent_kernels_run_is_the_placements_and_the_launchers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = Config(
        {
            "Daemon": {
                "gateway_url": "http://gw:8888",
                "public_url": "http://me:8888/",
                "kernel_name": "agents",
            }
        }
    )
    with caplog.at_level(logging.WARNING):
        daemon = Daemon(root_dir=str(tmp_path), config=old, kernel_launcher_class=KernelLauncher)
    placement = KernelPlacement(parent=daemon)
    assert placement.gateway_url == "http://gw:8888"
    assert placement.kernel_launcher_class is KernelLauncher
    assert GatewayLauncher(parent=placement).public_url == "http://me:8888/"
    assert LocalLauncher(parent=placement).kernel_name == "agents"
    for note in (
        "c.Daemon.gateway_url is deprecated: use c.KernelPlacement.gateway_url",
        "c.Daemon.public_url is deprecated: use c.GatewayLauncher.public_url",
        "c.Daemon.kernel_name is deprecated: use c.KernelLauncher.kernel_name",
        "Daemon(kernel_launcher_class=...) is deprecated",
    ):
        assert note in caplog.text


def test_a_parent_relocates_from_the_config_only() -> None:
    kwargs: dict[str, object] = {"config": Config({"Old": {"size": 5}}), "size": 3}
    notes = relocate("Old", {"size": "New"}, kwargs, arguments=False)
    assert kwargs["size"] == 3  # the parent's own argument, not the old class's
    assert kwargs["config"] == Config({"Old": {}, "New": {"size": 5}}) and len(notes) == 1


def test_every_daemon_class_has_at_most_twelve_settings() -> None:
    from prime_kernel.daemon.daemon import SERVICES

    for cls in (*SERVICES, Sandbox, SandboxMounts, KernelLimits):
        assert len(cls.class_traits(config=True)) <= 12, cls.__name__


def test_the_sandboxs_limits_and_mounts_read_their_own_settings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    old = Config({"Sandbox": {"memory_limit": 1 << 30, "tmp_size": 4096, "network": False}})
    with caplog.at_level(logging.WARNING):
        sandbox = Sandbox(config=old, writable_paths=["/data"])
    assert sandbox.limits.memory_limit == 1 << 30 and sandbox.mounts.tmp_size == 4096
    assert sandbox.mounts.writable_paths == ["/data"]
    assert not sandbox.network  # not moved: still the Sandbox's
    assert "c.Sandbox.memory_limit is deprecated: use c.KernelLimits.memory_limit" in caplog.text
    assert "c.Sandbox.tmp_size is deprecated: use c.SandboxMounts.tmp_size" in caplog.text
    assert "Sandbox(writable_paths=...) is deprecated" in caplog.text

    new = Config({"KernelLimits": {"process_limit": 7}, "SandboxMounts": {"shm_size": 8192}})
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        sandbox = Sandbox(config=new)
    assert sandbox.limits.rlimits(sandboxed=True)["nproc"] == 7
    assert sandbox.mounts.shm_size == 8192
    assert "deprecated" not in caplog.text

"""`--config` pairs as server arguments: a setting that moved off the Daemon (or the Harness)
goes under its new name, so that a person's `--config Daemon.pool_size=0` still wins over
`run`'s own `--KernelCustody.pool_size=1` default (no process started)."""

from __future__ import annotations

import pytest

from prime_kernel.cli.common import CLIError
from prime_kernel.cli.inputs import check_daemon_settings, config_argv


def test_moved_settings_are_passed_under_their_new_names() -> None:
    argv = config_argv(["Daemon.pool_size=0", "Daemon.max_concurrent=2", "Admission.max_depth=1"])
    assert argv == [
        "--KernelCustody.pool_size=0",
        "--Daemon.max_concurrent=2",
        "--Admission.max_depth=1",
    ]
    harness = ["Harness.refine_model=scripted/x", "Harness.learn=False", "Harness.global_dir=/g"]
    assert config_argv(harness) == [
        "--Refiner.refine_model=scripted/x",
        "--Learner.learn=False",
        "--Harness.global_dir=/g",
    ]
    with pytest.raises(CLIError, match=r"wants Class\.trait=VALUE"):
        config_argv(["pool_size=0"])


def test_settings_are_checked_where_they_live_under_either_name() -> None:
    check_daemon_settings(
        ["Daemon.cell_timeout=5", "KernelCustody.cell_timeout=5", "Mailbox.message_rate_limit=9"]
    )
    with pytest.raises(CLIError, match=r"--config Daemon\.max_depth wants an int"):
        check_daemon_settings(["Daemon.max_depth=deep"])
    with pytest.raises(CLIError, match="the Runs has no setting 'loop'"):
        check_daemon_settings(["Runs.loop=x"])
    check_daemon_settings(["Daemon.idle_timeout=5", "ModelRouter.direct_openai=False"])
    with pytest.raises(CLIError, match=r"--config Recovery\.auto_resume wants a boolean"):
        check_daemon_settings(["Recovery.auto_resume=maybe"])
    with pytest.raises(CLIError, match=r"--config Daemon\.model_timeout wants a float"):
        check_daemon_settings(["Daemon.model_timeout=soon"])


def test_the_settings_of_every_service_the_daemon_builds_are_checked() -> None:
    check_daemon_settings(["Goals.max_progress=3", "DiskSpace.min_free_bytes=0"])
    with pytest.raises(CLIError, match=r"--config Schedules\.min_interval wants a float"):
        check_daemon_settings(["Schedules.min_interval=often"])
    with pytest.raises(CLIError, match="the Autonomy has no setting 'turn'"):
        check_daemon_settings(["Autonomy.turn=3"])


def test_the_harness_refiner_and_learner_settings_are_checked() -> None:
    check_daemon_settings(
        ["Harness.review_policy=auto", "Harness.refine_timeout=30", "Learner.examples_shown=2"]
    )
    with pytest.raises(CLIError, match=r"--config Harness\.review_policy wants any of"):
        check_daemon_settings(["Harness.review_policy=sometimes"])
    with pytest.raises(CLIError, match=r"--config Harness\.learn wants a boolean"):
        check_daemon_settings(["Harness.learn=perhaps"])
    with pytest.raises(CLIError, match="the Refiner has no setting 'refine_models'"):
        check_daemon_settings(["Refiner.refine_models=x"])


def test_the_sandboxs_settings_are_checked_and_passed_where_they_live() -> None:
    argv = config_argv(["Sandbox.memory_limit=5", "Sandbox.mode=none", "SandboxMounts.tmp_size=9"])
    assert argv == [
        "--KernelLimits.memory_limit=5",
        "--Sandbox.mode=none",
        "--SandboxMounts.tmp_size=9",
    ]
    check_daemon_settings(["Sandbox.tmp_size=4096", "KernelLimits.process_limit=8"])
    with pytest.raises(CLIError, match=r"--config Sandbox\.process_limit wants an int"):
        check_daemon_settings(["Sandbox.process_limit=many"])
    with pytest.raises(CLIError, match=r"--config Sandbox\.mode wants any of"):
        check_daemon_settings(["Sandbox.mode=docker"])
    with pytest.raises(CLIError, match="the KernelLimits has no setting 'tmp_size'"):
        check_daemon_settings(["KernelLimits.tmp_size=1"])


def test_the_collectors_settings_are_the_spills_now() -> None:
    argv = config_argv(["Collector.spill_threshold=5", "Spills.snapshot_cap=9"])
    assert argv == ["--Spills.spill_threshold=5", "--Spills.snapshot_cap=9"]
    check_daemon_settings(["Collector.spill_at_compaction=False", "Spills.spill_threshold=0"])
    with pytest.raises(CLIError, match=r"--config Collector\.spill_threshold wants an int"):
        check_daemon_settings(["Collector.spill_threshold=big"])


def test_where_agent_kernels_run_is_passed_and_checked_where_it_lives() -> None:
    argv = config_argv(
        [
            "Daemon.gateway_url=http://gw:8888",
            "Daemon.public_url=http://me/",
            "Daemon.kernel_name=k",
        ]
    )
    assert argv == [
        "--KernelPlacement.gateway_url=http://gw:8888",
        "--GatewayLauncher.public_url=http://me/",
        "--KernelLauncher.kernel_name=k",
    ]
    check_daemon_settings(
        ["KernelPlacement.gateway_url=http://gw:8888", "LocalLauncher.fork=False"]
    )
    with pytest.raises(CLIError, match=r"--config GatewayLauncher\.validate_cert wants a boolean"):
        check_daemon_settings(["GatewayLauncher.validate_cert=sometimes"])
    with pytest.raises(CLIError, match="the KernelPlacement has no setting 'public_url'"):
        check_daemon_settings(["KernelPlacement.public_url=http://me/"])

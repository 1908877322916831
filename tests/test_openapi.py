"""A client nobody here wrote agrees with the HTTP API: schemathesis (PyPI), reading
``/openapi.json``, generates requests for every operation and runs its standard checks on the
answers (no server error, documented status codes, content types, headers and bodies, valid
data accepted, invalid data rejected, authentication enforced, 405 with ``Allow``), in all its
phases (examples, coverage, fuzzing, stateful), as ``st run --checks all`` does.

The app is the real one over a copy of the sample index, with an API key, a folder of server
documents and a run for the viewer, served over HTTP on 127.0.0.1; every route is tried,
``ask`` and the chat completions included, once with the scripted LLM answering and once
with the LLM down. Schemathesis's time budget keeps the file around a minute.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")


from conftest import LiveServer, needs  # noqa: E402
from sleuth import Settings  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service.service import Service  # noqa: E402
from sleuth.testing.fake import FakeLLMServer, reply  # noqa: E402

# fuzzing a live server for a minute; schemathesis is imported by the tests that use it (the
# fast tier's collection would pay a second for it)
pytestmark = [pytest.mark.slow, needs("schemathesis", "dev")]

# The key goes as a bearer token. (An empty Authorization header counts as none, which
# test_http.py relies on, so schemathesis generating one next to an X-API-Key would read as
# a key it made up being accepted.)
KEY = "secret-key-1"
# schemathesis's time budget per run: the file stays around a minute (the 150 s run:
# SCHEMATHESIS_SECONDS=150 python -m pytest tests/test_openapi.py --slow)
SECONDS = float(os.environ.get("SCHEMATHESIS_SECONDS", "25"))


# The operations that ask the LLM: with it down they answer 502 or 503 (Retry-After), as
# the document declares, and nothing else fails
ASKING = "^POST /v1/(ask|ask/stream|chat/completions)$"


def _config(url: str, *, llm_down: bool = False) -> Any:
    """As ``st run --checks all`` runs against a live server, bounded in time (fuzzing and
    stateful testing repeat until ``max-time`` is spent), without the response time limit
    (timings live in benchmarks, not tests) and with no allowance: every status a valid
    request gets must be one the document declares for it, and a 2xx or a 404 for what
    does not exist. With the LLM down, the asking operations may answer its 502 and 503."""
    operations = [{"include-name-regex": ASKING, "checks": {"not_a_server_error": {
        "expected-statuses": ["2xx", "3xx", "4xx", "502", "503"]}}}] if llm_down else []
    # A multipart form field is text: the "null" schemathesis sends as a field of the wrong
    # type arrives as the text "null", a valid group name, so it cannot be refused.
    operations.append({"include-name-regex": "^POST /v1/documents$",
                       "checks": {"negative_data_rejection": {"enabled": False}}})
    # No JSON schema says which strings are arithmetic: an expression (or a formula in words)
    # the schema admits may still be refused with the 400 the document declares ("1/0",
    # "x + 1", "000").
    operations.append({"include-name-regex": "^POST /v1/tools/(calculate|compute_metric)$",
                       "checks": {"positive_data_acceptance": {"expected-statuses": [
                           "2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]}}})
    import schemathesis

    return schemathesis.config.SchemathesisConfig.from_dict({
        "max-time": SECONDS, "workers": 1, "seed": 21, "base-url": url,
        "auth": {"openapi": {"bearer": {"bearer": KEY}}},
        "generation": {"max-examples": 10}, "operations": operations,
    })


def _schema(sample_index: Path, folder: Path, llm_url: str, *,
            llm_down: bool = False) -> Iterator[Any]:
    """The real app, served over HTTP, over a copy of the sample index with its graph, a
    folder of server documents, a run for the viewer and the LLM at ``llm_url``."""
    shutil.copytree(sample_index, folder / "idx")
    run = folder / "runs" / "full"
    run.mkdir(parents=True)
    (run / "predictions.jsonl").write_text(json.dumps({
        "question_id": "q1", "question": "Who explained levers?", "answer": "Greatorex",
        "gold_answer": "Greatorex", "agent": "full", "trajectory": [], "llm_calls": 1,
        "seconds": 0.5, "error": None}) + "\n")
    (folder / "docs").mkdir()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SLEUTH_BASE_URL", llm_url)
        env.setenv("SLEUTH_MODEL", "fake-model")
        service = Service(folder / "idx", Settings.load(serve={
            "api_keys": {"tests": KEY}, "document_roots": [str(folder / "docs")],
            "runs": str(folder / "runs")}, llm={"max_retries": 1}))
        service.index.embedder  # noqa: B018 - loaded now, not by the first timed request
        live = LiveServer(create_app(service))
        try:
            import schemathesis

            yield schemathesis.openapi.from_url(f"{live.url}/openapi.json",
                                                config=_config(live.url, llm_down=llm_down))
        finally:
            live.close()
            service.close()


@pytest.fixture(scope="module")
def api_schema(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with FakeLLMServer([reply("Greatorex. [pepys-diary-1660.md#0]")] * 10_000) as llm:
        yield from _schema(sample_index, tmp_path_factory.mktemp("openapi"), llm.base_url)


@pytest.fixture(scope="module")
def llm_down(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with socket.socket() as sock:  # a port nothing listens on: the LLM is down
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield from _schema(sample_index, tmp_path_factory.mktemp("down"),
                       f"http://127.0.0.1:{port}/v1", llm_down=True)


def _failures(schema: Any) -> tuple[list[str], Counter[int]]:
    from schemathesis.engine import Status, events, from_schema

    failures, statuses = [], Counter[int]()
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished):
            recorder = event.recorder
            statuses.update(i.response.status_code for i in recorder.interactions.values()
                            if i.response is not None)
            failures += [_failure(recorder, case_id, check)
                         for case_id, checks in recorder.checks.items() for check in checks
                         if check.status == Status.FAILURE]
        elif isinstance(event, events.NonFatalError | events.FatalError):
            failures.append(f"error: {getattr(event, 'info', event)}")
    return failures, statuses


def _failure(recorder: Any, case_id: str, check: Any) -> str:
    """A failed check: the operation, the check, what it says, the request that failed
    (as curl) and the start of the answer."""
    info = check.failure_info
    if info is None:
        return f"{recorder.label}: {check.name}"
    failed = info.failure.case_id or case_id
    interaction = recorder.interactions.get(failed)
    answer = ""
    if interaction is not None and interaction.response is not None:
        response = interaction.response
        answer = f"\n  -> {response.status_code} {(response.content or b'')[:300]!r}"
    return f"{recorder.label}: {check.name}: {info.failure.message}\n  {info.code_sample}{answer}"


def test_schemathesis_finds_no_failure(api_schema: Any) -> None:
    failures, statuses = _failures(api_schema)
    assert not failures, "\n\n".join(sorted(set(failures)))
    assert statuses[200] > 100, statuses  # the calls got through, not only 4xx answers


def test_schemathesis_finds_no_failure_with_the_llm_down(llm_down: Any) -> None:
    failures, statuses = _failures(llm_down)
    assert not failures, "\n\n".join(sorted(set(failures)))
    assert statuses[503] > 0, statuses  # questions are refused at once, saying when to retry


def test_the_document_declares_its_security_and_one_body_per_tool(
        api_schema: Any) -> None:
    from sleuth.tools import TOOLS

    document = api_schema.raw_schema
    assert set(document["components"]["securitySchemes"]) == {
        "bearer", "apiKeyHeader", "apiKeyQuery"}
    paths = document["paths"]
    for name in TOOLS:
        body = paths[f"/v1/tools/{name}"]["post"]["requestBody"]["content"]
        assert body["application/json"]["schema"]["properties"], name
    stream = paths["/v1/ask/stream"]["post"]["responses"]["200"]["content"]
    assert list(stream) == ["text/event-stream"]

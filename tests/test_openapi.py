"""A client nobody here wrote agrees with the HTTP API: schemathesis (PyPI), reading
``/openapi.json``, generates requests for every operation and runs its standard checks on the
answers (no server error, documented status codes, content types, headers and bodies, valid
data accepted, invalid data rejected, authentication enforced, 405 with ``Allow``), in all its
phases (examples, coverage, fuzzing, stateful), as ``st run --checks all`` does.

The app is the real one over a copy of the sample index, with an API key, a fake LLM for
``ask`` and a folder of server documents; it is served in process (``from_asgi``), and
schemathesis's time budget keeps the file well under a minute.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")


from sleuth import Settings  # noqa: E402
from sleuth.llm import FakeLLMServer, reply  # noqa: E402
from sleuth.server.http import create_app  # noqa: E402
from sleuth.service import Service  # noqa: E402

# The key goes as a bearer token. (An empty Authorization header counts as none, which
# test_http.py relies on, so schemathesis generating one next to an X-API-Key would read as
# a key it made up being accepted.)
KEY = "secret-key-1"
# Rejections a schema cannot express, allowed for these operations only: a reference id that
# no search returned (400, asserted in test_access.py), a line past a document's end, two
# uploads under one name (400, test_access.py), no knowledge graph in the index or no entity
# of that name, a search whose every query is blank; a passage that names neither a document
# nor a chunk, lines past a document's end or a page of an unpaged document (400,
# test_library_api.py); and POST /v1/tools/{name}, whose `name` the stateful and
# link-following generators fill from GET /v1/tools although the document excludes those
# names (each has its own route, which a concrete path reaches first); and a chat whose last
# user message has no text (blank, or only non-text parts) or is too long.
INDEX_DEPENDENT = ("^(POST /v1/(tools/(find|open|search|graph_entity|graph_neighbors|"
                   "graph_path|graph_ppr|\\{name\\})|documents|chat/completions)|"
                   "GET /v1/passage)$")
SECONDS = 25  # schemathesis's time budget: the file stays well under a minute
ACCEPTED = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]


def _config() -> Any:
    """As ``st run --checks all`` runs, bounded in time (fuzzing and stateful testing repeat
    until ``max-time`` is spent), with the allowances above and without the response time
    limit (timings live in benchmarks, not tests)."""
    return schemathesis.config.SchemathesisConfig.from_dict({
        "max-time": SECONDS, "workers": 1, "seed": 21,
        "auth": {"openapi": {"bearer": {"bearer": KEY}}},
        "generation": {"max-examples": 10},
        "operations": [{"include-name-regex": INDEX_DEPENDENT, "checks": {
            "positive_data_acceptance": {"expected-statuses": ACCEPTED}}}],
    })


@pytest.fixture(scope="module")
def api_schema(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("openapi")
    shutil.copytree(sample_index, folder / "idx")
    run = folder / "runs" / "full"
    run.mkdir(parents=True)
    (run / "predictions.jsonl").write_text(json.dumps({
        "question_id": "q1", "question": "Who explained levers?", "answer": "Greatorex",
        "gold_answer": "Greatorex", "agent": "full", "trajectory": [], "llm_calls": 1,
        "seconds": 0.5, "error": None}) + "\n")
    (folder / "docs").mkdir()
    with FakeLLMServer([reply("Nothing found.")] * 10_000) as llm, \
            pytest.MonkeyPatch.context() as env:
        env.setenv("SLEUTH_BASE_URL", llm.base_url)
        env.setenv("SLEUTH_MODEL", "fake-model")
        service = Service(folder / "idx", Settings.load(serve={
            "api_keys": {"tests": KEY}, "document_roots": [str(folder / "docs")],
            "runs": str(folder / "runs")}))
        service.index.embedder  # noqa: B018 - loaded now, not by the first timed request
        try:
            yield schemathesis.openapi.from_asgi("/openapi.json", create_app(service),
                                                 config=_config())
        finally:
            service.close()


def test_schemathesis_finds_no_failure(api_schema: Any) -> None:
    from schemathesis.engine import Status, events, from_schema

    failures, statuses = [], Counter[int]()
    for event in from_schema(api_schema).execute():
        if isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished):
            recorder = event.recorder
            statuses.update(i.response.status_code for i in recorder.interactions.values()
                            if i.response is not None)
            failures += [f"{recorder.label}: {check.name}: "
                         f"{check.failure_info.failure.message if check.failure_info else ''}"
                         for checks in recorder.checks.values() for check in checks
                         if check.status == Status.FAILURE]
        elif isinstance(event, events.NonFatalError | events.FatalError):
            failures.append(f"error: {getattr(event, 'info', event)}")
    assert not failures, "\n\n".join(sorted(set(failures)))
    assert statuses[200] > 100, statuses  # the calls got through, not only 4xx answers


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

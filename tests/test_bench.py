"""The benchmarks stay runnable and indexed: every script of ``bench/`` and
``bench/diagnostics/`` imports and answers ``--help``, ``bench/README.md`` has a row for
each of them and for nothing else, and ``dev_index`` builds a dev corpus's index once,
reuses it, resumes an interrupted build and rebuilds when the corpus changes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"

# Runs every script with --help in one interpreter (the imports they share are paid once);
# prints {script: [exit code, characters printed]}.
HELP_ALL = r"""
import contextlib, io, json, runpy, signal, sys
from pathlib import Path
bench = Path(sys.argv[1])
saved_path, saved_term = sys.path[:], signal.getsignal(signal.SIGTERM)
out = {}
for name in sys.argv[2:]:
    path = bench / name
    sys.argv = [str(path), "--help"]
    sys.path[:] = [str(path.parent), *saved_path]
    text, code = io.StringIO(), 0
    try:
        with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:
        code = exc.code or 0
    except BaseException as exc:  # an import that fails, a name that no longer exists
        code = repr(exc)
    signal.signal(signal.SIGTERM, saved_term)
    out[name] = [code, len(text.getvalue()), text.getvalue()[-300:]]
sys.stdout = sys.__stdout__
print(json.dumps(out))
"""


def scripts() -> list[str]:
    """The bench scripts, relative to bench/: every .py file but the ``_`` helpers."""
    found = [*BENCH.glob("*.py"), *BENCH.glob("diagnostics/*.py")]
    return sorted(str(p.relative_to(BENCH)) for p in found if not p.name.startswith("_"))


def test_every_script_answers_help() -> None:
    names = scripts()
    assert len(names) > 30
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", HELP_ALL, str(BENCH), *names], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    results: dict[str, list[Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    failed = {name: r for name, r in results.items() if r[0] != 0 or r[1] < 100}
    assert not failed, f"scripts that do not answer --help: {failed}"
    assert sorted(results) == names
    assert time.perf_counter() - started < 60


def readme_rows() -> list[str]:
    """The scripts named in the first cell of bench/README.md's table rows."""
    rows = []
    for line in (BENCH / "README.md").read_text(encoding="utf-8").splitlines():
        cell = re.match(r"\|\s*\[?`([^`]+\.py)`", line)
        if cell:
            rows.append(cell.group(1))
    return rows


def test_readme_lists_every_script_once() -> None:
    rows = readme_rows()
    assert len(rows) == len(set(rows)), "a script has two rows"
    missing = sorted(set(scripts()) - set(rows))
    extra = sorted(set(rows) - set(scripts()))
    assert not missing, f"bench/README.md has no row for {missing}"
    assert not extra, f"bench/README.md lists scripts that do not exist: {extra}"


@pytest.fixture
def common(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """bench/_common.py with its cache in tmp_path and one tiny dev corpus, ``tiny``."""
    monkeypatch.syspath_prepend(str(BENCH))
    import _common

    monkeypatch.setenv("SLEUTH_BENCH_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "data" / "tiny" / "corpus.json"
    corpus.parent.mkdir(parents=True)
    write_corpus(corpus, ["Harborford lies on the river Stone.", "Marie Curie found radium."])
    monkeypatch.setitem(_common.DEV_CORPORA, "tiny", _common.DevCorpus("tiny/corpus.json"))
    return _common


def write_corpus(path: Path, texts: list[str]) -> None:
    path.write_text(json.dumps([{"id": f"p{i}", "title": f"Passage {i}", "text": text}
                                for i, text in enumerate(texts)]), encoding="utf-8")


def documents(index: Path) -> int:
    from sleuth import Index

    with Index.open(index) as opened:
        return opened.stats().documents


@pytest.mark.minilm  # the dev indexes are MiniLM's
def test_dev_index_builds_once_resumes_and_rebuilds(common: Any, tmp_path: Path,
                                                   capfd: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    index = common.dev_index("tiny", data=data)
    assert index == tmp_path / "cache" / "tiny-minilm"
    assert documents(index) == 2
    assert "building" in capfd.readouterr().err
    meta = common.dev_index_meta(index)
    assert meta["state"] == "complete" and meta["key"]["embedder"] == "minilm"

    assert common.dev_index("tiny", data=data) == index  # cached: no build
    assert capfd.readouterr().err == ""
    assert common.dev_index_meta(index)["finished"] == meta["finished"]

    # a build that stopped halfway (its record still says "building") resumes
    record = index.with_name(index.name + ".json")
    record.write_text(json.dumps({**meta, "state": "building"}))
    assert common.dev_index("tiny", data=data) == index
    assert "resuming the build" in capfd.readouterr().err
    assert common.dev_index_meta(index)["state"] == "complete"

    # the same corpus provided again with new times (the shared data each session) is not
    corpus = data / "tiny" / "corpus.json"
    later = corpus.stat().st_mtime + 3600
    os.utime(corpus, (later, later))
    assert common.dev_index("tiny", data=data) == index
    assert capfd.readouterr().err == ""

    # a changed corpus file is indexed again from scratch
    write_corpus(data / "tiny" / "corpus.json", ["One.", "Two.", "Three passages now."])
    assert common.dev_index("tiny", data=data) == index
    assert "changed" in capfd.readouterr().err
    assert documents(index) == 3


def test_dev_index_refuses_what_it_cannot_build(common: Any, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no dev corpus 'nope'"):
        common.dev_index("nope", data=tmp_path / "data")
    with pytest.raises(SystemExit, match="no benchmark data at"):
        common.dev_index("tiny", data=tmp_path / "missing")
    with pytest.raises(SystemExit, match="is missing from the data root"):
        common.dev_index("2wiki", data=tmp_path / "data")
    assert not (tmp_path / "cache").exists()  # nothing built, nothing left behind

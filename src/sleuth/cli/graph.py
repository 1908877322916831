"""``sleuth graph``: build the knowledge graph (:func:`sleuth.graph.building.build_graph`),
review proposed triples, and the graph tools by hand (their commands come from the tool
definitions: ``@tool(command="graph neighbors")``)."""

from __future__ import annotations

import sys

import click

from sleuth.cli.console import Bar, common, emit, int_list, load_settings
from sleuth.cli.tools import ToolGroup


@click.group("graph", cls=ToolGroup)
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
    from sleuth.graph.building import build_graph
    from sleuth.index.write import Index

    with Index.open(settings=load_settings(config, index_dir)) as index, \
            Bar(not as_json, "graph", " chunks") as bar:
        built = build_graph(index, extractor=extractor,  # type: ignore[arg-type]  # a Choice
                            rebuild=rebuild,
                            on_progress=lambda done, total: bar.advance(done, of=total))
    if as_json:
        emit(built.to_dict())
        return
    report = built.report
    merged = f", {report.aliases.merged} aliases merged" if report.aliases else ""
    restored = f", {report.restored} reviewed triples restored" if report.restored else ""
    click.echo(f"processed {report.processed} chunks ({report.unchanged} unchanged, "
               f"{report.removed} removed) | graph: {report.counts['entities']} entities, "
               f"{report.counts['relations']} relations, {report.counts['mentions']} "
               f"mentions{merged}{restored}")
    if built.failures:
        click.echo(f"{len(built.failures)} chunks failed (retried on the next build):")
    for chunk_id, reason in built.failures:
        click.echo(f"  {chunk_id}: {reason}")


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
    from sleuth.index.write import Index

    approve_ids = [i for v in approve for i in int_list(v, "--approve")]
    reject_ids = [i for v in reject for i in int_list(v, "--reject")]
    decided = bool(approve_ids or reject_ids or approve_all)
    interactive = not decided and not as_json and sys.stdin.isatty()
    with Index.open(settings=load_settings(config, index_dir)) as index, \
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
        emit({"decided": [p.to_dict() for p in changed]} if decided
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

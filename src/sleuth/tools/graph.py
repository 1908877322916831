"""Graph tools: the knowledge graph (``sleuth graph build``) as tools any agent can call.

``graph_entity`` finds entities by name, ``graph_neighbors`` lists an entity's relations
with their source chunks, ``graph_path`` connects two entities, and ``graph_ppr`` spreads
Personalized PageRank from seed entities and maps the top entities back to source chunks.
Every result names chunk ids that ``chunk_read`` can open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from sleuth.errors import ToolNotFound
from sleuth.tools.base import QUERY, TOP_K, ToolContext, ToolResult, tool
from sleuth.tools.corpus import StrList

if TYPE_CHECKING:
    from sleuth.graph import Graph
    from sleuth.store.graphs import Entity

SNIPPET_CHARS = 220


def _graph(ctx: ToolContext) -> Graph:
    """The index's graph, opened once and shared (its caches serve every call)."""
    graph: Graph | None = ctx.index.graph()
    if graph is None:
        raise ToolNotFound("this index has no knowledge graph yet; build it with "
                        "`sleuth graph build`")
    return graph


def _resolve(graph: Graph, name: str) -> Entity:
    found = graph.lookup(name, limit=1)
    if not found:
        raise ToolNotFound(f"no entity named {name!r} in the graph; try graph_entity with "
                        "another spelling, or keyword_search")
    return found[0]


def _snippet(ctx: ToolContext, chunk_id: str, start: int, end: int) -> str:
    chunk = ctx.index.read([chunk_id]).chunks
    if not chunk:
        return ""
    text = chunk[0].text
    lo, hi = max(0, start - chunk[0].start), max(0, end - chunk[0].start)
    return " ".join(text[lo:hi].split())[:SNIPPET_CHARS]


@tool(command="graph entity")
def graph_entity(
    ctx: ToolContext,
    name: Annotated[str, Field(min_length=1, max_length=300), QUERY],
    limit: Annotated[int, Field(ge=1, le=20)] = 5,
) -> ToolResult:
    """Find entities (people, places, organisations, works, ...) in the knowledge graph by
    name; spelling variants, case and acronyms are matched. Returns each entity with its
    type and number of relations; use graph_neighbors to see its relations.

    Args:
        name: The entity name, e.g. "Lothair II".
        limit: Entities to return (1-20).
    """
    graph = _graph(ctx)
    found = graph.lookup(name, limit=limit)
    rows = [{"id": e.id, "name": e.name, "type": e.type,
             "relations": len(graph.relations_of(e.id))} for e in found]
    if not rows:
        return ToolResult(f"No entity matches {name!r}.", {"entities": []})
    lines = [f"Entities matching {name!r}:"] + [
        f"- {r['name']} ({r['type']}, {r['relations']} relations)" for r in rows]
    return ToolResult("\n".join(lines), {"entities": rows})


@tool(command="graph neighbors")
def graph_neighbors(
    ctx: ToolContext,
    entity: Annotated[str, Field(min_length=1, max_length=300), QUERY],
    relation: Annotated[str | None, Field(max_length=100)] = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
) -> ToolResult:
    """List an entity's relations in the knowledge graph: each related entity, the relation
    label, and the chunk (with its sentence) the relation was read from. Use it to hop from
    one entity to the next in multi-hop questions.

    Args:
        entity: The entity name, e.g. "Lothair II".
        relation: Only relations whose label contains this, e.g. "son" or "directed".
        limit: Relations to return (1-50).
    """
    graph = _graph(ctx)
    found = _resolve(graph, entity)
    rows = graph.neighbors(found, relation, limit)
    for row in rows:
        row["sentence"] = _snippet(ctx, row["chunk_id"], row["start"], row["end"])
        ctx.tracker.saw(row["chunk_id"], 0.0)
    if not rows:
        like = f" like {relation!r}" if relation else ""
        return ToolResult(f"{found.name} has no relations{like} in the graph.",
                          {"entity": found.name, "relations": []})
    lines = [f"Relations of {found.name} ({found.type}):"]
    for r in rows:
        arrow = f"{found.name} --{r['relation']}--> {r['entity']}" if r["direction"] == "out" \
            else f"{r['entity']} --{r['relation']}--> {found.name}"
        quals = "".join(f" [{k}: {v}]" for k, v in r["qualifiers"].items())
        lines.append(f"- {arrow}{quals} (chunk {r['chunk_id']}): {r['sentence']}")
    return ToolResult("\n".join(lines), {"entity": found.name, "relations": rows})


@tool(command="graph path")
def graph_path(
    ctx: ToolContext,
    source: Annotated[str, Field(min_length=1, max_length=300), QUERY],
    target: Annotated[str, Field(min_length=1, max_length=300), QUERY],
    max_hops: Annotated[int, Field(ge=1, le=6)] = 4,
) -> ToolResult:
    """Find how two entities are connected in the knowledge graph: the shortest chain of
    relations between them, each step with its source chunk.

    Args:
        source: The first entity, e.g. "Lothair II".
        target: The second entity, e.g. "Ermengarde of Tours".
        max_hops: Longest chain to look for (1-6).
    """
    graph = _graph(ctx)
    a, b = _resolve(graph, source), _resolve(graph, target)
    ids = graph.path(a, b, max_hops)
    if ids is None:
        return ToolResult(f"No connection of at most {max_hops} hops between {a.name} "
                          f"and {b.name}.", {"path": None})
    steps = []
    for left, right in zip(ids, ids[1:], strict=False):
        r = graph.relation_between(left, right) or {}
        steps.append({"from": r.get("subject"), "relation": r.get("relation"),
                      "to": r.get("object"), "chunk_id": r.get("chunk_id")})
    lines = [f"{a.name} → {b.name} in {len(steps)} hop{'s' if len(steps) != 1 else ''}:"]
    lines += [f"- {s['from']} --{s['relation']}--> {s['to']} (chunk {s['chunk_id']})"
              for s in steps]
    return ToolResult("\n".join(lines), {"path": steps})


@tool(command="graph ppr")
def graph_ppr(
    ctx: ToolContext,
    entities: Annotated[list[str], StrList, Field(min_length=1, max_length=10), QUERY],
    top_k: Annotated[int, Field(ge=1, le=20), TOP_K] = 5,
) -> ToolResult:
    """Spread Personalized PageRank over the knowledge graph from seed entities and return
    the chunks that mention the most relevant entities around them. Good for questions
    whose answer sits a few hops away from the named entities.

    Args:
        entities: Seed entity names from the question, e.g. ["Lothair II"].
        top_k: Chunks to return (1-20).
    """
    graph = _graph(ctx)
    seeds = [e for name in entities for e in graph.lookup(name, limit=1)]
    if not seeds:
        raise ToolNotFound(f"none of {entities} is an entity in the graph; try graph_entity")
    scores = graph.ppr(seeds)
    chunks = graph.map_back(scores, top_k=top_k)
    top = sorted(scores, key=lambda e: -scores[e])[:8]
    names = [e.name for i in top if (e := graph.store.entity(i))]
    ctx.tracker.found(dict(chunks))
    read = {c.chunk_id: c for c in ctx.index.read([c for c, _ in chunks]).chunks}
    lines = [f"Seeds: {', '.join(s.name for s in seeds)}. Most central entities: "
             f"{', '.join(names)}.", "Chunks:"]
    for rank, (chunk_id, score) in enumerate(chunks, 1):
        chunk = read.get(chunk_id)
        head = " ".join(chunk.text.split())[:SNIPPET_CHARS] if chunk else ""
        lines.append(f"[{rank}] chunk_id: {chunk_id} | score: {score:.4f}\n    - {head}")
    return ToolResult("\n".join(lines), {"seeds": [s.name for s in seeds],
                                         "entities": names,
                                         "chunks": [{"chunk_id": c, "score": s}
                                                    for c, s in chunks]})


GRAPH_TOOLS = (graph_entity, graph_neighbors, graph_path, graph_ppr)

"""Sleuth's own agents, as :mod:`sleuth.plugins` registers them (entry ``core`` of
``sleuth.agents``)."""

from __future__ import annotations

from sleuth.agent.a2rag import A2RAGAgent, Gated
from sleuth.agent.ircot import IRCoTAgent
from sleuth.agent.memory import MemoryAgent
from sleuth.agent.run import Runner
from sleuth.agent.variants import PROFILE, Setup, Variant, tool_loop


def _memory(setup: Setup) -> Runner:
    return MemoryAgent(**setup.fields(), memory=setup.settings.memory)


def _ircot(setup: Setup) -> Runner:
    return IRCoTAgent(**setup.fields())


def _a2rag(setup: Setup) -> Runner:
    cfg = setup.settings.a2rag
    return Gated(A2RAGAgent(**setup.fields(), a2rag=cfg), setup.index, setup.llm,
                 cfg.gate_threshold)


VARIANTS: tuple[Variant, ...] = (
    Variant("hybrid", "the default: the best LLM-free ranking first (hybrid, fused with the "
            "knowledge graph where one is built), then the tools that read their arguments "
            "from the question where one applies (the facts pack's: dates compared, a birth "
            "or death read from the pages; the statements pack's: a metric the question "
            "defines, computed from the filings; settled without the model); elsewhere the model "
            "answers from those first passages (the two best chunks whole) in one request "
            "without tools, and searches further with A-RAG's tools where that answer says "
            "the documents do not say; an answer that only repeats the question's words "
            "gives way to the model's facts under it or to one more request; an answer cites "
            "the chunk that holds its words and is followed by the model's facts under it "
            "where they state it (the answer checks of the model profile: agent.checks)",
            tool_loop(retrieve_first=5, first_tool="hybrid_search", first_as_call=True,
                      also_first=None, answer_first=True, first_whole=2, checks=PROFILE),
            ("hybrid_search", "keyword_search", "semantic_search", "chunk_read"), "hybrid",
            label="Default (recommended)",
            summary="searches the best way for the question, answers, checks the answer"),
    Variant("full", "A-RAG (Full): keyword, semantic and chunk-level tools", tool_loop(),
            ("keyword_search", "semantic_search", "chunk_read"),
            label="Searches and reads on its own",
            summary="the model searches by keyword and meaning and reads passages as it goes"),
    Variant("naive", "A-RAG (Naive): one embedding search tool that returns whole chunks",
            tool_loop(), ("naive_embedding_search",),
            label="Meaning search only",
            summary="the model searches by meaning; each result is a whole passage"),
    Variant("no-keyword", "ablation: A-RAG without keyword_search", tool_loop(),
            ("semantic_search", "chunk_read"),
            label="Without keyword search",
            summary="research comparison: the full agent without keyword search"),
    Variant("no-semantic", "ablation: A-RAG without semantic_search", tool_loop(),
            ("keyword_search", "chunk_read"),
            label="Without meaning search",
            summary="research comparison: the full agent without meaning search"),
    Variant("no-read", "ablation: searches return whole chunks, no chunk_read",
            tool_loop(full_chunks=True), ("keyword_search", "semantic_search"),
            label="Without passage reading",
            summary="research comparison: searches return whole passages, nothing read apart"),
    Variant("direct", "baseline: the model answers with no retrieval", tool_loop(),
            prompt="direct",
            label="No documents",
            summary="the model answers from what it knows, reading nothing: a baseline"),
    Variant("naive-rag", "baseline: single-shot top-5 semantic retrieval, then one answer",
            tool_loop(retrieve_first=5), prompt="naive_rag",
            label="Plain search then answer",
            summary="one search by meaning, then one answer from the five best passages"),
    Variant("docs", "long documents: the whole question's document search first, then "
            "AgenticRAG's tools (search with 5 queries a call and reference ids, find and "
            "open inside a document, summarize to manage the context)",
            tool_loop(retrieve_first=5, first_tool="search", first_as_call=True),
            ("search", "find", "open", "summarize"), "docs_searched",
            label="Long documents",
            summary="finds the documents, then searches and reads inside them by line"),
    Variant("agenticrag", "AgenticRAG as published: the model makes every document search "
            "itself (search, find, open, summarize), for paper reproduction", tool_loop(),
            ("search", "find", "open", "summarize"), "docs",
            label="Long documents, model-led",
            summary="the model makes every document search itself, as published"),
    Variant("all", "every retrieval tool: the A-RAG chunk tools plus the AgenticRAG document "
            "tools", tool_loop(), ("keyword_search", "semantic_search", "chunk_read", "search",
                                   "find", "open", "summarize"), "all",
            label="Every tool",
            summary="passage and document tools together"),
    Variant("memory", "A-RAG MemoryAgent: reads hybrid-ranked chunks one at a time into an "
            "LLM-updated memory (TF-IDF recall of earlier chunks), then answers from it",
            _memory, prompt="memory_answer",
            label="Reads into a memory",
            summary="reads the best passages one at a time into notes, then answers"),
    Variant("ircot", "baseline: IRCoT — interleaved retrieval and chain-of-thought, one "
            "reasoning sentence per step, each used as the next query", _ircot,
            prompt="ircot",
            label="Step-by-step reasoning",
            summary="one reasoning sentence at a time, each the next search"),
    Variant("a2rag", "A2RAG: summary gate, progressive graph retrieval (local, bridge, PPR "
            "map-back) with sufficiency checks, Triple-Check, failure-aware rewrite, bounded "
            "retries, abstention", _a2rag, prompt="a2rag_answer", checked=True,
            label="Checked, may decline",
            summary="graph retrieval in stages; the answer is checked and may be declined"),
    Variant("graph", "A-RAG with the knowledge-graph tools: entity lookup, neighbours, paths "
            "and PPR (needs `sleuth graph build`)", tool_loop(),
            ("keyword_search", "semantic_search", "chunk_read", "graph_entity",
             "graph_neighbors", "graph_path", "graph_ppr"), "graph",
            label="With the knowledge graph",
            summary="the passage tools plus the knowledge graph (after sleuth graph build)"),
)

"""Named agents (``--agent NAME``): a registry of factories, and the one-call builder.

A :class:`Variant` names a factory that builds a :class:`~sleuth.agent.run.Runner` from a
:class:`Setup` (the index, the model, the settings and the variant itself). Built-ins are
registered below exactly as another package would register its own::

    register_variant(Variant("echo", "answers with the question", lambda s: Echo(s.llm)))

after which ``sleuth ask --agent echo``, ``sleuth.ask(..., agent="echo")``, the servers
and ``sleuth eval run`` all reach it. ``auto`` (the router over two other variants) and
``--verify`` wrap what the registry builds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sleuth.agent.a2rag import A2RAGAgent, Gated
from sleuth.agent.ircot import IRCoTAgent
from sleuth.agent.loop import Agent
from sleuth.agent.memory import MemoryAgent
from sleuth.agent.router import AUTO, Router
from sleuth.agent.run import Runner
from sleuth.agent.verify import Verified
from sleuth.errors import ConfigError
from sleuth.index import ReadIndex
from sleuth.llm import LLM
from sleuth.prompts import prompt
from sleuth.settings import Settings
from sleuth.tools import TOOLS

log = logging.getLogger("sleuth")


@dataclass(frozen=True)
class Setup:
    """What a factory builds a runner from."""

    variant: Variant
    index: ReadIndex
    llm: LLM
    settings: Settings

    def fields(self) -> dict[str, Any]:
        """The :class:`~sleuth.agent.run.ModelRunner` fields the variant implies: its
        tools and prompt, the agent settings, the prices, its name."""
        return {"index": self.index, "llm": self.llm,
                "tools": [TOOLS[t] for t in self.variant.tools],
                "system_prompt": prompt(self.variant.prompt), "settings": self.settings.agent,
                "prices": self.settings.llm.prices or None, "name": self.variant.name}


Factory = Callable[[Setup], Runner]


@dataclass(frozen=True)
class Variant:
    """A named agent: how it is built, the tools it offers, the prompt it starts from."""

    name: str
    description: str
    factory: Factory
    tools: tuple[str, ...] = ()
    prompt: str = "full"
    checked: bool = False  # it runs Triple-Check itself: ``--verify`` leaves it alone


VARIANTS: dict[str, Variant] = {}


def register_variant(variant: Variant) -> Variant:
    """Make ``variant`` available by its name (a later registration replaces an earlier)."""
    VARIANTS[variant.name] = variant
    return variant


def tool_loop(*, full_chunks: bool = False, retrieve_first: int = 0,
              first_tool: str = "naive_embedding_search", first_as_call: bool = False,
              also_first: tuple[str, ...] = (), check_bridge: bool = False) -> Factory:
    """The ReAct loop over the variant's tools; ``retrieve_first`` chunks are retrieved by
    ``first_tool`` before the first call (naive RAG; the hybrid agent, as its first call),
    then the ``also_first`` tools that apply to the question are called;
    ``full_chunks`` makes searches return them whole, ``check_bridge`` gives an answer
    that stops at a multi-hop question's bridge entity one more turn."""
    def build(setup: Setup) -> Runner:
        return Agent(**setup.fields(), full_chunks=full_chunks, retrieve_first=retrieve_first,
                     first_tool=first_tool, first_as_call=first_as_call,
                     also_first=also_first, check_bridge=check_bridge)

    return build


def _memory(setup: Setup) -> Runner:
    return MemoryAgent(**setup.fields(), memory=setup.settings.memory)


def _ircot(setup: Setup) -> Runner:
    return IRCoTAgent(**setup.fields())


def _a2rag(setup: Setup) -> Runner:
    cfg = setup.settings.a2rag
    return Gated(A2RAGAgent(**setup.fields(), a2rag=cfg), setup.index, setup.llm,
                 cfg.gate_threshold)


for _variant in (
    Variant("hybrid", "the default: the best LLM-free ranking first (hybrid, fused with the "
            "knowledge graph where one is built), then, without the model, dates compared or "
            "a birth or death read from the pages where the question asks for one, then "
            "A-RAG's tools to search further",
            tool_loop(retrieve_first=5, first_tool="hybrid_search", first_as_call=True,
                      also_first=("compare_dates", "person_fact"), check_bridge=True),
            ("hybrid_search", "keyword_search", "semantic_search", "chunk_read"), "hybrid"),
    Variant("full", "A-RAG (Full): keyword, semantic and chunk-level tools", tool_loop(),
            ("keyword_search", "semantic_search", "chunk_read")),
    Variant("naive", "A-RAG (Naive): one embedding search tool that returns whole chunks",
            tool_loop(), ("naive_embedding_search",)),
    Variant("no-keyword", "ablation: A-RAG without keyword_search", tool_loop(),
            ("semantic_search", "chunk_read")),
    Variant("no-semantic", "ablation: A-RAG without semantic_search", tool_loop(),
            ("keyword_search", "chunk_read")),
    Variant("no-read", "ablation: searches return whole chunks, no chunk_read",
            tool_loop(full_chunks=True), ("keyword_search", "semantic_search")),
    Variant("direct", "baseline: the model answers with no retrieval", tool_loop(),
            prompt="direct"),
    Variant("naive-rag", "baseline: single-shot top-5 semantic retrieval, then one answer",
            tool_loop(retrieve_first=5), prompt="naive_rag"),
    Variant("docs", "long documents: the whole question's document search first, then "
            "AgenticRAG's tools (search with 5 queries a call and reference ids, find and "
            "open inside a document, summarize to manage the context)",
            tool_loop(retrieve_first=5, first_tool="search", first_as_call=True),
            ("search", "find", "open", "summarize"), "docs_searched"),
    Variant("agenticrag", "AgenticRAG as published: the model makes every document search "
            "itself (search, find, open, summarize), for paper reproduction", tool_loop(),
            ("search", "find", "open", "summarize"), "docs"),
    Variant("all", "every retrieval tool: the A-RAG chunk tools plus the AgenticRAG document "
            "tools", tool_loop(), ("keyword_search", "semantic_search", "chunk_read", "search",
                                   "find", "open", "summarize"), "all"),
    Variant("memory", "A-RAG MemoryAgent: reads hybrid-ranked chunks one at a time into an "
            "LLM-updated memory (TF-IDF recall of earlier chunks), then answers from it",
            _memory, prompt="memory_answer"),
    Variant("ircot", "baseline: IRCoT — interleaved retrieval and chain-of-thought, one "
            "reasoning sentence per step, each used as the next query", _ircot,
            prompt="ircot"),
    Variant("a2rag", "A2RAG: summary gate, progressive graph retrieval (local, bridge, PPR "
            "map-back) with sufficiency checks, Triple-Check, failure-aware rewrite, bounded "
            "retries, abstention", _a2rag, prompt="a2rag_answer", checked=True),
    Variant("graph", "A-RAG with the knowledge-graph tools: entity lookup, neighbours, paths "
            "and PPR (needs `sleuth graph build`)", tool_loop(),
            ("keyword_search", "semantic_search", "chunk_read", "graph_entity",
             "graph_neighbors", "graph_path", "graph_ppr"), "graph"),
):
    register_variant(_variant)


def build_agent(name: str, index: ReadIndex, llm: LLM, settings: Settings) -> Runner:
    """The agent called ``name`` over ``index``; wrapped with Triple-Check and bounded
    retries when ``settings.a2rag.verify`` (``--verify``)."""
    runner = _build(name, index, llm, settings)
    variant = VARIANTS.get(name)
    if settings.a2rag.verify and not (variant and variant.checked):
        return Verified(runner, index, llm, settings.a2rag, settings.llm.prices or None)
    return runner


def _build(name: str, index: ReadIndex, llm: LLM, settings: Settings) -> Runner:
    if name == AUTO:
        return _router(index, llm, settings)
    variant = VARIANTS.get(name)
    if variant is None:
        raise ConfigError(f"unknown agent {name!r}; choose one of: "
                          f"{', '.join(sorted([*VARIANTS, AUTO]))}")
    return variant.factory(Setup(variant, index, llm, settings))


def _router(index: ReadIndex, llm: LLM, settings: Settings) -> Router:
    """``auto``: the router over the two agents named in ``settings.router``."""
    cfg = settings.router
    if AUTO in (cfg.simple_agent, cfg.complex_agent):
        raise ConfigError("router.simple_agent and router.complex_agent must name agents other "
                          "than 'auto'")
    return Router(_build(cfg.simple_agent, index, llm, settings),
                  _build(cfg.complex_agent, index, llm, settings), llm, cfg.use_llm,
                  prompt("router"), settings.llm.prices or None)


def llm_from_settings(settings: Settings) -> LLM:
    """The client the settings describe: the configured OpenAI-compatible endpoint (Azure
    OpenAI when an API version is set or in the URL; it adapts to what the server refuses and
    falls back to the JSON tool protocol by itself), else the installed offline model
    (started on first use), else a ConfigError saying how to set one.
    """
    from sleuth.llm import JsonToolCalls, OpenAIClient, local

    cfg = settings.llm
    if not cfg.configured:
        if local.installed(cfg.local_model, cfg.local_runtime):
            server = local.shared_server(cfg.local_model, cfg.local_context,
                                         runtime=cfg.local_runtime,
                                         idle_minutes=cfg.local_idle_minutes, say=log.info)
            return local.client(server, cfg.local_model, cfg)
        raise ConfigError(
            "no LLM endpoint configured: set SLEUTH_BASE_URL (e.g. https://api.openai.com/v1 or "
            "http://localhost:11434/v1), SLEUTH_MODEL (e.g. gpt-4o-mini) and, if the server "
            "needs one, SLEUTH_API_KEY; or install the offline model: sleuth llm install-local"
        )
    client = OpenAIClient(
        cfg.model or "", cfg.base_url, cfg.api_key, temperature=cfg.temperature,
        max_tokens=cfg.max_tokens, reasoning_effort=cfg.reasoning_effort, timeout=cfg.timeout,
        max_retries=cfg.max_retries, api_version=cfg.api_version,
    )
    return JsonToolCalls(client) if cfg.tool_mode == "json" else client

"""Named agent configurations (``--agent NAME``) and the one-call ``ask``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sleuth.agent.a2rag import A2RAGAgent, VerifiedAgent
from sleuth.agent.ircot import IRCoTAgent
from sleuth.agent.loop import Agent, prompt
from sleuth.agent.memory import MemoryAgent
from sleuth.agent.router import AUTO, Router
from sleuth.errors import ConfigError
from sleuth.index import Index
from sleuth.llm import LLM
from sleuth.settings import Settings
from sleuth.tools import TOOLS


@dataclass(frozen=True)
class Variant:
    """Which tools an agent gets and how it is prompted."""

    name: str
    tools: tuple[str, ...]
    prompt: str
    description: str
    full_chunks: bool = False
    retrieve_first: int = 0  # single-shot retrieval of this many chunks before answering
    memory: bool = False  # sequential reading into a memory instead of a tool loop
    ircot: bool = False  # interleaved retrieval and chain-of-thought instead of a tool loop
    a2rag: bool = False  # the A2RAG controller: gate, progressive graph retrieval, Triple-Check


VARIANTS: dict[str, Variant] = {}


def register_variant(variant: Variant) -> Variant:
    VARIANTS[variant.name] = variant
    return variant


for _variant in (
    Variant("full", ("keyword_search", "semantic_search", "chunk_read"), "full",
            "A-RAG (Full): keyword, semantic and chunk-level tools"),
    Variant("naive", ("naive_embedding_search",), "full",
            "A-RAG (Naive): one embedding search tool that returns whole chunks"),
    Variant("no-keyword", ("semantic_search", "chunk_read"), "full",
            "ablation: A-RAG without keyword_search"),
    Variant("no-semantic", ("keyword_search", "chunk_read"), "full",
            "ablation: A-RAG without semantic_search"),
    Variant("no-read", ("keyword_search", "semantic_search"), "full",
            "ablation: searches return whole chunks, no chunk_read", full_chunks=True),
    Variant("direct", (), "direct", "baseline: the model answers with no retrieval"),
    Variant("naive-rag", (), "naive_rag",
            "baseline: single-shot top-5 semantic retrieval, then one answer",
            retrieve_first=5),
    Variant("docs", ("search", "find", "open", "summarize"), "docs",
            "AgenticRAG: document search (5 queries a call, reference ids), find and open "
            "inside long documents, summarize to manage the context"),
    Variant("all", ("keyword_search", "semantic_search", "chunk_read", "search", "find",
                    "open", "summarize"), "all",
            "every retrieval tool: the A-RAG chunk tools plus the AgenticRAG document tools"),
    Variant("memory", (), "memory_answer",
            "A-RAG MemoryAgent: reads hybrid-ranked chunks one at a time into an LLM-updated "
            "memory (TF-IDF recall of earlier chunks), then answers from it", memory=True),
    Variant("ircot", (), "ircot",
            "baseline: IRCoT — interleaved retrieval and chain-of-thought, one reasoning "
            "sentence per step, each used as the next query", ircot=True),
    Variant("a2rag", (), "a2rag_answer",
            "A2RAG: summary gate, progressive graph retrieval (local, bridge, PPR map-back) "
            "with sufficiency checks, Triple-Check, failure-aware rewrite, bounded retries, "
            "abstention", a2rag=True),
    Variant("graph", ("keyword_search", "semantic_search", "chunk_read", "graph_entity",
                      "graph_neighbors", "graph_path", "graph_ppr"), "graph",
            "A-RAG with the knowledge-graph tools: entity lookup, neighbours, paths and PPR "
            "(needs `sleuth graph build`)"),
):
    register_variant(_variant)


def build_agent(name: str, index: Index, llm: LLM, settings: Settings) -> Agent:
    """The agent called ``name`` over ``index``; wrapped with Triple-Check and bounded
    retries when ``settings.a2rag.verify`` (``--verify``)."""
    agent = _build(name, index, llm, settings)
    if settings.a2rag.verify and not isinstance(agent, A2RAGAgent):  # a2rag verifies itself
        return VerifiedAgent(index=index, llm=llm, tools=[], settings=settings.agent,
                             prices=settings.llm.prices or None, name=f"{agent.name}+verify",
                             inner=agent, a2rag=settings.a2rag)
    return agent


def _build(name: str, index: Index, llm: LLM, settings: Settings) -> Agent:
    if name == AUTO:
        return _router(index, llm, settings)
    variant = VARIANTS.get(name)
    if variant is None:
        raise ConfigError(f"unknown agent {name!r}; choose one of: "
                          f"{', '.join(sorted([*VARIANTS, AUTO]))}")
    common: dict[str, Any] = {
        "index": index, "llm": llm, "tools": [TOOLS[t] for t in variant.tools],
        "system_prompt": prompt(variant.prompt), "settings": settings.agent,
        "prices": settings.llm.prices or None, "name": variant.name,
    }
    if variant.memory:
        return MemoryAgent(**common, memory=settings.memory)
    if variant.ircot:
        return IRCoTAgent(**common)
    if variant.a2rag:
        return A2RAGAgent(**common, a2rag=settings.a2rag)
    return Agent(**common, full_chunks=variant.full_chunks,
                 retrieve_first=variant.retrieve_first)


def _router(index: Index, llm: LLM, settings: Settings) -> Router:
    """``auto``: the router over the two agents named in ``settings.router``."""
    cfg = settings.router
    if AUTO in (cfg.simple_agent, cfg.complex_agent):
        raise ConfigError("router.simple_agent and router.complex_agent must name agents other "
                          "than 'auto'")
    return Router(index=index, llm=llm, tools=[], system_prompt=prompt("router"),
                  settings=settings.agent, prices=settings.llm.prices or None, name=AUTO,
                  simple_agent=_build(cfg.simple_agent, index, llm, settings),
                  complex_agent=_build(cfg.complex_agent, index, llm, settings),
                  use_llm=cfg.use_llm)


def llm_from_settings(settings: Settings) -> LLM:
    """The client the settings describe: the configured OpenAI-compatible endpoint, else the
    installed offline model (started on first use), else a ConfigError saying how to set one.
    """
    from sleuth.llm import JsonToolCalls, OpenAIClient, local

    cfg = settings.llm
    if not cfg.configured:
        if local.installed(cfg.local_model):
            server = local.shared_server(cfg.local_model, cfg.local_context)
            return local.client(server, cfg.local_model, cfg)
        raise ConfigError(
            "no LLM endpoint configured: set SLEUTH_BASE_URL (e.g. https://api.openai.com/v1 or "
            "http://localhost:11434/v1), SLEUTH_MODEL (e.g. gpt-4o-mini) and, if the server "
            "needs one, SLEUTH_API_KEY; or install the offline model: sleuth llm install-local"
        )
    client = OpenAIClient(
        cfg.model or "", cfg.base_url, cfg.api_key, temperature=cfg.temperature,
        max_tokens=cfg.max_tokens, reasoning_effort=cfg.reasoning_effort, timeout=cfg.timeout,
        max_retries=cfg.max_retries,
    )
    return JsonToolCalls(client) if cfg.tool_mode == "json" else client

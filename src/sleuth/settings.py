"""One Settings object: nested, described, read from ``SLEUTH_*`` variables and a config file.

Precedence (highest first): explicit keyword arguments / CLI flags, environment variables,
the config file (``--config`` or ``$SLEUTH_CONFIG``; YAML or TOML, A-RAG layout accepted),
then defaults. The A-RAG names ``ARAG_BASE_URL``, ``ARAG_API_KEY`` and ``ARAG_MODEL`` are
accepted as fallbacks for the three ``SLEUTH_`` endpoint variables.

Long because it is the one declaration of every section, a described field each: the
configuration reference (``docs/configuration.md``) is generated from it.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from sleuth.configs import Profile, preset_path, presets
from sleuth.errors import ConfigError

ReasoningEffort = Literal["minimal", "low", "medium", "high"]

DEFAULT_AGENT = "hybrid"  # the agent every face uses when none is named (sleuth agents)


class Section(BaseModel):
    """A section of the settings: an unknown key is an error (``agent.answr_first`` is not
    silently ignored), and :meth:`Settings.load` names the nearest valid key."""

    model_config = ConfigDict(extra="forbid")


class LLMSettings(Section):
    """The OpenAI-compatible chat endpoint the agent talks to."""

    base_url: str | None = Field(None, description="Endpoint URL, e.g. https://api.openai.com/v1")
    api_key: str | None = Field(None, description="API key (omit for local servers)")
    model: str | None = Field(None, description="Model name, e.g. gpt-4o-mini (on Azure "
                              "OpenAI: the deployment name)")
    api_version: str | None = Field(
        None, description="Azure OpenAI API version, e.g. 2024-10-21: the endpoint is then "
        "reached as Azure OpenAI (also when the base URL carries ?api-version=...)")
    temperature: float | None = Field(0.0, description="Sampling temperature (None: default)")
    max_tokens: int | None = Field(None, description="Max completion tokens per call")
    reasoning_effort: ReasoningEffort | None = Field(
        None, description="For reasoning models"
    )
    timeout: float = Field(120.0, description="Seconds per request")
    max_retries: int = Field(4, description="Retries with backoff on transient errors")
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict, description="USD per 1M (input, output) tokens, by model name"
    )
    tool_mode: Literal["native", "json"] = Field(
        "native", description="'native' OpenAI tool calls, or 'json': tools described in the "
        "prompt and calls taken from schema-constrained JSON replies (for small models)",
    )
    local_model: Literal["1.5b", "0.5b"] = Field(
        "1.5b", description="The offline model used when no endpoint is configured"
    )
    local_context: int = Field(16384, ge=2048, description="Context size of the local model")
    local_runtime: Literal["auto", "xllamacpp", "llama-server"] = Field(
        "auto", description="What runs the local model: 'xllamacpp' (prebuilt, from PyPI), "
        "'llama-server' (compiled by `sleuth llm install-local --runtime llama-server`), or "
        "'auto': the faster one that can run here (sleuth llm status says which)")
    local_idle_minutes: float = Field(
        15.0, ge=0, description="Minutes without a request after which the machine's shared "
        "local model server stops (0: it runs until `sleuth llm stop`)")

    @property
    def configured(self) -> bool:
        return bool(self.model and (self.base_url or self.api_key))


class EmbedSettings(Section):
    """The sentence embedder used to build and query the semantic index."""

    model: str = Field(
        "minilm",
        description="'minilm' (bundled all-MiniLM-L6-v2), 'model2vec' (a static model "
        "distilled from it once: ~100x faster, for large corpora), a sentence-transformers "
        "path or name, or 'openai:<model>' for an OpenAI-compatible /embeddings endpoint",
    )
    batch_size: int = Field(64, ge=1, description="Sentences per encode batch (the bundled "
                            "MiniLM on ONNX Runtime takes at most 16: less padding)")
    device: str = Field("cpu", description="Torch device: cpu, cuda, cuda:0, mps")
    backend: Literal["auto", "onnx", "torch"] = Field(
        "auto", description="What runs the bundled MiniLM on the CPU: ONNX Runtime (the "
        "same vectors, about twice as fast on 2 cores), torch, or auto: ONNX Runtime where it is "
        "installed")
    base_url: str | None = Field(None, description="Embeddings endpoint (openai: models)")
    api_key: str | None = Field(None, description="Embeddings endpoint key (openai: models)")


class ChunkSettings(Section):
    """How documents are cut into chunks."""

    tokens: int = Field(1000, ge=16, description="Target chunk size in tokens")


class IngestSettings(Section):
    """Bounds on reading one source file (every file is a possible attacker): a file over
    one is reported and skipped, naming the limit; the rest of the run goes on."""

    max_file_mb: float = Field(
        200, gt=0, description="Largest file read as one document (HTML, Markdown, text, PDF, "
        ".docx), in MB; JSON and JSONL corpora are held to max_chars per record instead")
    max_chars: int = Field(
        10_000_000, ge=1000, description="Most characters of text one document may expand to "
        "(a PDF's or .docx's text, an HTML page's visible text, a file, a record)")
    max_depth: int = Field(
        256, ge=16, description="Deepest element nesting of an HTML page (parsing time grows "
        "with the square of the depth)")
    parse_seconds: float = Field(
        60, gt=0, description="Wall-clock seconds to parse one HTML, PDF or .docx file, or to "
        "draw one PDF page image for the app; both run in a child process that is stopped "
        "past it (a page stopped so is refused for ten minutes)")
    parse_memory_mb: int = Field(
        2048, ge=256, description="Address space of those child processes, in MB")


class VectorSettings(Section):
    """Sentence-vector search: exact, or candidates from an inverted file (faiss IVF with
    8-bit codes, the ``ann`` extra) re-scored exactly, for large indexes. Both stores use
    the same index: the embedded store keeps it in ``vectors/ivf.faiss``, the PostgreSQL
    store in its ``ann_parts`` table (each process loads it)."""

    ann: Literal["auto", "on", "off"] = Field(
        "auto", description="'auto': build and use the approximate index once the index "
        "holds ann_min_sentences sentence vectors; 'on': at any size; 'off': exact search only")
    ann_min_sentences: int = Field(
        200_000, ge=0, description="Sentence vectors from which 'auto' builds the approximate "
        "index (exact search below: a 384-d scan of 200k vectors takes ~0.1 s on 2 cores)")
    ef_search: int = Field(
        800, ge=1, description="Candidate sentences proposed by the approximate index per "
        "search (at least 16 per hit asked for); their chunks are re-scored exactly")
    nprobe: int | None = Field(
        None, ge=1, description="Inverted lists scanned per search (default: 6% of nlist, at "
        "least 8); more: higher recall, slower")
    nlist: int | None = Field(
        None, ge=1, description="Inverted lists (k-means clusters) of the approximate index "
        "(default: about 2·√sentences; changing it rebuilds the index on the next build)")


class PostgresSettings(Section):
    """Connections to a PostgreSQL index: how long a request waits for a database that is
    away before it is answered so (HTTP 503, ``Retry-After``), how soon one that returns is
    used again (docs/postgres.md)."""

    connect_timeout: int = Field(2, ge=0, description="Seconds one connection attempt may "
                                 "take (libpq's; 0: no limit; one in the index URL wins)")
    pool_timeout: float = Field(1.5, gt=0, description="Seconds a request waits for a pooled "
                                "connection (the database away, or every connection busy)")
    reconnect_timeout: float = Field(
        2.0, gt=0, description="Seconds the pool retries a lost connection before the next "
        "request starts afresh: a returning database is used again within about this")
    max_lifetime: float = Field(600.0, gt=0, description="Seconds after which a pooled "
                                "connection is replaced (a failover's new address taken up)")
    statement_timeout: float = Field(0.0, ge=0, description="Seconds one SQL statement may "
                                     "run (0: no limit, as index builds need)")
    vector_search: Literal["faiss", "engine"] = Field(
        "faiss", description="Where semantic search finds its candidates once the index is "
        "large enough (vectors.ann; vectors.nlist and vectors.nprobe apply to both): 'faiss': "
        "the faiss inverted file kept in the database, copied once per host into the cache "
        "folder and memory-mapped by every serving process (shared, not a copy each); "
        "'engine': pgvector's IVFFlat index inside PostgreSQL, built by `sleuth index` (no "
        "index in the serving process, but several times slower: bench/pg_engine.py)")
    engine_build_memory_mb: int = Field(
        1024, ge=64, description="maintenance_work_mem (MB) of the build of the engine's "
        "vector index (its k-means sample must fit: 50 vectors per list)")


class ThreadSettings(Section):
    """How many threads each kind of work may use (``sleuth.text.threads``): query-time work on
    few threads, batch work on the cores, so that a busy core slows Sleuth down in
    proportion instead of stalling every parallel step. Unset: chosen for this machine
    (its usable cores: affinity and cgroup quota); ``sleuth status --json`` shows them."""

    query: int | None = Field(
        None, ge=1, description="Threads of query-time work (embedding a query, scoring, the "
        "approximate index; also OpenBLAS for the whole process). Default 1")
    batch: int | None = Field(
        None, ge=1, description="Threads of batch work (index-time embedding, building the "
        "approximate index). Default: the usable cores; 1 inside `sleuth serve`")
    llm: int | None = Field(
        None, ge=1, description="Generation threads of the local model's llama.cpp server. "
        "Default: half the cores, at least 1 (generation waits at a barrier per layer and "
        "token, so a thread sharing a core with another process stalls every token)")
    llm_batch: int | None = Field(
        None, ge=1, description="Prompt-processing threads of the local model's server. "
        "Default: the usable cores")


class AgentSettings(Section):
    """Budgets of the ReAct loop."""

    max_steps: int = Field(15, ge=1, description="Max tool-calling iterations")
    token_budget: int = Field(128_000, ge=1000, description="Context token budget")
    history_tokens: int | None = Field(
        None, ge=100, description="Tokens of earlier turns a question carries to the model "
        "(a chat client's resent conversation, a session's dialogue); the oldest turns are "
        "left out first. None: a quarter of the model's context (token_budget for an "
        "endpoint, llm.local_context for the local model)")
    parallel_tool_calls: bool = Field(False, description="Execute every tool call of a turn")
    warn_ratio: float = Field(
        0.9, gt=0, le=1, description="Share of the token budget at which the model is told to "
        "summarize (agents with the summarize tool)")
    open_window: int = Field(1800, ge=10, description="Lines one `open` call shows")
    find_token_cap: int = Field(11_000, ge=500, description="Token cap of one `find` result")
    settled_answers: Literal["tool", "model"] = Field(
        "tool", description="A question a page-fact tool settles before the model's first "
        "call (compare_dates, person_fact) is answered with the tool's verdict and the "
        "chunks it read ('tool', no model call), or by the model from that verdict ('model')")
    answer_first: bool = Field(
        True, description="The default agent answers from its first search's passages in one "
        "request without tools, and searches on with its tools only where that answer says "
        "the documents do not say (False: the tools are offered from the first request; "
        "longer answers, fewer short ones right, BENCHMARKS §31)")
    writing_tasks: bool = Field(
        True, description="A request to write something ('Draft an advisory on ...', 'As "
        "an intern, compose a SOAP note ...') gets the whole piece from the first passages, "
        "not a short answer and its support (BENCHMARKS §41); False: every question is "
        "answered short")
    profile: Literal["auto", "small", "capable"] = Field(
        "auto", description="The model profile: which answer checks run and whether the model "
        "is asked for the facts under its answer (the presets src/sleuth/configs/NAME.yaml, "
        "Settings.from_name). 'small': the local model of 3B or less, today's whole chain; "
        "'capable': any other endpoint, only the checks that add to an answer or flag it; "
        "'auto': 'capable' where llm.base_url is set, else 'small'")
    checks: list[str] | None = Field(
        None, description="The answer checks the ReAct agents run on a draft answer, in order "
        "(the one switch of each; `sleuth llm status` shows the list that runs): e.g. ['bridge', "
        "'read_facts', 'past_echo', 'unfounded', 'cite_holder', 'support', 'quote_named', "
        "'silence']; 'NAME:flag' keeps the answer and flags it where the check would replace "
        "it. None: the profile's list for the default agent, the variant's own for the others")
    facts_first: bool | None = Field(
        None, description="Whether the model's JSON answer object starts with the facts it "
        "rests on (the local model, or an endpoint with llm.tool_mode 'json'): the checks "
        "read_facts, past_echo and support read them. None: the profile's (small: yes)")


class MemorySettings(Section):
    """The ``memory`` agent: sequential reading into a bounded, LLM-updated memory."""

    memory_size: int = Field(5000, ge=100, description="Memory token budget")
    recall_examples: int = Field(
        3, ge=0, description="Earlier passages recalled by TF-IDF similarity per step"
    )
    candidates: int = Field(10, ge=1, description="Chunks read, best hybrid-ranked first")
    update_prompt: str | None = Field(
        None, description="Replaces the bundled update prompt; placeholders {question}, "
        "{memory}, {examples}, {chunk_id}, {chunk}, {budget}",
    )


class RouterSettings(Section):
    """``--agent auto``: which agent answers simple questions and which complex ones."""

    simple_agent: str = Field("naive-rag", description="Agent for simple, single-fact questions")
    complex_agent: str = Field(
        DEFAULT_AGENT,
        description="Agent for multi-hop, comparison, calculation or why/how questions",
    )
    use_llm: bool = Field(
        False, description="Classify with one LLM call (prompt router.md) instead of the "
        "LLM-free rule; the rule is the fallback"
    )


class GraphSettings(Section):
    """The knowledge graph (``sleuth graph build``) and its seed matching."""

    extractor: Literal["offline", "llm"] = Field(
        "offline", description="'offline' (spaCy NER and dependency patterns, no LLM) or "
        "'llm' (the configured endpoint extracts JSON entities and relations; cached per chunk)")
    llm_workers: int = Field(4, ge=1, le=64, description="Concurrent LLM extraction requests")
    merge_aliases: bool = Field(
        True, description="Merge entity name variants by lexical and embedding similarity")
    alias_similarity: float = Field(
        0.9, gt=0, le=1, description="Embedding cosine two lexically close names need to merge")
    seed_similarity: float = Field(
        0.8, gt=0, le=1, description="Hybrid lexical-embedding score a question entity needs "
        "to seed on a graph node")


class A2RAGSettings(Section):
    """The A2RAG controller (``--agent a2rag``) and the ``--verify`` wrapper."""

    gate_threshold: float = Field(
        0.2, ge=-1, le=1, description="Abstain before retrieval when the question's best "
        "cosine similarity to a document summary is below this (-1 disables the gate)")
    retries: int = Field(2, ge=0, le=10, description="Rewrite-and-retry rounds after a failed "
                         "Triple-Check, before abstaining")
    sufficiency: Literal["auto", "llm", "offline"] = Field(
        "auto", description="Evidence-sufficiency check after each retrieval stage: 'llm' "
        "judge, 'offline' coverage test, 'auto' (the LLM judge)")
    top_k: int = Field(5, ge=1, le=50, description="Evidence chunks given to the answer step")
    propose_triples: bool = Field(
        True, description="Verified answers propose triples for `sleuth graph review`")
    verify: bool = Field(
        False, description="Wrap every agent with Triple-Check, rewrite and bounded retries "
        "(the --verify flag)")


class ApiKey(Section):
    """A tenant's API key: it reads and writes one collection, and sees the documents of
    that collection that are open or share one of its groups."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, description="The secret the client sends")
    collection: str = Field(description="The collection (tenant) the key reads and writes")
    groups: list[str] = Field(default_factory=list, description="Access groups it holds")
    document_roots: list[Path] = Field(
        default_factory=list, description="Server folders this key may index by path (POST "
        "/v1/documents with paths); none: it may index no server path, only upload files. "
        "serve.document_roots is not for tenants; the index folder is never indexable")
    asks: int | None = Field(None, ge=1, description="This key's serve.asks_per_key")
    uploads: int | None = Field(None, ge=1, description="This key's serve.uploads_per_key")
    calls: int | None = Field(None, ge=1, description="This key's serve.calls_per_key")
    rate: float | None = Field(None, ge=0, description="This key's serve.rate_per_key (0: "
                               "no limit)")
    burst: int | None = Field(None, ge=1, description="This key's serve.burst_per_key")


class ServeSettings(Section):
    """``sleuth serve``: the HTTP API and MCP server, their API keys and request limits."""

    host: str = Field("127.0.0.1", description="Interface the servers listen on")
    port: int = Field(8765, ge=1, le=65535, description="TCP port of the servers")
    api_keys: dict[str, str | ApiKey] | Path | None = Field(
        None, description="API keys by name: {name: key} for a key that sees every "
        "collection (admin), {name: {key, collection, groups}} for a tenant's key; or a "
        "YAML/JSON file holding that mapping. None: the servers refuse to start unless "
        "--no-auth is given")
    allowed_hosts: list[str] = Field(
        default_factory=list, description="Host names clients may reach the servers by, "
        "besides the address they listen on (on a loopback address: any loopback name; on "
        "0.0.0.0: this machine's names). A request naming another host gets 421, which stops "
        "DNS-rebinding pages; '*' accepts any")
    public_url: str | None = Field(
        None, description="The address users reach the app at (https://rag.example.com), "
        "for the source links of chat answers; default http://HOST:PORT as served")
    document_roots: list[Path] | None = Field(
        None, description="Server folders an admin key (or --no-auth) may index by path "
        "through POST /v1/documents; none: any folder. A tenant's key indexes only under its "
        "own document_roots (the key file); the index folder (its uploads, sessions) never, "
        "whatever the roots say")
    max_query_chars: int = Field(2000, ge=1, description="Longest query or question accepted")
    max_top_k: int = Field(50, ge=1, description="Largest top_k a request may ask for")
    max_queries: int = Field(5, ge=1, description="Most queries (keywords, patterns) per call")
    max_body_bytes: int = Field(1_000_000, ge=1, description="Largest request body (HTTP 413)")
    max_message_chars: int = Field(
        32_000, ge=1, description="Longest message a chat request may carry as history (an "
        "earlier user or assistant turn a chat client resends); longer: HTTP 413")
    runs: Path = Field(Path("results"), description="Folder of eval runs (`eval run --output`) "
                       "the run viewer at /viewer browses")
    workers: int | None = Field(
        None, ge=1, description="Tool calls and indexing requests served at once (a bounded "
        "pool; default: the usable cores). Agent runs (`ask`) wait on the LLM outside it")
    tool_processes: bool = Field(
        True, description="Run tool calls (HTTP, MCP, outside a session) in one process per "
        "worker, each with the index open read-only, so that one key's running call does not "
        "slow another's on the interpreter lock; each process holds its own embedder (and "
        "approximate index, if any). false: on the server's threads")
    queue: int = Field(
        256, ge=0, description="Requests that may wait for a worker; beyond that a request is "
        "refused at once: HTTP 503 with Retry-After (MCP: a tool error saying when to retry)")
    ask_workers: int = Field(
        32, ge=1, description="Agent runs (ask, chat) served at once, each on a thread of "
        "their own pool that mostly waits on the LLM; beyond them 503 with Retry-After")
    asks_per_key: int = Field(
        4, ge=1, description="Agent runs one API key may have going at once; more get 429 "
        "with Retry-After")
    uploads_per_key: int = Field(
        2, ge=1, description="Indexing requests (uploads, paths) one API key may have going "
        "at once; more get 429 with Retry-After")
    calls_per_key: int = Field(
        8, ge=1, description="Tool calls and library reads one API key may have running or "
        "waiting at once (waiting calls take turns across keys); more get 429 with "
        "Retry-After")
    rate_per_key: float = Field(
        50.0, ge=0, description="Requests a second one API key may send on average, on every "
        "route (HTTP API, chat, MCP); past it and its burst 429 with Retry-After. 0: no limit")
    burst_per_key: int = Field(
        100, ge=1, description="Requests one API key may send at once above rate_per_key")
    header_timeout: float = Field(
        10.0, gt=0, description="Seconds a client has to send a request's headers; a "
        "connection that sends them slower is closed")
    body_timeout: float = Field(
        30.0, gt=0, description="Seconds a client has, once the headers are in, to send the "
        "whole request body; a slower one gets 408 and its connection is closed")
    max_connections: int | None = Field(
        None, ge=1, description="Connections the server holds open at once; more are "
        "answered 503 and closed. Default: three quarters of the open-file limit (raised to "
        "its hard limit at start), the rest kept for the index, uploads and parsers")
    connections_per_client: int = Field(
        64, ge=1, description="Connections one client address may hold open at once; more "
        "are answered 429 and closed (behind a proxy every client shares its address)")


def cache_dir() -> Path:
    """Sleuth's cache folder: ``$XDG_CACHE_HOME/sleuth`` (``~/.cache/sleuth``), read at each
    call so a test or a bench can point it elsewhere."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sleuth"


class PluginSettings(Section):
    """Which registered plugins load (:mod:`sleuth.plugins`)."""

    disabled: list[str] = Field(
        default_factory=list, description="Entry names not to load, built-in or installed: "
        "e.g. ['facts'] (the encyclopedia-page reading tools compare_dates and person_fact, "
        "which the default agent tries first where they apply)")


class Settings(BaseSettings):
    """Everything configurable in Sleuth. Environment: ``SLEUTH_<SECTION>__<FIELD>``."""

    model_config = SettingsConfigDict(
        env_prefix="SLEUTH_", env_nested_delimiter="__", extra="ignore"
    )

    index: str = Field(".sleuth", description="Index folder, or a store URL "
                       "(postgresql://user@host/db?schema=NAME)")
    sessions_store: str | None = Field(
        None, description="Where sessions are saved when not with the index: a PostgreSQL "
        "URL of the same index on a writable server (the primary, for servers reading the "
        "index from a read-only replica). None: in the index (its folder or schema)")
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embed: EmbedSettings = Field(default_factory=EmbedSettings)
    chunk: ChunkSettings = Field(default_factory=ChunkSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    vectors: VectorSettings = Field(default_factory=VectorSettings)
    postgres: PostgresSettings = Field(default_factory=PostgresSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    router: RouterSettings = Field(default_factory=RouterSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    a2rag: A2RAGSettings = Field(default_factory=A2RAGSettings)
    threads: ThreadSettings = Field(default_factory=ThreadSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)
    plugins: PluginSettings = Field(default_factory=PluginSettings)

    @classmethod
    def load(cls, config: str | Path | None = None, **overrides: Any) -> Settings:
        """Build settings from defaults, a config file, the environment and ``overrides``.

        ``overrides`` are nested dicts (``llm={"model": ...}``) or top-level values; ``None``
        values are ignored so CLI flags that were not given do not mask other sources.
        """
        config = config or os.environ.get("SLEUTH_CONFIG")
        data = _read_config(Path(config)) if config else {}
        data = _deep_merge(data, _endpoint_env())
        data = _deep_merge(data, _env_sections())
        data = _deep_merge(data, _drop_none(overrides))
        unknown = [key for key in data if key not in cls.model_fields]
        if unknown:  # the environment's unknown SLEUTH_ names never get here
            raise ConfigError(_unknown(cls, (unknown[0],)))
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_invalid(exc)) from None

    @classmethod
    def from_name(cls, name: str, **overrides: Any) -> Settings:
        """The named preset (``src/sleuth/configs/NAME.yaml``: the model profiles ``small``
        and ``capable``), under the environment and ``overrides`` as :meth:`load` reads a
        config file; an unknown name is a ConfigError naming the nearest preset."""
        return cls.load(preset_path(name), **overrides)

    @staticmethod
    def presets() -> list[str]:
        """The names :meth:`from_name` takes."""
        return presets()

    def profile(self) -> Profile:
        """The model profile these settings run (``agent.profile``; ``auto``: ``capable``
        where an endpoint is configured, else ``small``, the local model), with its answer
        checks and whether the model is asked for its facts: ``agent.checks`` and
        ``agent.facts_first`` where set, else the profile preset's."""
        name, why = self.agent.profile, "agent.profile"
        if name == "auto":
            name, why = ("capable", "auto: an endpoint is configured (llm.base_url)") \
                if self.llm.configured else ("small", "auto: no endpoint, the local model")
        preset = _read_config(preset_path(name)).get("agent", {})
        checks = self.agent.checks if self.agent.checks is not None else preset["checks"]
        facts = self.agent.facts_first if self.agent.facts_first is not None else \
            bool(preset.get("facts_first"))
        return Profile(name, why, tuple(checks), facts,
                       custom=tuple(checks) != tuple(preset["checks"]))


def _unknown(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """"unknown setting agent.answr_first (did you mean 'answer_first'?)": the key at
    ``loc`` is no field of its section, with the nearest one that is."""
    section: type[BaseModel] | None = model
    for part in loc[:-1]:  # down to the section that holds the unknown key
        if section is not None and not isinstance(part, int):  # an int: an item of a list
            field = section.model_fields.get(str(part))
            section = _model_of(field.annotation if field else None)
    known = list(section.model_fields) if section is not None else []
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    where = ".".join(str(p) for p in loc)
    return f"unknown setting {where}" + (f" (did you mean {close[0]!r}?)" if close else
                                         f"; the keys: {', '.join(known)}" if known else "")


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The settings model an annotation holds (``ApiKey`` of ``list[ApiKey]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_of, get_args(annotation)) if m is not None), None)


def _invalid(exc: ValidationError) -> str:
    """One line for the first error of a validation."""
    first = exc.errors()[0]
    if first["type"] == "extra_forbidden":
        return _unknown(Settings, tuple(first["loc"]))
    where = ".".join(str(p) for p in first["loc"])
    return f"invalid setting {where}: {first['msg']}"


_ENDPOINT_VARS = {"base_url": "BASE_URL", "api_key": "API_KEY", "model": "MODEL"}


def _endpoint_env() -> dict[str, Any]:
    llm: dict[str, Any] = {}
    for field, suffix in _ENDPOINT_VARS.items():
        value = os.environ.get(f"SLEUTH_{suffix}") or os.environ.get(f"ARAG_{suffix}")
        if value:
            llm[field] = value
    index = os.environ.get("SLEUTH_INDEX")
    out: dict[str, Any] = {"llm": llm} if llm else {}
    if index:
        out["index"] = index
    return out


def _env_sections() -> dict[str, Any]:
    """``SLEUTH_LLM__MODEL=x`` style variables, parsed by pydantic-settings itself. An
    unknown top-level ``SLEUTH_`` name is ignored (``SLEUTH_CONFIG``, ``SLEUTH_BASE_URL`` and
    other programs' names share the prefix); an unknown key of a section
    (``SLEUTH_AGENT__ANSWR_FIRST``) is an error naming the nearest valid one."""
    try:
        from_env = Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "SLEUTH_" + "__".join(str(p) for p in first["loc"]).upper()
        raise ConfigError(f"{_invalid(exc)} (environment variable {name})") from None
    explicit = from_env.model_dump(exclude_unset=True)
    return {k: v for k, v in explicit.items() if k != "index" or os.environ.get("SLEUTH_INDEX")}


_ARAG_AGENT_KEYS = {"max_loops": "max_steps", "max_token_budget": "token_budget"}


def _read_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        raw = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot parse config file {path}: {exc}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must hold a mapping of sections")
    return _from_arag_layout(raw)


def _from_arag_layout(raw: dict[str, Any]) -> dict[str, Any]:
    """Accept A-RAG's ``llm / embedding / agent / data`` layout next to Sleuth's own."""
    data = dict(raw)
    if "embedding" in data:
        data["embed"] = _deep_merge(data.pop("embedding") or {}, data.get("embed") or {})
    agent = dict(data.get("agent") or {})
    for old, new in _ARAG_AGENT_KEYS.items():
        if old in agent:
            agent[new] = agent.pop(old)
    agent.pop("verbose", None)
    if agent:
        data["agent"] = agent
    data_section = data.pop("data", None) or {}
    if isinstance(data_section, dict) and data_section.get("index_dir") and "index" not in data:
        data["index"] = data_section["index_dir"]
    return data


def _deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Mapping):
            value = _drop_none(value)
            if value:
                out[key] = value
        elif value is not None:
            out[key] = value
    return out

"""Multi-turn sessions: follow-up questions see what earlier turns retrieved.

A :class:`Session` keeps the dialogue (messages, tool output included) and the tracker
(reference ids, chunks read) across questions, so reference ids like ``turn1search3`` stay
valid and a follow-up can open a document found earlier instead of searching again. Sessions
are saved after every turn and ``Session.open`` resumes one. Where they live follows the
index's store (:func:`session_store`): JSON files in the index folder
(``sessions/<id>.json``, written atomically) for a folder index, the ``sessions`` table of
the index schema for a PostgreSQL index (so every server of the index sees them). The CLI's
``search``/``find``/``open`` commands share the session ``cli`` so their reference ids
survive between invocations.

Two bounds hold a session to its reader:

- **Context.** A follow-up carries the earlier dialogue only up to :func:`history_budget`
  tokens, oldest exchanges left out first (:func:`bound_history`); a chat client's resent
  conversation is held the same way.
- **Access.** Each turn records the scopes (collection and groups) of the documents it drew
  on: cited, retrieved or read, earlier turns' included, since they were in its context. A
  session opened through a caller's view of the index shows a turn whose scopes the caller
  can no longer read as withheld (:data:`WITHHELD`: no question, answer or citations), and a
  follow-up in it starts without the earlier dialogue and without the references to
  documents it cannot read. Nothing is deleted: the turns come back if access does.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sleuth.agent.context import count_messages
from sleuth.agent.loop import StepCallback
from sleuth.errors import ConfigError
from sleuth.index.read import ReadIndex, session_store
from sleuth.llm import LLM
from sleuth.settings import DEFAULT_AGENT, Settings
from sleuth.store.sessions import SessionStore as SessionStore  # re-exported: its earlier home
from sleuth.store.sessions import check_session_id
from sleuth.text.access import Access, scope_name, scope_of
from sleuth.tools import TOOLS, ToolContext, ToolResult
from sleuth.tools.tracker import Tracker
from sleuth.types import Answer

FORMAT = "sleuth-session"
FORMAT_VERSION = 1
TITLE_CHARS = 80  # a session without a title is listed under its first question, cut here
# what a turn the reader may no longer see shows instead of its answer (and a session whose
# turns are withheld, instead of its title)
WITHHELD = "This turn drew on documents you can no longer read."
WITHHELD_TITLE = "(drew on documents you can no longer read)"
Message = dict[str, Any]


def history_budget(settings: Settings) -> int:
    """Tokens of earlier dialogue a question carries to the model: ``agent.history_tokens``,
    else a quarter of the model's context (``agent.token_budget`` for an endpoint,
    ``llm.local_context`` for the local model), leaving the rest to the question's own
    passages and tool results."""
    if settings.agent.history_tokens is not None:
        return settings.agent.history_tokens
    context = settings.agent.token_budget if settings.llm.configured \
        else settings.llm.local_context
    return max(100, context // 4)


def bound_history(messages: Sequence[Mapping[str, Any]], budget: int) -> list[Message]:
    """``messages`` held to ``budget`` tokens (counted as sent, :func:`count_messages`): a
    leading system message kept, then whole exchanges (a user message and what follows it
    up to the next one), newest first, while they fit; an exchange too long whole counts as
    its user message and last answer (its tool calls and results left out) when those fit.
    The first exchange that does not fit ends it: older ones are left out, so what remains
    is the conversation's recent end, in order."""
    head = [dict(m) for m in messages[:1] if m.get("role") == "system"]
    rest = [dict(m) for m in messages[len(head):]]
    left = budget - count_messages(head)
    starts = [i for i, m in enumerate(rest) if m.get("role") == "user" and i > 0]
    kept: list[Message] = []
    for first, end in reversed(list(zip([0, *starts], [*starts, len(rest)], strict=True))):
        exchange = rest[first:end]
        cost = count_messages(exchange)
        if cost > left:
            exchange = _short(exchange)
            cost = count_messages(exchange)
            if not exchange or cost > left:
                break
        kept[:0] = exchange
        left -= cost
    return head + kept


def _short(exchange: list[Message]) -> list[Message]:
    """An exchange as its user message and its last answer (assistant text without tool
    calls), or [] when it has not both."""
    answers = [m for m in exchange if m.get("role") == "assistant" and m.get("content")
               and not m.get("tool_calls")]
    if not exchange or exchange[0].get("role") != "user" or not answers:
        return []
    return [exchange[0], {"role": "assistant", "content": answers[-1]["content"]}]


def _doc_of(chunk_id: str) -> str:
    return chunk_id.rsplit("#", 1)[0]


def _scope(doc_id: str) -> str:
    return scope_name(*scope_of(doc_id))


def tracker_docs(tracker: Tracker) -> set[str]:
    """The documents whose text a session's tracker says were shown to the model: chunks
    retrieved or read, and documents given reference ids."""
    return ({_doc_of(c) for c in [*tracker.retrieved, *tracker.read]} |
            {ref.doc_id for ref in tracker.refs.values()})


def drawn_scopes(answer: Answer, tracker: Tracker) -> list[str]:
    """The scopes of the documents a turn drew on: cited, and everything its (the session's)
    tracker holds, earlier turns' included, since they were in its context."""
    docs = tracker_docs(tracker) | {c.doc_id for c in answer.citations} | \
        {_doc_of(c) for c in [*answer.retrieved_ids, *answer.chunks_read_ids]}
    return sorted({_scope(d) for d in docs})


def _readable(access: Access | None, scopes: Iterable[str]) -> bool:
    """Whether ``access`` reads every scope of ``scopes`` (None reads everything)."""
    if access is None:
        return True
    for scope in scopes:
        collection, *groups = scope.split("~")
        if not access.allows(collection, groups):
            return False
    return True


def _withheld(turn: Mapping[str, Any]) -> dict[str, Any]:
    """``turn`` as shown to a reader who may no longer read what it drew on."""
    return {"question": "", "answer": WITHHELD, "citations": [], "withheld": True,
            "agent": turn.get("agent"), "loops": turn.get("loops"), "at": turn.get("at")}


def session_title(title: str | None, first_question: str) -> str:
    """What a session is listed as: its title, else its first question on one line, cut at
    a word to about :data:`TITLE_CHARS` characters ("" before the first question)."""
    if title:
        return title
    line = " ".join(first_question.split())
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[: TITLE_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


class Session:
    """A conversation with one agent over one index."""

    def __init__(self, index: ReadIndex, *, agent: str = DEFAULT_AGENT,
                 settings: Settings | None = None, llm: LLM | None = None,
                 session_id: str | None = None, persist: bool = True,
                 owner: str | None = None) -> None:
        self.index = index
        self.owner = owner
        self.store = session_store(index)
        self.settings = settings or index.settings
        self.agent_name = agent
        self.id = check_session_id(session_id or datetime.now(UTC).strftime(
            "%Y%m%d-%H%M%S-") + secrets.token_hex(2))
        self.persist = persist
        self.tracker = Tracker()
        self.messages: list[dict[str, Any]] = []
        self.turns: list[dict[str, Any]] = []
        self.title: str | None = None  # named by its user (None: listed by first question)
        self.since = 0  # the first turn whose exchange the dialogue (messages) may still hold
        self.created = _now()
        self._llm = llm

    # -- persistence -------------------------------------------------------------------

    @classmethod
    def open(cls, index: ReadIndex, session_id: str, *, create: bool = False,
             agent: str | None = None, settings: Settings | None = None,
             llm: LLM | None = None, owner: str | None = None) -> Session:
        """Resume session ``session_id`` of ``index`` (a new one when ``create``); ``owner``
        picks a tenant key's own sessions (see :class:`SessionStore`)."""
        session = cls(index, agent=agent or DEFAULT_AGENT, settings=settings, llm=llm,
                      session_id=session_id, owner=owner)
        data = session.store.load(owner, session.id)
        if data is None:
            if create:
                return session
            raise ConfigError(f"no session {session_id!r} in {session.store.where(owner)}; "
                              "list them with `sleuth chat --list`")
        if data.get("format") != FORMAT or data.get("format_version") != FORMAT_VERSION:
            raise ConfigError(f"{session.store.where(owner, session.id)} is not a session "
                              f"this Sleuth reads (format {data.get('format')!r} "
                              f"v{data.get('format_version')!r})")
        session._restore(data)
        session.agent_name = agent or session.agent_name
        return session

    def _restore(self, data: Mapping[str, Any]) -> None:
        """Take up the saved session ``data`` (checked by :meth:`open`)."""
        self.agent_name = data.get("agent") or "docs"
        self.tracker = Tracker.from_dict(data.get("tracker") or {})
        self.messages = list(data.get("messages") or [])
        self.turns = list(data.get("turns") or [])
        self.created = data.get("created") or self.created
        self.title = data.get("title") or None
        self.since = int(data.get("since") or 0)

    @staticmethod
    def exists(index: ReadIndex, session_id: str, owner: str | None = None) -> bool:
        """Whether ``owner`` has a saved session ``session_id`` in ``index``."""
        return session_store(index).exists(owner, check_session_id(session_id))

    @staticmethod
    def saved(index: ReadIndex, owner: str | None = None) -> list[dict[str, Any]]:
        """Saved sessions of ``index`` (of ``owner``): id, agent, turns, first question,
        title (:func:`session_title`), last update. Read through a caller's view, each is
        listed as :meth:`shown` shows it (a withheld first question is left out)."""
        store = session_store(index)
        out = []
        for listed in store.list(owner):
            if index.access is not None and listed.get("turns"):
                session = Session(index, session_id=listed["id"], owner=owner, persist=False)
                data = store.load(owner, session.id)
                if data is not None:
                    session._restore(data)
                    turns = session.shown_turns()
                    listed = {**listed, "first_question": turns[0]["question"],
                              "title": session.shown_title}
            out.append({**listed, "title": session_title(listed.get("title"),
                                                         listed.get("first_question") or "")})
        return out

    @staticmethod
    def delete(index: ReadIndex, session_id: str, owner: str | None = None) -> bool:
        """Delete ``owner``'s session ``session_id``; False when there was none."""
        return session_store(index).delete(owner, check_session_id(session_id))

    def save(self) -> None:
        if not self.persist:
            return
        data = {"format": FORMAT, "format_version": FORMAT_VERSION, "id": self.id,
                "agent": self.agent_name, "created": self.created, "updated": _now(),
                **({"title": self.title} if self.title else {}),
                **({"since": self.since} if self.since else {}),
                "tracker": self.tracker.to_dict(), "messages": self.messages,
                "turns": self.turns}
        self.store.save(self.owner, self.id, data)

    # -- use ---------------------------------------------------------------------------

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            from sleuth.llm.factory import llm_from_settings

            self._llm = llm_from_settings(self.settings)
        return self._llm

    def ask(self, question: str, *, on_step: StepCallback | None = None) -> Answer:
        """Answer ``question`` in this conversation; earlier turns' evidence stays visible."""
        from sleuth.agent.run import nothing_indexed
        from sleuth.agent.variants import build_agent

        empty = nothing_indexed(self.index, question, self.agent_name, on_step)
        if empty is not None:  # no model, no turn: nothing was asked of the documents
            return empty
        agent = build_agent(self.agent_name, self.index, self.llm, self.settings)
        self.recheck()
        self.tracker.turn = len(self.turns) + 1
        answer = agent.run(question, on_step=on_step, tracker=self.tracker,
                           history=bound_history(self.messages, history_budget(self.settings)))
        if answer.messages:
            self.messages = answer.messages
        self.turns.append({"question": question, "answer": answer.answer,
                           "citations": [c.to_dict() for c in answer.citations],
                           "agent": answer.agent, "loops": answer.loops,
                           "scopes": drawn_scopes(answer, self.tracker), "at": _now()})
        self.save()
        return answer

    # -- what its reader may see ---------------------------------------------------------

    def _scopes(self, turn: Mapping[str, Any]) -> list[str]:
        """The scopes ``turn`` drew on: as recorded, or for a turn saved before they were,
        those of its citations and of everything the session's tracker holds."""
        if "scopes" in turn:
            return list(turn["scopes"])
        docs = tracker_docs(self.tracker) | {str(c.get("doc_id")) for c in
                                             turn.get("citations") or ()}
        return sorted({_scope(d) for d in docs})

    def withheld(self) -> list[bool]:
        """Per turn, whether it drew on documents the session's reader (its index's access)
        may no longer read."""
        access = self.index.access
        return [not _readable(access, self._scopes(turn)) for turn in self.turns]

    def shown_turns(self) -> list[dict[str, Any]]:
        """The turns as its reader may see them: a withheld one says so (:data:`WITHHELD`)
        and shows no question, answer or citations."""
        return [_withheld(turn) if hidden else turn
                for turn, hidden in zip(self.turns, self.withheld(), strict=True)]

    def recheck(self) -> bool:
        """Before a follow-up: where a turn of the dialogue (those from :attr:`since`) is
        withheld or the tracker holds documents the reader may no longer read, the dialogue
        starts afresh (the model never sees what they drew on) and the tracker forgets those
        documents. True when something was left out."""
        access = self.index.access
        hidden = {d for d in tracker_docs(self.tracker) if not _readable(access, [_scope(d)])}
        if not hidden and not any(self.withheld()[self.since:]):
            return False
        for turn in self.turns:  # what a turn drew on, before the tracker forgets it
            turn.setdefault("scopes", self._scopes(turn))
        self.messages, self.since = [], len(self.turns)
        old = self.tracker
        self.tracker = Tracker(
            read=[c for c in old.read if _doc_of(c) not in hidden],
            seen_scores={c: v for c, v in old.seen_scores.items() if _doc_of(c) not in hidden},
            retrieved=[c for c in old.retrieved if _doc_of(c) not in hidden],
            relevance={c: v for c, v in old.relevance.items() if _doc_of(c) not in hidden},
            refs={r: ref for r, ref in old.refs.items() if ref.doc_id not in hidden},
            turn=old.turn, searches=old.searches)
        return True

    @property
    def shown_title(self) -> str:
        """The title it is listed under (:func:`session_title`): a session with withheld
        turns under :data:`WITHHELD_TITLE` (its title or first question may tell of them)."""
        if any(self.withheld()):
            return WITHHELD_TITLE
        return session_title(self.title, self.turns[0]["question"] if self.turns else "")

    def run_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a retrieval tool by hand in this session (reference ids are remembered)."""
        tool = TOOLS.get(name)
        if tool is None:
            raise ConfigError(f"unknown tool {name!r}; choose one of: {', '.join(TOOLS)}")
        self.tracker.turn = max(1, len(self.turns) + 1)
        result = tool.run(ToolContext(self.index, self.tracker), arguments)
        self.save()
        return result


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")

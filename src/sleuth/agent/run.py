"""What every agent shares: the :class:`Runner` protocol and the :class:`Run` that keeps one
question's books.

A runner takes a question and returns an :class:`~sleuth.types.Answer`. For each question
it opens a run (``with self.start(question, ...) as run:``) and lets the run do the
bookkeeping: LLM calls go through :meth:`Run.chat` (or :meth:`Run.account` for a call made
another way), steps through :meth:`Run.record`, and :meth:`Run.finish` turns the final text
into the answer with its citations; leaving the ``with`` block stamps the time. A runner
that wraps others (routing, verification, the scope gate) adds their answers to its books
with :meth:`Run.absorb` and returns one of them with :meth:`Run.adopt`.

Whoever asks may watch a run live by passing a :class:`Listener` as ``on_step``: besides
each step it hears the answer's text as the model writes it (a call that may be the answer
says so: ``run.chat(..., may_answer=True)``), the context-budget events, and before each
model call what the model is about to read and how long that takes here
(:mod:`sleuth.agent.pace`). Runners only pass ``on_step`` on, so a new runner needs nothing
more to be watched.

An answer cites only what its run was shown (:func:`~sleuth.agent.citations.shown`): an
id no search, read or step of the run showed is taken out of the text and the citations,
and a step of kind ``check`` says so. An index (or a tenant's collection) that holds no
documents is answered by :func:`nothing_indexed` without a model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from sleuth.agent.citations import (
    AnswerStream,
    found_by,
    looks_like_id,
    parse_citations,
    resolve_sources,
    shown,
    without_ids,
)
from sleuth.agent.pace import Reading, measured, reading
from sleuth.llm import LLM, ChatResponse, cost
from sleuth.llm.base import Streaming, TextCallback
from sleuth.settings import AgentSettings
from sleuth.text.abstain import abstains
from sleuth.text.ids import cited_ids, split_answer
from sleuth.tools.tracker import Tracker
from sleuth.types import Answer, CheckNote, Step

if TYPE_CHECKING:
    from types import TracebackType

    from sleuth.index.read import ReadIndex
    from sleuth.tools import Tool

StepCallback = Callable[[Step], None]
ContextCallback = Callable[[dict[str, Any]], None]
ProgressCallback = Callable[[dict[str, Any]], None]
Prices = Mapping[str, tuple[float, float]]
_BOOKS = ("llm_calls", "prompt_tokens", "cached_prompt_tokens", "completion_tokens",
          "total_cost", "loops")


class Runner(Protocol):
    """Question in, :class:`Answer` out. A session passes its ``tracker`` and the ``history``
    of earlier turns (:attr:`Answer.messages`); a runner that keeps no dialogue ignores
    ``history``. ``on_step`` sees each step as it is recorded."""

    @property
    def name(self) -> str: ...

    def run(self, question: str, *, question_id: str | None = None,
            on_step: StepCallback | None = None, tracker: Tracker | None = None,
            history: Sequence[dict[str, Any]] = ()) -> Answer: ...


# how the agents say that the documents hold no answer (the prompts ask for these words;
# the answer step and the check for unfounded answers write them; eval's gold for an
# unanswerable question)
NOT_SAID = "The documents do not say"


def abstention(reason: str) -> str:
    """What an agent answers when it has no answer to give, and why."""
    return f"I cannot answer this reliably from the indexed documents: {reason}."


HELD_CHARS = 80  # of a reply held back until they show it is not an abstention


class Held:
    """A streamed reply passed on to ``say`` only once its first :data:`HELD_CHARS`
    characters (or the whole, if shorter) do not say the documents do not say: a person
    watching hears an answer, not an abstention the agent then searches past."""

    def __init__(self, say: TextCallback) -> None:
        self.say = say
        self.held = ""
        self.open = False

    def feed(self, piece: str) -> None:
        if self.open:
            self.say(piece)
            return
        self.held += piece
        if len(self.held) >= HELD_CHARS and not abstains(self.held):
            self.open, held, self.held = True, self.held, ""
            self.say(held)

    def end(self) -> None:
        """The reply is complete: what is held goes on unless it abstains."""
        if not self.open and self.held and not abstains(self.held):
            self.say(self.held)
        self.held = ""


@dataclass
class Listener:
    """Watches a run live; pass it as ``on_step``. ``step`` gets each step as it is
    recorded; ``token`` the answer's text in pieces as the model writes it (the whole answer
    once where the model does not stream); ``context`` each context-budget event,
    ``{"used", "budget", "percent", "action": "warn" | "summarize"}``; ``progress``, before
    each model call, what it is about to read (:meth:`sleuth.agent.pace.Reading.to_dict`:
    ``{"passages", "tokens", "seconds", "text"}``, text such as "reading 5 passages (about
    40 s here)").

    A reply streamed as tokens may turn out to call a tool after all (a model that writes
    before it calls): the step that follows says so, and the answer starts anew after it."""

    step: StepCallback | None = None
    token: TextCallback | None = None
    context: ContextCallback | None = None
    progress: ProgressCallback | None = None
    answered: bool = False  # answer text has reached ``token`` since the last step

    def __call__(self, step: Step) -> None:
        self.answered = False
        if self.step is not None:
            self.step(step)

    def say(self, text: str) -> None:
        """Pass a piece of the answer's text to ``token``."""
        if self.token is not None and text:
            self.answered = True
            self.token(text)


# what any question over an index without documents is answered, with no model asked: to
# whoever runs the index, and to a tenant key (a scoped view), whose collection it is
NO_DOCUMENTS = "The index holds no documents: index some with `sleuth index PATH`."
NO_COLLECTION_DOCUMENTS = "Your collection holds no documents: add some first."
EMPTY_INDEX = "no_documents"  # Answer.forced of such an answer


def nothing_indexed(index: ReadIndex, question: str, agent: str,
                    on_step: StepCallback | None = None) -> Answer | None:
    """The answer to ``question`` when ``index`` (as its reader sees it) holds no document:
    says so, cites nothing, made without a model (``forced`` :data:`EMPTY_INDEX`), and a
    :class:`Listener` passed as ``on_step`` hears it; None when there are documents to
    answer from."""
    if index.stats().documents:
        return None
    said = NO_DOCUMENTS if index.access is None else NO_COLLECTION_DOCUMENTS
    if isinstance(on_step, Listener):
        on_step.say(said)
    return Answer(question=question, answer=said, agent=agent, abstained=True,
                  forced=EMPTY_INDEX)


@dataclass
class Run:
    """One question's books: LLM calls, tokens and cost, steps, time; and its answer."""

    answer: Answer
    llm: LLM
    tracker: Tracker = field(default_factory=Tracker)
    on_step: StepCallback | None = None
    prices: Prices | None = None
    started: float = field(default_factory=time.perf_counter)
    # ids the run's reasoning cited besides its answer (IRCoT's reasoning sentences): cited
    # after the answer's own by :meth:`finish`
    also_cites: list[str] = field(default_factory=list)
    # the answer check running now (its steps are of kind "check"), set by the check pipeline
    checking: str | None = None

    @classmethod
    def start(cls, name: str, llm: LLM, question: str, *, question_id: str | None = None,
              tracker: Tracker | None = None, on_step: StepCallback | None = None,
              prices: Prices | None = None) -> Run:
        """A run of ``question`` by the runner called ``name``; the clock starts now."""
        answer = Answer(question=question, answer="", question_id=question_id, agent=name,
                        model=llm.model)
        return cls(answer, llm, tracker or Tracker(), on_step, prices)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.answer.seconds = time.perf_counter() - self.started

    @property
    def listener(self) -> Listener | None:
        """Who watches this run live, when ``on_step`` is a :class:`Listener`."""
        return self.on_step if isinstance(self.on_step, Listener) else None

    def chat(self, messages: Sequence[Mapping[str, Any]],
             tools: Sequence[Mapping[str, Any]] | None = None, *,
             tool_choice: str | None = None,
             parallel_tool_calls: bool | None = None,
             may_answer: bool = False, unless_abstains: bool = False) -> ChatResponse:
        """One LLM call on this run's account. A call whose reply ``may_answer`` the question
        is streamed when a listener wants the answer's tokens and the model streams; with
        ``unless_abstains``, a reply that says the documents do not say is not (the agent
        searches on instead: :class:`Held`)."""
        listener = self.listener
        timed = self._reading(messages)
        started = time.perf_counter()
        if may_answer and listener is not None and listener.token is not None and \
                isinstance(self.llm, Streaming):
            spoken = AnswerStream(listener.say)
            held = Held(spoken.feed) if unless_abstains else None
            response = self.llm.stream_chat(messages, tools, tool_choice=tool_choice,
                                            parallel_tool_calls=parallel_tool_calls,
                                            on_text=held.feed if held else spoken.feed)
            if not response.tool_calls:
                if held:
                    held.end()
                spoken.end()
        else:
            response = self.llm.chat(messages, tools, tool_choice=tool_choice,
                                     parallel_tool_calls=parallel_tool_calls)
        if timed is not None:
            measured(self.llm.model, timed.tokens, time.perf_counter() - started)
        return self.account(response)

    def _reading(self, messages: Sequence[Mapping[str, Any]]) -> Reading | None:
        """Tell a listener that wants progress what the model is about to read and how
        long that takes here; what was told (None: nobody asked, and the call is not
        timed)."""
        listener = self.listener
        if listener is None or listener.progress is None:
            return None
        said = reading(messages, self.llm.model)
        listener.progress(said.to_dict())
        return said

    def context(self, used: int, budget: int, action: str) -> None:
        """Tell the listener that the context holds ``used`` of ``budget`` tokens and what
        is done about it (``warn``, ``summarize``)."""
        listener = self.listener
        if listener is not None and listener.context is not None:
            listener.context({"used": used, "budget": budget,
                              "percent": round(100 * used / budget) if budget else 100,
                              "action": action})

    def account(self, response: ChatResponse) -> ChatResponse:
        """Add one call's tokens and cost to the books."""
        answer = self.answer
        answer.llm_calls += 1
        answer.prompt_tokens += response.usage.prompt_tokens
        answer.cached_prompt_tokens += response.usage.cached_tokens
        answer.completion_tokens += response.usage.completion_tokens
        answer.total_cost += cost(response.model or self.llm.model, response.usage, self.prices)
        return response

    @property
    def next_step(self) -> int:
        """The number the next recorded step gets."""
        return len(self.answer.trajectory) + 1

    def record(self, step: Step) -> Step:
        """Add ``step`` to the trajectory and show it to ``on_step``."""
        self.answer.trajectory.append(step)
        if self.on_step:
            self.on_step(step)
        return step

    def observe(self, name: str, arguments: dict[str, Any], output: str, reasoning: str,
                started: float | None = None, tokens: int = 0) -> Step:
        """Record a step no tool ran (kind "observation": a reading, an answer withheld; or
        "check" while an answer check runs, :attr:`checking`): what it looked at, what it
        found, why; timed from ``started`` (``time.perf_counter()``; None: not timed)."""
        seconds = 0.0 if started is None else time.perf_counter() - started
        return self.record(Step(self.next_step, name, arguments, output, reasoning, tokens,
                                None, seconds,
                                kind="check" if self.checking else "observation"))

    def finish(self, text: str, index: ReadIndex) -> Answer:
        """The answer from the model's final ``text``: its citations resolved against
        ``index`` and the tracker's reference ids (each with the tool that found it; then
        :attr:`also_cites`), and the chunks read and retrieved. A listener that heard no
        token of it yet hears the whole answer now."""
        answer = self.answer
        text, unshown = self._unshown(text)
        answer.answer, citations = parse_citations(
            text, lambda ids: resolve_sources(index, self.tracker,
                                              [i for i in ids if i not in unshown]))
        have = {c.chunk_id for c in citations}
        more = [cid for cid in dict.fromkeys(self.also_cites)
                if cid not in have and shown(cid, self.tracker, answer.trajectory)]
        found = resolve_sources(index, self.tracker, more) if more else {}
        answer.citations = found_by([*citations, *(found[c] for c in more if c in found)],
                                    answer.trajectory)
        listener = self.listener
        if listener is not None and not listener.answered:
            listener.say(answer.answer)
        answer.chunks_read_ids = list(self.tracker.read)
        answer.retrieved_ids = list(self.tracker.retrieved)
        return answer

    def _unshown(self, text: str) -> tuple[str, set[str]]:
        """``text`` without the citations of chunk or reference ids the run was never shown
        (:func:`~sleuth.agent.citations.shown`), and those ids: a model that copies the
        prompt's example id or makes one up cites nothing. Where it did, a check step and
        note say which."""
        body, scores = split_answer(text)
        cited = dict.fromkeys([*cited_ids(body), *scores])
        unshown = [cid for cid in cited if looks_like_id(cid)
                   and not shown(cid, self.tracker, self.answer.trajectory)]
        if not unshown:
            return text, set()
        named = ", ".join(unshown)
        note = f"removed the citation of {named}: no search or read of this run showed it"
        self.checking = "citations"
        try:
            self.observe("citations", {"removed": unshown}, named,
                         f"the answer cited {named}, which no search or read of this run "
                         "returned: not a source, taken out of the answer")
        finally:
            self.checking = None
        self.answer.check_notes.append(CheckNote("citations", changed=True, note=note))
        return without_ids(text, set(unshown)), set(unshown)

    def absorb(self, part: Answer) -> None:
        """Add a wrapped runner's books (calls, tokens, cost, loops, steps) to these; its
        steps are numbered on after ours."""
        for name in _BOOKS:
            setattr(self.answer, name, getattr(self.answer, name) + getattr(part, name))
        offset = len(self.answer.trajectory)
        self.answer.trajectory.extend(replace(s, step=offset + s.step) for s in part.trajectory)

    def adopt(self, part: Answer) -> Answer:
        """Make ``part`` (a wrapped runner's answer, already absorbed) this run's answer: it
        takes over the books kept here, and the clock stamps it."""
        for name in _BOOKS:
            setattr(part, name, getattr(self.answer, name))
        part.trajectory = self.answer.trajectory
        self.answer = part
        return part


@dataclass
class ModelRunner:
    """What the runners that prompt a model over an index are configured with."""

    index: ReadIndex
    llm: LLM
    tools: Sequence[Tool] = ()  # offered to the model (none where the runner retrieves)
    system_prompt: str = ""
    settings: AgentSettings = field(default_factory=AgentSettings)
    prices: Prices | None = None
    name: str = "full"
    profile: str | None = None  # the model profile it runs under (``Settings.profile``)

    def start(self, question: str, *, question_id: str | None = None,
              on_step: StepCallback | None = None, tracker: Tracker | None = None) -> Run:
        run = Run.start(self.name, self.llm, question, question_id=question_id,
                        tracker=tracker, on_step=on_step, prices=self.prices)
        run.answer.profile = self.profile
        return run

    def run(self, question: str, *, question_id: str | None = None,
            on_step: StepCallback | None = None, tracker: Tracker | None = None,
            history: Sequence[dict[str, Any]] = ()) -> Answer:
        """Answer ``question``: the one template of every model runner. The run starts (its
        clock, books and tracker), the runner's :meth:`respond` writes the answer's text,
        the run finishes (citations resolved, reads and retrievals filled in, time stamped),
        then :meth:`finished` may add to the answer. A session passes its ``tracker`` and the
        ``history`` of earlier turns (:attr:`Answer.messages`)."""
        with self.start(question, question_id=question_id, on_step=on_step,
                        tracker=tracker) as run:
            final = self.respond(run, history)
            run.finish(final, self.index)
            self.finished(run)
        return run.answer

    def respond(self, run: Run, history: Sequence[dict[str, Any]]) -> str:
        """The runner's one hook: the final answer text for ``run.answer.question``, with
        its steps recorded on ``run``."""
        raise NotImplementedError

    def finished(self, run: Run) -> None:
        """After the run finished: add to its answer (IRCoT cites what its reasoning cited,
        A2RAG proposes triples). Nothing by default."""

"""Scripted readers: what the answer checks do to a capable model, measured without one.

A reader writes each reply of the scripted server (:class:`~sleuth.testing.fake.FakeLLMServer`
with ``reader=``) from the request itself, knowing the gold answers of the questions it may
be asked (:func:`golds`: question text to :class:`Gold`):

- :class:`Oracle` answers as a model that reads perfectly and knows nothing: where a passage
  shown to it (the tool results and user messages of the request, split at the chunk ids
  the agent writes before each passage) holds a gold answer, it answers exactly that gold,
  citing that chunk; otherwise "The documents do not say". Offered search tools before a
  gold is shown, it searches like a capable model: the question itself, then its words
  (once each), then answers.
- :class:`FromMemory` answers as a model that answers from memory and cites for show: a
  fluent, plausible wrong answer (the other option of an "A or B" question, the other of
  yes and no, or the gold of another question of the same kind that no passage shown
  holds; never this question's gold), citing a shown chunk that does not hold it.

Both also answer the other requests an answer check sends (``answer_span``'s JSON span,
``past_echo``'s "answer in one full sentence", ``bridge``'s passages of the entity), and
speak the JSON tool protocol (:mod:`sleuth.llm.jsontools`) where the client asks for it:
``{"tool": ..., "arguments": ...}`` or the answer object, with its ``facts`` first where
the schema has them (the ``small`` profile's ``facts_first``).

A passage *holds* a gold answer when (each compared as :func:`~sleuth.eval.metrics.
normalize_answer` normalises, on whole words) it contains one of the gold's aliases; for a
gold of a sentence or more (GraphRAG-Bench's), when it holds three fifths of the words the
gold adds to the question (four fifths of its words, where it adds none); where the
question record carries its evidence text (a filing's page, a manual's sentence), when it
holds four fifths of that text's words; for a yes or no gold, when the passages shown name
every page the question's evidence is on (the oracle then cites, as a reader of both would,
the first passage naming each).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sleuth.agent.run import NOT_SAID
from sleuth.eval.datasets import Question
from sleuth.eval.metrics import contain_match, normalize_answer
from sleuth.prompts import prompt
from sleuth.testing.fake import Turn
from sleuth.text.ids import CHUNK_ID, REF_ID, cite, relevance_line
from sleuth.text.lexicon import YES_NO
from sleuth.text.querytext import content_words

__all__ = ["FromMemory", "Gold", "Oracle", "Reader", "golds", "passages"]

# a passage's id where it starts: a chunk id or reference id, not one a block's header
# names as its document or neighbour (``document Medical#00022; prev: a#3, next: a#5``)
_MARKER = re.compile(rf"{CHUNK_ID.pattern}|\b({REF_ID.pattern})\b")
_NAMED = ("document ", "prev: ", "next: ")
_HEADER = re.compile(r"^\s*\([^\n]*?\)\s*===")  # the rest of a "=== chunk ID (...) ===" line
_QUESTION = re.compile(r"^Question: (.+?)\n\n", re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")
_INITIAL = re.compile(r"(?:^|[\s(.])[A-Z]\.$")  # "C." of "C. Maurice Patterson"
_ECHO = prompt("echo").split("{answer}")[0].strip()  # past_echo's request, as it starts
_AFTER = re.compile(rf"\n\n(?:Draft answer:|{re.escape(_ECHO)})")
LONG_GOLD = 4  # words of a gold answer from which it is read as a sentence, by its words
GOLD_SHARE = 0.6  # of the words a sentence gold adds to the question, a passage holds
EVIDENCE_SHARE = 0.8  # of the words of the question's evidence text, a passage holds
MIN_EVIDENCE = 5  # words an evidence text needs before it is read by its words
SEARCHES = 2  # searches a reader makes for a question before it answers from what it has


@dataclass(frozen=True)
class Gold:
    """What a reader knows of one question: its gold answers (aliases too; none for a
    question the corpus does not answer), its kind (the dataset's question type: a
    from-memory answer is another question's gold of the same kind), the evidence texts its
    record gives, and the titles of the pages its evidence is on."""

    answers: tuple[str, ...] = ()
    kind: str = ""
    evidence: tuple[str, ...] = ()
    titles: tuple[str, ...] = ()

    @property
    def yes_no(self) -> bool:
        return bool(self.answers) and normalize_answer(self.answers[0]) in YES_NO


def golds(questions: Iterable[Question]) -> dict[str, Gold]:
    """Question text → :class:`Gold`, from a dataset's questions (the evidence of
    GraphRAG-Bench's ``evidence_text``, FinanceBench's ``evidence_texts`` and the manuals'
    ``evidence``; 2Wiki's ``supporting_titles``). A question asked twice (GraphRAG-Bench
    asks one of two novels) keeps the gold answers of both."""
    out: dict[str, Gold] = {}
    for q in questions:
        meta = q.metadata
        evidence = [meta.get("evidence_text"), meta.get("evidence"),
                    *(meta.get("evidence_texts") or [])]
        gold = Gold(tuple(q.answers) if q.answerable else (), q.type or "",
                    tuple(str(e) for e in evidence if isinstance(e, str) and e.strip()),
                    tuple(str(t) for t in meta.get("supporting_titles") or ()))
        if q.question in out:
            was = out[q.question]
            gold = Gold(tuple(dict.fromkeys(was.answers + gold.answers)), was.kind,
                        was.evidence + gold.evidence, was.titles + gold.titles)
        out[q.question] = gold
    return out


def passages(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The passages shown in ``messages`` (user and tool messages), by the id written
    before each, in order of first appearance: the text from one id to the next other id
    of the same message (a passage shown twice keeps both texts)."""
    found: dict[str, str] = {}
    for message in messages:
        if message.get("role") not in ("user", "tool"):
            continue
        text = str(message.get("content") or "")
        marks = [(m.start(), m.end(), m.group(1) or m.group(2)) for m in _MARKER.finditer(text)
                 if not text[max(0, m.start() - 10):m.start()].endswith(_NAMED)]
        starts = [i for i, mark in enumerate(marks) if i == 0 or mark[2] != marks[i - 1][2]]
        for n, i in enumerate(starts):
            end = marks[starts[n + 1]][0] if n + 1 < len(starts) else len(text)
            cid = marks[i][2]
            shown = _HEADER.sub("", text[marks[i][1]:end], count=1)
            found[cid] = f"{found.get(cid, '')} {shown}".strip()
    return found


def _padded(text: str) -> str:
    return f" {normalize_answer(text)} "


def _words(text: str) -> set[str]:
    return {w for w in normalize_answer(text).split() if len(w) > 3}


@dataclass(frozen=True)
class Request:
    """One chat request as a reader reads it: the question it is about (None: none it
    knows), the passages shown, the tools offered (name → parameters schema), the tool
    choice, the JSON reply schema the client asked for (None: free text), and the last
    user message."""

    question: str | None
    shown: dict[str, str]
    tools: dict[str, dict[str, Any]]
    choice: str | None
    schema: dict[str, Any] | None
    last: str
    messages: list[dict[str, Any]]

    @property
    def span(self) -> bool:
        """``answer_span``'s request: the span of a passage that answers, as JSON."""
        props = (self.schema or {}).get("properties") or {}
        return "answerable" in props or any(
            '"answerable"' in str(m.get("content") or "") for m in self.messages
            if m.get("role") == "system")

    @property
    def answer_props(self) -> dict[str, Any]:
        """The properties of the JSON answer object asked for ({}: a plain answer)."""
        if self.schema is None:
            return {}
        for option in [self.schema, *(self.schema.get("anyOf") or [])]:
            props = option.get("properties") or {}
            if "answer" in props:
                return dict(props)
        return {}

    def searched(self) -> list[tuple[str, dict[str, Any]]]:
        """The tool calls already made in the dialogue (native or as JSON text)."""
        out = []
        for m in self.messages:
            if m.get("role") != "assistant":
                continue
            for call in m.get("tool_calls") or ():
                function = call.get("function") or {}
                out.append((str(function.get("name")), _loads(function.get("arguments"))))
            content = str(m.get("content") or "")
            if content.startswith("{") and '"tool"' in content:
                for line in content.splitlines():
                    obj = _loads(line)
                    if "tool" in obj:
                        out.append((str(obj["tool"]), obj.get("arguments") or {}))
        return out


def _loads(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


class Reader:
    """A scripted model: each request's reply written from the request (see the module
    docstring). Call it with a chat-completions request body; it returns the scripted
    server's turn."""

    def __init__(self, known: Mapping[str, Gold]) -> None:
        self.golds = dict(known)
        self.calls = 0  # requests answered (for measurements)

    def __call__(self, body: Mapping[str, Any]) -> Turn:
        self.calls += 1
        request = self.read(body)
        if request.span:
            return {"content": json.dumps(self.span(request), ensure_ascii=False)}
        call = self.search(request) if self.may_call(request) else None
        if call is not None:
            return self._call(request, *call)
        text, facts = self.answer(request)
        return self._answer(request, text, facts)

    # -- reading the request --------------------------------------------------------------

    def read(self, body: Mapping[str, Any]) -> Request:
        messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
        tools = {t["function"]["name"]: t["function"].get("parameters") or {}
                 for t in body.get("tools") or () if isinstance(t, dict) and "function" in t}
        choice = body.get("tool_choice")
        schema = None
        response_format = body.get("response_format")
        if isinstance(response_format, Mapping) and response_format.get("type") == "json_schema":
            schema = dict((response_format.get("json_schema") or {}).get("schema") or {})
            for option in schema.get("anyOf") or ():  # the JSON protocol's tool calls
                props = option.get("properties") or {}
                if "tool" in props:
                    tools[str(props["tool"].get("const"))] = props.get("arguments") or {}
        users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
        # what a check writes after the passages (the draft answer it asks about, the echo
        # it asks past) is not a passage
        read = [{**m, "content": _AFTER.split(str(m.get("content") or ""))[0]}
                if m.get("role") == "user" else m for m in messages]
        return Request(self._question(users), passages(read), tools,
                       choice if isinstance(choice, str) else None, schema,
                       users[-1] if users else "", messages)

    def _question(self, users: Sequence[str]) -> str | None:
        for text in users:
            if text in self.golds:
                return text
            asked = _QUESTION.match(text)
            if asked and asked.group(1) in self.golds:
                return asked.group(1)
        inside = [q for q in self.golds if any(q in text for text in users)]
        return max(inside, key=len) if inside else None

    def gold(self, request: Request) -> Gold:
        return self.golds.get(request.question or "", Gold())

    # -- what it does ---------------------------------------------------------------------

    def may_call(self, request: Request) -> bool:
        return bool(request.tools) and request.choice != "none" and not request.span

    def search(self, request: Request) -> tuple[str, dict[str, Any]] | None:
        """The next search this reader makes (None: it answers)."""
        raise NotImplementedError

    def answer(self, request: Request) -> tuple[str, str]:
        """The answer (with its citations) and the facts under it."""
        raise NotImplementedError

    def span(self, request: Request) -> dict[str, Any]:
        """``answer_span``'s JSON reply."""
        raise NotImplementedError

    # -- the searches a capable model makes -----------------------------------------------

    def planned(self, request: Request) -> list[tuple[str, dict[str, Any]]]:
        """The searches for the question: the question itself with a tool that takes a
        query text, then its words with one that takes a list of keywords."""
        question = request.question or request.last
        text_tool = list_tool = None
        for name in sorted(request.tools, key=_preference):
            if "search" not in name:
                continue
            kind = _query_kind(request.tools[name])
            if kind is None:
                continue
            if kind[1] == "string" and text_tool is None:
                text_tool = (name, {kind[0]: question})
            elif kind[1] == "array" and list_tool is None:
                words = sorted(content_words(question), key=lambda w: -len(w))[:5]
                list_tool = (name, {kind[0]: words or [question]})
        return [c for c in (text_tool, list_tool) if c is not None]

    def next_search(self, request: Request, limit: int = SEARCHES
                    ) -> tuple[str, dict[str, Any]] | None:
        """The first planned search not made yet, within ``limit`` searches of its own;
        under ``tool_choice: required`` a search in any case (the first planned again)."""
        plan = self.planned(request)[:limit]
        made = request.searched()
        for call in plan:
            if call not in made:
                return call
        if request.choice == "required" and plan:
            return plan[0]
        return None

    # -- writing the reply ----------------------------------------------------------------

    def _call(self, request: Request, name: str, arguments: dict[str, Any]) -> Turn:
        if request.schema is not None:  # the JSON tool protocol
            return {"content": json.dumps({"tool": name, "arguments": arguments})}
        return {"content": None, "tool_calls": [{"name": name,
                                                 "arguments": json.dumps(arguments)}]}

    def _answer(self, request: Request, text: str, facts: str) -> Turn:
        props = request.answer_props
        if not props:
            return {"content": text}
        reply: dict[str, Any] = {}
        if "facts" in props:
            reply["facts"] = facts
        reply["answer"] = text
        if "sources" in props:
            allowed = list((props["sources"].get("items") or {}).get("enum") or [])
            cited = [c for c in re.findall(r"\[([^\]]+)\]", text) if c in allowed]
            reply["sources"] = cited[:1] or allowed[:1]
        return {"content": json.dumps(reply, ensure_ascii=False)}


def _preference(name: str) -> tuple[int, str]:
    order = ("semantic", "hybrid", "keyword", "search")
    return next((i for i, word in enumerate(order) if word in name), len(order)), name


def _query_kind(parameters: Mapping[str, Any]) -> tuple[str, str] | None:
    """The parameter a search tool takes its query in and whether it is a text ("string")
    or a list of keywords ("array"); None: it takes none (or needs another argument)."""
    props = parameters.get("properties") or {}
    required = list(parameters.get("required") or props)
    for name in required:
        kind = (props.get(name) or {}).get("type")
        if kind == "string" or (kind == "array" and
                                (props[name].get("items") or {}).get("type") == "string"):
            return name, str(kind)
    return None


def answered(text: str, cid: str | None) -> str:
    """An answer as the agent's prompts ask for it: the answer, its citation, and the
    ``Relevance:`` line."""
    if cid is None:
        return text
    return f"{text} {cite(cid)}\n\n{relevance_line({cid: 1.0})}"


def options(question: str) -> list[str]:
    """The two things an "A or B" question offers ("Who was born first, A or B?", "... out
    of A and B?"); [] for another question."""
    found = re.search(r"(.+)\s+(?:or|and|vs\.?|versus)\s+([^,?]+?)\s*\?*$", question)
    if not found:
        return []
    left = re.split(r",\s*|:\s*|\b(?:of|between)\s+", found.group(1))[-1].strip()
    return [left, found.group(2).strip()] if left else []


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (a stop after an initial, "C. Maurice", ends none)."""
    out: list[str] = []
    for piece in _SENTENCE.split(" ".join(text.split())):
        if out and _INITIAL.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        elif piece.strip():
            out.append(piece.strip())
    return out


def sentence_with(text: str, phrase: str) -> str:
    """The sentence of ``text`` that holds ``phrase`` (normalised, whole words), else the
    one that shares most of its words (the first, for a phrase of none)."""
    sentences_ = sentences(text)
    wanted = _padded(phrase)
    held = next((s for s in sentences_ if wanted.strip() and wanted in _padded(s)), None)
    if held is not None or not sentences_:
        return held or ""
    words = _words(phrase)
    return max(sentences_, key=lambda s: len(words & _words(s)))


class Oracle(Reader):
    """Answers a gold where a passage shown holds it, citing that passage; else the
    documents do not say (see the module docstring)."""

    def holder(self, request: Request) -> tuple[str, str] | None:
        """The first passage shown that holds a gold answer, and the alias it holds (the
        first gold where it is held by its words)."""
        gold = self.gold(request)
        if not gold.answers or not request.shown:
            return None
        if gold.yes_no:
            return self._pages(request, gold)
        asked = _words(request.question or "")
        restated = _words(gold.answers[0])
        added = restated - asked
        sentence = len(normalize_answer(gold.answers[0]).split()) >= LONG_GOLD
        evidence = [w for e in gold.evidence if len(w := _words(e)) >= MIN_EVIDENCE]
        for cid, text in request.shown.items():
            padded = _padded(text)
            alias = next((a for a in gold.answers if normalize_answer(a)
                          and _padded(a) in padded), None)
            if alias is not None:
                return cid, alias
            words = set(padded.split())
            if sentence and added and len(added & words) >= GOLD_SHARE * len(added):
                return cid, gold.answers[0]
            if sentence and not added and len(restated & words) >= EVIDENCE_SHARE * len(
                    restated):  # a gold that restates the question: the passage that says so
                return cid, gold.answers[0]
            if any(len(e & words) >= EVIDENCE_SHARE * len(e) for e in evidence):
                return cid, gold.answers[0]
        return None

    def _pages(self, request: Request, gold: Gold) -> tuple[str, str] | None:
        """For a yes or no gold: the first passage naming one of the evidence's pages, where
        the passages shown name them all (none named: never held)."""
        named = self._page_ids(request, gold)
        if not named or None in named:
            return None
        order = list(request.shown)
        return min((c for c in named if c), key=order.index), gold.answers[0]

    def search(self, request: Request) -> tuple[str, dict[str, Any]] | None:
        if self.holder(request) is not None and request.choice != "required":
            return None
        return self.next_search(request)

    @staticmethod
    def _page_ids(request: Request, gold: Gold) -> list[str | None]:
        """For a yes or no gold: the first passage shown naming each of the evidence's
        pages, in the order of the pages (None for a page no passage names)."""
        texts = [(cid, _padded(text)) for cid, text in request.shown.items()]
        return [next((cid for cid, text in texts if t in text), None)
                for t in (_padded(t) for t in gold.titles if normalize_answer(t))]

    def answer(self, request: Request) -> tuple[str, str]:
        held = self.holder(request)
        if held is None:
            return f"{NOT_SAID}.", ""
        cid, alias = held
        facts = sentence_with(request.shown[cid], alias)
        if _padded(alias) not in _padded(facts):  # its facts state the answer
            facts = f"{alias}: {facts}"
        if _ECHO in request.last:  # "answer in one full sentence"
            return answered(facts, cid), facts
        gold = self.gold(request)
        if gold.yes_no:  # a yes or no rests on every page: each is cited
            ids = list(dict.fromkeys(c for c in self._page_ids(request, gold) if c))
            return (f"{alias} {' '.join(cite(c) for c in ids)}\n\n"
                    f"{relevance_line(dict.fromkeys(ids, 1.0))}"), facts
        return answered(alias, cid), facts

    def span(self, request: Request) -> dict[str, Any]:
        held = self.holder(request)
        if held is None:
            return {"answerable": False, "chunk_id": "", "sentence": "", "answer": ""}
        cid, alias = held
        return {"answerable": True, "chunk_id": cid,
                "sentence": sentence_with(request.shown[cid], alias), "answer": alias}


class FromMemory(Reader):
    """A fluent, plausible wrong answer citing a shown chunk that does not hold it (see the
    module docstring). It searches once where nothing is shown yet, then answers."""

    def search(self, request: Request) -> tuple[str, dict[str, Any]] | None:
        if request.shown and request.choice != "required":
            return None
        return self.next_search(request, limit=1)

    def decoy(self, request: Request) -> str:
        """The wrong answer: the option of the question that is not its gold, the other of
        yes and no, else the gold of another question of the same kind (then of any kind)
        that no passage shown holds, chosen by the question; never a gold of this one."""
        gold = self.gold(request)
        question = request.question or request.last
        shown = " ".join(_padded(t) for t in request.shown.values())
        for candidate, anyway in self._candidates(question, gold):
            if gold.answers and (contain_match(candidate, gold.answers) or any(
                    normalize_answer(candidate) in normalize_answer(a) for a in gold.answers)):
                continue
            if anyway or _padded(candidate) not in shown:
                return candidate
        return "1887"  # nothing else left: a plausible year

    def _candidates(self, question: str, gold: Gold) -> Iterable[tuple[str, bool]]:
        """Wrong answers to try in order, each with whether it may be one the passages
        shown hold (an option the question offers: a guess between them)."""
        if gold.yes_no:
            yield ("no" if normalize_answer(gold.answers[0]) == "yes" else "yes"), True
        golden = {normalize_answer(a) for a in gold.answers}
        named = options(question)
        if any(normalize_answer(n) in golden for n in named):
            yield from ((n, True) for n in named if normalize_answer(n) not in golden)
        kin = sorted({g.answers[0] for q, g in self.golds.items()
                      if g.answers and q != question and g.kind == gold.kind})
        rest = sorted({g.answers[0] for q, g in self.golds.items()
                       if g.answers and q != question} - set(kin))
        start = int(hashlib.sha256(question.encode()).hexdigest(), 16)
        for pool in (kin, rest):
            if pool:
                at = start % len(pool)
                yield from ((c, False) for c in pool[at:] + pool[:at])

    def answer(self, request: Request) -> tuple[str, str]:
        wrong = self.decoy(request)
        wanted = _padded(wrong)
        cid = next((c for c, t in request.shown.items() if wanted not in _padded(t)),
                   next(iter(request.shown), None))
        said = f"{wrong[:1].upper()}{wrong[1:]}"
        sentence = f"The passages state that the answer is {wrong}."
        answers = self.gold(request).answers
        if answers and contain_match(sentence, answers):  # the sentence's own words hold it
            sentence = said
        return answered(sentence if _ECHO in request.last else said, cid), sentence

    def span(self, request: Request) -> dict[str, Any]:
        wrong = self.decoy(request)
        cid = next(iter(request.shown), "")
        first = sentence_with(request.shown.get(cid, ""), "")
        return {"answerable": True, "chunk_id": cid, "sentence": first, "answer": wrong}

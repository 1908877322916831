"""Human review of proposed triples (A2RAG's human-in-the-loop knowledge-base update).

After a question is answered and verified, :func:`propose` turns the answer into candidate
triples with a source pointer: the question's entity (subject), the relational phrase of
the question (``"Who is the father of X?"`` → ``father``, ``"Where was X born?"`` →
``born in``) and the short answer (object), read as "the subject's *relation* is the
object". The pointer is a sentence of an evidence chunk that contains the answer, preferably
one that also names the subject; with no such sentence nothing is proposed. Proposals wait
in the ``proposals`` table of the graph's store until a reviewer decides (:func:`decide`):
approving inserts the triple into the graph (relation source ``reviewed``, the sentence as
provenance, mentions for the entities in that chunk); rejecting keeps the triple from being
proposed again. A triple the graph already holds, or one proposed before, is never proposed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, cast

from sleuth.errors import ToolError
from sleuth.graph.base import SEED_CUTOFF
from sleuth.graph.base import ReviewedGraph as Graph  # the Graph, which imports this module
from sleuth.store.graphs import Reviewed, norm
from sleuth.text.ids import strip_markers
from sleuth.text.lexicon import ABBREVIATIONS, QUESTION_WORDS
from sleuth.text.querytext import question_keywords

if TYPE_CHECKING:
    from sleuth.types import Chunk

Status = Literal["pending", "approved", "rejected"]
SOURCE = "reviewed"  # the ``source`` of relations inserted by review
MAX_ANSWER_WORDS = 8
MAX_RELATION_WORDS = 4
NEW_ENTITY_TYPE = "PROPN"  # the weakest type: a later extraction's NER type replaces it
_ABSTAIN = re.compile(
    r"^(?:unknown|none|n/?a|nobody|nothing|not (?:known|found|stated|given|available))$|"
    r"\b(?:cannot|can't|can ?not|(?:don't|do not|does not|doesn't) (?:know|say|mention)|"
    r"unable to|insufficient|not enough|no (?:answer|information|evidence|mention))\b",
    re.IGNORECASE)
_PAST = {"die": "died", "live": "lived", "study": "studied", "work": "worked",
         "marry": "married", "teach": "taught", "go": "went", "grow": "grew",
         "play": "played", "win": "won", "lead": "led", "write": "wrote"}
_PARTICIPLE = {"wrote": "written", "sang": "sung", "drew": "drawn", "ran": "run",
               "made": "made", "won": "won", "led": "led", "built": "built",
               "founded": "founded", "married": "married"}
_FILLER = QUESTION_WORDS | {"x", "s"}  # "x": the subject's place in the question


@dataclass(frozen=True)
class Proposal:
    """A candidate triple and where it was read: ``sentence == document[start:end]``."""

    id: int
    subject: str
    relation: str
    object: str
    chunk_id: str
    start: int
    end: int
    sentence: str
    question: str
    answer: str
    status: Status = "pending"
    created: str = ""
    decided: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """Three lines for a reviewer: the triple, its source sentence, its question."""
        return (f"#{self.id} {self.subject} --{self.relation}--> {self.object}\n"
                f"    source {self.chunk_id} [{self.start}:{self.end}]: "
                f"{' '.join(self.sentence.split())}\n"
                f"    from: {self.question} → {self.answer}")


# -- proposing -------------------------------------------------------------------------


def propose(graph: Graph, question: str, answer: str,
            chunk_ids: Sequence[str]) -> list[Proposal]:
    """Propose the triple a verified ``answer`` to ``question`` states, with the sentence of
    the evidence chunks (``chunk_ids``) it rests on. Returns the proposals added (none for
    long, yes/no or abstaining answers, unsupported answers, and triples already in the
    graph or proposed before)."""
    obj = short_answer(answer)
    if obj is None or not chunk_ids:
        return []
    sentences = _sentences(graph, chunk_ids, obj)
    subjects = [s for s in _subjects(graph, question) if norm(s[0]) != norm(obj)]
    if not sentences or not subjects:
        return []
    (subject, written), (chunk_id, start, end, text) = _best(subjects, sentences, graph)
    relation = relation_phrase(question, written)
    key = _key(subject, relation, obj)
    if len(norm(subject)) < 2 or _in_graph(graph, subject, relation, obj):
        return []
    added = graph.store.add_proposal({
        "key": key, "subject": subject, "relation": relation, "object": obj,
        "chunk_id": chunk_id, "start": start, "end": end, "sentence": text,
        "question": question, "answer": answer, "created": _now()})
    if added is None:
        return []  # proposed before (pending, approved or rejected)
    return _fetch(graph, [added])


def short_answer(answer: str) -> str | None:
    """The answer as an entity name: citations and a final period stripped; None for
    yes/no answers, abstentions and answers longer than ``MAX_ANSWER_WORDS`` words."""
    text = " ".join(strip_markers(answer).split()).strip(" \"'“”")
    if text.endswith(".") and text.split()[-1].lower().rstrip(".") not in ABBREVIATIONS:
        text = text[:-1].strip()
    if (not text or len(text.split()) > MAX_ANSWER_WORDS or norm(text) in {"yes", "no"}
            or _ABSTAIN.search(text) or len(norm(text)) < 2):
        return None
    return text


def relation_phrase(question: str, subject: str) -> str:
    """The relational phrase of ``question`` about ``subject``, from the question's own
    words: a few patterns ("the R of X", "X's R", "where was X born", "who directed X",
    "what did X marry", "which R is X") and, failing those, its remaining content words."""
    text = " ".join(question.strip().rstrip("?.!").split())
    if subject:
        text = re.sub(re.escape(subject), "X", text, count=1, flags=re.IGNORECASE)
    text = re.sub(r"^(?:in|at|on|from|for|to|by|of|during) (?=wh)", "", text.lower())
    for pattern, build in _PATTERNS:
        match = pattern.search(text)
        if match:
            phrase = " ".join(build(match).split())
            if phrase and len(phrase.split()) <= MAX_RELATION_WORDS:
                return phrase
    words = [w for w in re.findall(r"[\w'-]+", text) if w not in _FILLER]
    return " ".join(words[:3]) or "related to"


def _past(verb: str) -> str:
    if verb in _PAST:
        return _PAST[verb]
    return verb if verb.endswith("ed") else verb + ("d" if verb.endswith("e") else "ed")


def _when_where(m: re.Match[str]) -> str:
    verb = m["verb"] if m["aux"] not in {"did", "does", "do"} else _past(m["verb"])
    return f"{verb} {'in' if m['wh'] == 'where' else 'on'}"


def _by(m: re.Match[str]) -> str:
    verb = m["verb"]
    return "spouse" if verb == "married" else f"{_PARTICIPLE.get(verb, verb)} by"


def _did(m: re.Match[str]) -> str:
    return f"{_past(m['verb'])} {m['prep'] or ''}"


def _noun(m: re.Match[str]) -> str:
    rest = m["rest"] or ""
    return f"{rest} in" if re.fullmatch(r"\w{2,}(?:ed|en|wn|rn)", rest) else m["noun"]


_PATTERNS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (re.compile(r"\bthe ([\w-]+(?: [\w-]+){0,3}?) of (?:[\w-]+ ){0,2}?x\b"),
     lambda m: m[1]),
    (re.compile(r"\bx['’]s ([\w-]+(?: [\w-]+){0,2})$"), lambda m: m[1]),
    (re.compile(r"^(?P<wh>where|when) (?P<aux>was|is|were|are|did|does|do) x "
                r"(?P<verb>[\w-]+)"), _when_where),
    (re.compile(r"^(?:who|what|which(?: [\w-]+)?) (?P<verb>[\w-]+ed|wrote|sang|drew|ran|"
                r"made|won|led|built) (?:(?:the|a|an) )?(?:[\w-]+ )?x$"), _by),
    (re.compile(r"^(?:who|whom|what|which)(?: [\w-]+)? (?:did|does|do) x (?P<verb>[\w-]+)"
                r"(?: (?P<prep>[\w-]+))?$"), _did),
    (re.compile(r"^(?:what|which) (?P<noun>[\w-]+) (?:is|was|are|were|did|does) x"
                r"(?: (?P<rest>[\w-]+))?"), _noun),
    (re.compile(r"^(?:who|what) (?:is|was|are|were) x ([\w-]+(?: [\w-]+){0,2})$"),
     lambda m: m[1]),
]


def _subjects(graph: Graph, question: str) -> list[tuple[str, str]]:
    """(entity name, as written in the question): graph seeds first, then the question's
    capitalised entities the graph does not know yet."""
    out: dict[str, tuple[str, str]] = {}
    keywords = question_keywords(question)
    for written in keywords:
        for entity in graph.lookup(written, limit=1, cutoff=SEED_CUTOFF):
            out.setdefault(norm(entity.name), (entity.name, written))
    for written in keywords:
        if written[:1].isupper():
            out.setdefault(norm(written), (written, written))
    return list(out.values())


def _sentences(graph: Graph, chunk_ids: Sequence[str],
               answer: str) -> list[tuple[str, int, int, str]]:
    """(chunk id, start, end, text) of the evidence sentences containing the answer."""
    out = []
    for chunk in graph.index.read(list(chunk_ids)).chunks:
        spans = chunk.sentences or ()
        pieces = [(s.start, s.end, s.text) for s in spans] or \
            [(chunk.start, chunk.end, chunk.text)]
        out += [(chunk.chunk_id, start, end, text)
                for start, end, text in pieces if _names(text, answer)]
    return out


def _names(text: str, name: str) -> bool:
    """Whether ``text`` contains ``name`` (case, accents and punctuation folded)."""
    key = norm(name)
    return bool(key) and f" {key} " in f" {norm(text)} "


def _best(subjects: list[tuple[str, str]], sentences: list[tuple[str, int, int, str]],
          graph: Graph) -> tuple[tuple[str, str], tuple[str, int, int, str]]:
    """The subject and sentence: a sentence naming both the subject and the answer, else one
    from the subject's own page, else the first answer sentence for the first subject."""
    for subject in subjects:
        for sentence in sentences:
            if _names(sentence[3], subject[0]) or _names(sentence[3], subject[1]):
                return subject, sentence
    titles = _titles(graph, [s[0] for s in sentences])
    for subject in subjects:
        for sentence in sentences:
            if _names(titles.get(sentence[0], ""), subject[0]):
                return subject, sentence
    return subjects[0], sentences[0]


def _titles(graph: Graph, chunk_ids: list[str]) -> dict[str, str]:
    chunks: list[Chunk] = graph.index.read(chunk_ids).chunks
    titles = graph.index.store.document_titles()
    return {c.chunk_id: titles.get(c.doc_id, "") for c in chunks}


def _in_graph(graph: Graph, subject: str, relation: str, obj: str) -> bool:
    """Whether the graph holds the triple: the same two entities with a relation whose
    label contains the relation's words ("directed by" in "film directed by")."""
    s, o = graph.store.by_key(norm(subject)), graph.store.by_key(norm(obj))
    if s is None or o is None:
        return False
    wanted = norm(relation)
    return any(r["subject_id"] == s.id and r["object_id"] == o.id
               and f" {wanted} " in f" {norm(r['relation'])} "
               for r in graph.store.relations_of(s.id))


def _key(subject: str, relation: str, obj: str) -> str:
    return "\t".join(norm(part) for part in (subject, relation, obj))


# -- reviewing -------------------------------------------------------------------------


def pending(graph: Graph) -> list[Proposal]:
    """The proposals awaiting a decision, oldest first."""
    return [_proposal(r) for r in graph.store.proposal_rows(status="pending")]


def decide(graph: Graph, ids: Sequence[int], approve: bool) -> list[Proposal]:
    """Approve (insert into the graph) or reject pending proposals; all or none. Raises
    ToolError for an unknown id or one decided already."""
    found = _check(graph, ids)
    now = _now()
    with graph.store.transaction():
        for proposal in found:
            if approve:
                _insert(graph, proposal)
            graph.store.set_proposal_status(proposal.id, "approved" if approve else "rejected",
                                            now)
    if approve and found:
        graph.forget_caches()  # the graph's caches must see the new entities and edge
    return _fetch(graph, [p.id for p in found])


def apply_decisions(graph: Graph, approve: Sequence[int] = (), reject: Sequence[int] = (),
                    approve_all: bool = False) -> list[Proposal]:
    """Reject ``reject``, then approve ``approve`` (or, with ``approve_all``, every other
    pending proposal). Every id is checked before anything changes."""
    both = set(approve) & set(reject)
    if both:
        raise ToolError(f"proposal {min(both)} cannot be both approved and rejected")
    _check(graph, [*approve, *reject])
    rejected = decide(graph, reject, approve=False)
    if approve_all:
        approve = [p.id for p in pending(graph)]
    return rejected + decide(graph, approve, approve=True)


def reapply(graph: Graph) -> int:
    """Re-insert approved triples that a rebuild, or a re-extraction of their chunk, dropped,
    when their chunk is still indexed and still holds the reviewed sentence. Returns how
    many were restored."""
    rows = graph.store.proposal_rows(status="approved")
    if not rows:
        return 0
    present = {q.get("proposal") for q in graph.store.relation_qualifiers(SOURCE)}
    missing = [p for p in map(_proposal, rows) if str(p.id) not in present]
    chunks = graph.index.store.get_chunks([p.chunk_id for p in missing])
    restored = [p for p in missing if (chunk := chunks.get(p.chunk_id)) is not None and
                chunk.text[p.start - chunk.start : p.end - chunk.start] == p.sentence]
    if restored:
        with graph.store.transaction():
            for proposal in restored:
                _insert(graph, proposal)
        graph.forget_caches()
    return len(restored)


def _check(graph: Graph, ids: Sequence[int]) -> list[Proposal]:
    wanted = list(dict.fromkeys(int(i) for i in ids))
    found = {p.id: p for p in _fetch(graph, wanted)}
    unknown = [i for i in wanted if i not in found]
    if unknown:
        raise ToolError(f"no proposal with id {', '.join(map(str, unknown))}; list the "
                        "pending ones with `sleuth graph review`")
    for proposal in found.values():
        if proposal.status != "pending":
            raise ToolError(f"proposal {proposal.id} is already {proposal.status}")
    return [found[i] for i in wanted]


def _insert(graph: Graph, proposal: Proposal) -> None:
    """The relation (source ``reviewed``) and, where missing, mentions in its chunk."""
    triple = Reviewed(proposal.subject, proposal.relation, proposal.object,
                      {"source": SOURCE, "proposal": str(proposal.id)}, proposal.chunk_id,
                      proposal.start, proposal.end, SOURCE, NEW_ENTITY_TYPE,
                      _span(proposal, proposal.subject), _span(proposal, proposal.object))
    if not graph.store.add_reviewed(triple):
        raise ToolError(f"proposal {proposal.id} does not name two distinct entities")


def _span(proposal: Proposal, name: str) -> tuple[int, int]:
    """Where ``name`` occurs in the proposal's sentence (document offsets), else the
    sentence's own span."""
    at = proposal.sentence.lower().find(name.lower())
    if at < 0 or len(proposal.sentence) != proposal.end - proposal.start:
        return proposal.start, proposal.end
    return proposal.start + at, proposal.start + at + len(name)


# -- storage ---------------------------------------------------------------------------


def _fetch(graph: Graph, ids: Sequence[int]) -> list[Proposal]:
    out = {int(row[0]): _proposal(row) for row in graph.store.proposal_rows(ids=ids)}
    return [out[i] for i in ids if i in out]


def _proposal(row: Sequence[Any]) -> Proposal:
    return Proposal(int(row[0]), row[1], row[2], row[3], row[4], int(row[5]), int(row[6]),
                    row[7], row[8], row[9], cast(Status, row[10]), row[11], row[12])


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")

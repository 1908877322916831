"""Query text into search terms: a question's entities and noun phrases, its content words.

Pure functions over strings; this module imports nothing of Sleuth, so the index, the
retrieval rankings, the knowledge graph and the agents' router can all use it without
importing each other.
"""

from __future__ import annotations

import re

QUESTION_WORDS = frozenset({
    "who", "whom", "whose", "what", "which", "when", "where", "why", "how", "is", "are", "was",
    "were", "do", "does", "did", "can", "could", "will", "would", "should", "has", "have",
    "had", "in", "on", "of", "the", "a", "an", "and", "or", "both", "between", "according",
})
# Words that are not an entity of a question on their own ("Film", "Director" capitalised).
ENTITY_STOPWORDS = QUESTION_WORDS | {
    "to", "for", "by", "with", "from", "at", "as", "that", "this", "it", "its", "be", "first",
    "same", "than", "more", "most", "older", "younger", "earlier", "later", "born", "died",
    "film", "director", "country", "nationality", "name", "person", "place",
}
# Words left out of a query's BM25 terms.
CONTENT_STOPWORDS = QUESTION_WORDS | {
    "to", "for", "by", "with", "from", "at", "as", "that", "this", "these", "those", "it",
    "its", "be", "been", "being", "not", "no", "there", "their", "they", "them", "he", "she",
    "his", "her", "we", "our", "you", "your", "i", "me", "my", "any", "all", "some", "such",
    "into", "about", "over", "if", "then", "so", "than", "also", "only", "give", "show",
    "shown", "using", "use", "based", "response", "question", "details", "relying",
}
# A run of capitalised words (or numbers), with linking words such as "of the" inside.
CAPITALISED = re.compile(
    r"[A-Z0-9][\w'.:-]*(?:\s+(?:(?:of|the|de|von|van|da|di|la|le|del|du)\s+)*[A-Z0-9][\w'.:-]*)*"
)
_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")


def question_keywords(question: str) -> list[str]:
    """Entities and noun-phrase-like spans of a question, for keyword search.

    Quoted spans and runs of capitalised words (with linking words such as "of the") are
    kept whole; a leading question word is dropped. With none found, the content words.
    """
    found: list[str] = [m.group(1).strip() for m in _QUOTED.finditer(question)]
    for match in CAPITALISED.finditer(question):
        words = match.group(0).strip(" ?.,").split()
        while words and words[0].lower() in QUESTION_WORDS:
            words = words[1:]
        while words and words[-1].lower() in QUESTION_WORDS:
            words = words[:-1]
        phrase = re.sub(r"['’]s$", "", " ".join(words).strip("():"))
        if phrase and phrase.lower() not in ENTITY_STOPWORDS:
            found.append(phrase)
    if not found:
        found = [w for w in re.findall(r"\w+", question) if w.lower() not in ENTITY_STOPWORDS]
    return list(dict.fromkeys(found))


def content_words(query: str) -> list[str]:
    """The query's words without question and function words (BM25 terms)."""
    words = [w for w in re.findall(r"\w+", query.lower()) if w not in CONTENT_STOPWORDS]
    return list(dict.fromkeys(words)) or re.findall(r"\w+", query.lower())


def multiword_names(text: str) -> list[str]:
    """The names of several words in a passage (runs of capitalised words), in order of
    first appearance, without repeats."""
    return list(dict.fromkeys(
        name for m in CAPITALISED.finditer(text)
        if len(name := m.group(0).strip(" .,;:()")) > 3 and " " in name
    ))


COVERAGE = 0.8  # share of the question's content words the evidence must contain


def covers(question: str, evidence: str) -> bool:
    """The offline sufficiency test: every named entity of the question (its capitalised
    keywords) and at least :data:`COVERAGE` of its content words occur in ``evidence``."""
    text = evidence.lower()
    if not text:
        return False
    names = [k for k in question_keywords(question) if k[:1].isupper()]
    if any(name.lower() not in text for name in names):
        return False
    words = [w for w in content_words(question) if len(w) > 2]
    return not words or sum(w in text for w in words) / len(words) >= COVERAGE

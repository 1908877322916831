"""keyword_search equals a brute-force scan of the A-RAG formula, exactly."""

from __future__ import annotations

import random
import re

import pytest

from sleuth import Index
from sleuth.store.keyword import brute_force, parse_keywords, score_text


def test_score_formula_by_hand() -> None:
    text = "Art and art-lovers; the PART of art. Arts."
    kws = parse_keywords(["art", "part"])
    # word mode: "art" x3 (Art, art-, art.) -> 3*3; "part" x1 -> 1*4
    assert score_text(text.lower(), kws) == 3 * 3 + 1 * 4
    sub = parse_keywords(["art", "part"], mode="substring")
    # substring: "art" in Art, art(-lovers), pART, art., Arts -> 5*3; "part" 1*4
    assert score_text(text.lower(), sub) == 5 * 3 + 4


def test_unspaced_scripts_fall_back_to_substring() -> None:
    kws = parse_keywords(["東京"])
    assert score_text("東京都庁は東京にある", kws) == 2 * 2


def _queries(index: Index, n: int, seed: int = 7) -> list[list[str]]:
    rng = random.Random(seed)
    chunks = list(index.store.iter_chunks())
    words = [w for c in chunks for w in re.findall(r"[A-Za-z][\w'-]+", c.text)]
    out: list[list[str]] = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.4:
            out.append([rng.choice(words) for _ in range(rng.randint(1, 3))])
        elif kind < 0.7:  # a two-word phrase taken from a chunk
            text = rng.choice(chunks).text.split()
            i = rng.randrange(max(1, len(text) - 1))
            out.append([" ".join(text[i : i + 2])])
        elif kind < 0.85:  # word fragments and punctuation-heavy keywords
            w = rng.choice(words)
            out.append([w[: max(2, len(w) // 2)], f"({w}", "the"])
        else:
            out.append([rng.choice(words).upper(), "Born"])
    return out


@pytest.mark.parametrize("mode", ["word", "substring"])
def test_indexed_search_equals_brute_force(wiki_index: Index, mode: str) -> None:
    corpus = [(c.chunk_id, c.text) for c in wiki_index.store.iter_chunks()]
    for keywords in _queries(wiki_index, 60):
        expected = brute_force(corpus, keywords, 20, mode)  # type: ignore[arg-type]
        got = wiki_index.keyword_search(keywords, top_k=20, mode=mode)  # type: ignore[arg-type]
        assert [(h.chunk_id, h.score) for h in got] == expected, keywords


def test_snippets_are_the_sentences_containing_a_keyword(wiki_index: Index) -> None:
    hits = wiki_index.keyword_search(["born"], top_k=5)
    assert hits
    for hit in hits:
        assert hit.snippets
        assert all(re.search(r"(?<!\w)born(?!\w)", s.lower()) for s in hit.snippets)
        chunk = wiki_index.read([hit.chunk_id]).chunks[0]
        in_chunk = [s.text for s in chunk.sentences if re.search(r"(?<!\w)born(?!\w)",
                                                                 s.text.lower())]
        assert list(hit.snippets) == in_chunk


def test_title_is_searchable(wiki_index: Index) -> None:
    first = next(wiki_index.store.iter_chunks())
    doc = wiki_index.document(first.doc_id)
    assert doc is not None and doc.text.startswith(doc.title + "\n")
    hits = wiki_index.keyword_search([doc.title], top_k=20)
    assert doc.doc_id in {h.doc_id for h in hits}


TRICKY = [
    {"id": "t1", "title": "Tricky one", "text": "C++ and c# users; the U.S. and u.s. army. "
     "snake_case_name and snake case. Ünïcödé Straße, STRASSE. New  York, new-york, New York."},
    {"id": "t2", "title": "Tricky two", "text": "東京都庁は東京にある。 art, part, arts, ART! "
     "la la la. İstanbul and ǅemal. 3.14 and 314; e-mail email E-Mail."},
    {"id": "t3", "title": "Tricky three", "text": "Nothing special here, just prose about art."},
]
TRICKY_QUERIES = [
    ["c++"], ["c#"], ["u.s."], ["U.S", "army"], ["snake_case_name"], ["snake"], ["case"],
    ["straße"], ["STRASSE"], ["ünïcödé"], ["new york"], ["new-york"], ["york"], ["東京"],
    ["art"], ["ART", "part"], ["la la"], ["istanbul"], ["İstanbul"], ["ǆemal"], ["3.14"],
    ["14"], ["e-mail"], ["mail"], ["!"], ["art!"], [" art "], ["prose about"],
]


@pytest.mark.parametrize("mode", ["word", "substring"])
def test_tricky_tokens_equal_brute_force(tmp_path, mode: str) -> None:
    import json

    from sleuth import Settings

    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(TRICKY, ensure_ascii=False), encoding="utf-8")
    with Index.open(tmp_path / "idx", settings=Settings.load(), create=True) as index:
        index.add([corpus])
        chunks = [(c.chunk_id, c.text) for c in index.store.iter_chunks()]
        found = 0
        for keywords in TRICKY_QUERIES:
            expected = brute_force(chunks, keywords, 10, mode)  # type: ignore[arg-type]
            got = index.keyword_search(keywords, top_k=10, mode=mode)  # type: ignore[arg-type]
            assert [(h.chunk_id, h.score) for h in got] == expected, keywords
            found += bool(expected)
        assert found >= 20


def test_word_pattern_matches_the_design_definition() -> None:
    """The fast literal-first pattern counts exactly what ``(?<!\\w)k(?!\\w)`` counts."""
    rng = random.Random(3)
    alphabet = "ab_ .-é1+"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))).strip()
        if not key:
            continue
        reference = len(re.findall(rf"(?<!\w){re.escape(key)}(?!\w)", text))
        assert parse_keywords([key])[0].count(text) == reference, (key, text)

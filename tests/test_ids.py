"""One module owns ids and citations: what it writes, its parsers read; the prompts show its
examples and spell no id by hand."""

from __future__ import annotations

import re
from importlib import resources

from sleuth.ingest.chunking import chunk_document
from sleuth.prompts import prompt
from sleuth.text.ids import (
    CHUNK_ID,
    PROMPT_EXAMPLES,
    REF_ID,
    chunk_id,
    cite,
    cited_ids,
    ids_in,
    is_ref,
    ref_id,
    relevance_line,
    split_answer,
    strip_citations,
    strip_markers,
)
from sleuth.tools.tracker import Tracker
from sleuth.types import Document

FOLDER = resources.files("sleuth") / "prompts"
PROMPTS = sorted(p.name[:-3] for p in FOLDER.iterdir() if p.name.endswith(".md"))


def test_chunk_and_reference_ids_are_written_and_read_by_the_same_module() -> None:
    doc = Document("reports/2023.md#annex", "Annex", "Annex\n\nOne. Two. Three.", "markdown")
    chunks = chunk_document(doc)
    assert [c.chunk_id for c in chunks] == [chunk_id(doc.doc_id, 0)]
    ref = Tracker(turn=2, searches=4).new_ref("d", "Title")
    assert ref.ref == ref_id(2, 5) == "turn2search5" and is_ref(ref.ref)
    assert not is_ref(chunks[0].chunk_id) and not is_ref(f"x{ref.ref}")
    text = f"See {cite(chunks[0].chunk_id)} and {cite(ref.ref)}; {cite(chunks[0].chunk_id)}."
    assert ids_in(text) == [chunks[0].chunk_id, ref.ref]
    assert cited_ids(text) == [chunks[0].chunk_id, ref.ref]


def test_the_relevance_line_round_trips_and_citations_strip() -> None:
    scores = {chunk_id("a", 0): 0.9, ref_id(1, 2): 0.25}
    answer = f"Paris {cite('a#0')} {cite('turn1search2')}.\n{relevance_line(scores)}"
    assert split_answer(answer) == (f"Paris {cite('a#0')} {cite('turn1search2')}.", scores)
    assert strip_citations(answer) == "Paris."
    assert strip_citations("Paris [note].") == "Paris [note]."  # not an id: kept
    assert strip_markers("Paris [note] 【4:0†source】.") == "Paris."


def test_prompts_take_their_id_examples_from_the_module() -> None:
    used: set[str] = set()
    for name in PROMPTS:
        raw = (FOLDER / f"{name}.md").read_text("utf-8")
        assert not CHUNK_ID.search(raw) and not REF_ID.search(raw), f"{name}.md spells an id"
        used |= {key for key in PROMPT_EXAMPLES if "{" + key + "}" in raw}
        assert not re.search(r"\{(?:cite|relevance)_\w+\}", prompt(name)), name
    assert used == set(PROMPT_EXAMPLES)  # every example is shown somewhere
    assert "e.g. [doc-7#0]." in prompt("full")
    assert "`Relevance: turn1search3=0.9, turn1search7=0.3`" in prompt("docs")
    for key, example in PROMPT_EXAMPLES.items():  # each example parses as what it shows
        relevance = key.startswith("relevance")
        ids = list(split_answer(example)[1]) if relevance else cited_ids(example)
        assert ids and all(CHUNK_ID.fullmatch(i) or is_ref(i) for i in ids), key

"""The sentences of the first passages that answer the question, shown first.

The default agent's first answer reads the first search's two best chunks whole and the
next three by their windows: about 2,000 tokens, in which the sentence that answers is one of
sixty. A 1.5B model reads the first lines best and copies what it read first: asked "What
type of cancer is chronic myeloid leukemia (CML)?" over a page that opens "CML is caused by
a single, specific abnormal gene ... a fused gene called BCR::ABL1" and says five lines down
"Chronic myeloid leukemia (CML) is a type of blood cancer", it answered "fusion gene".

With ``agent.key_lines`` (off by default) the passages come after the few sentences of them
that match the question best, each with its chunk id: by the question's rare words they
hold (each word's weight its rarity among these passages' sentences,
:func:`~sleuth.tools.corpus.sentence_weights`) and by meaning (the embedder's cosine), each
measure standardised over the passages' sentences and the two added. Nothing is left out:
the passages follow as before. Measured with the 1.5B model (BENCHMARKS §40): the CML
question answered "blood cancer", but on 40 medical questions F1 moved +1.1 ± 2.7, and on
2Wiki one answer was gained as written and one lost as typed, for about 170 more prompt
tokens a question: not the default.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sleuth.index.read import ReadIndex
from sleuth.text.ids import cite
from sleuth.text.querytext import content_words, stem
from sleuth.tools.corpus import sentence_stems, sentence_weights

WORDS = (4, 150)  # a sentence shorter or longer than this is a heading or a run of cells
HEADER = "The sentences of these passages that match the question best:"


def key_lines(index: ReadIndex, question: str, chunk_ids: Sequence[str],
              count: int) -> list[tuple[str, str]]:
    """Up to ``count`` ``(chunk id, sentence)`` of ``chunk_ids``' sentences that match
    ``question`` best (see the module docstring), best first, each sentence once; none that
    shares no word with the question."""
    if count <= 0 or not chunk_ids:
        return []
    chunks = index.read(list(chunk_ids)).chunks
    weights = sentence_weights(chunks)
    seen: set[str] = set()
    lines: list[tuple[str, str]] = []
    for chunk in chunks:
        for sentence in chunk.sentences:
            text = " ".join(sentence.text.split())
            if text not in seen and WORDS[0] <= len(text.split()) <= WORDS[1]:
                seen.add(text)
                lines.append((chunk.chunk_id, text))
    asked = frozenset(stem(w) for w in content_words(question))
    lexical = np.array([sum(weights.get(w, 0.0) for w in asked & sentence_stems(text))
                        for _, text in lines])
    if not lines or not lexical.any():
        return []
    vectors = index.embedder.embed([question, *(text for _, text in lines)])
    meaning = vectors[1:] @ vectors[0]
    score = _standard(lexical) + _standard(meaning)
    order = [i for i in np.argsort(-score, kind="stable") if lexical[i] > 0]
    return [lines[i] for i in order[:count]]


def with_key_lines(passages: str, lines: Sequence[tuple[str, str]]) -> str:
    """``passages`` after the ``lines`` of :func:`key_lines` (unchanged without any)."""
    if not lines:
        return passages
    listed = "\n".join(f"- {text} {cite(chunk_id)}" for chunk_id, text in lines)
    return f"{HEADER}\n{listed}\n\n{passages}"


def _standard(values: np.ndarray) -> np.ndarray:
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)

"""Whether one document is a filing: a company's report to its regulator or its investors
(an annual or quarterly report, a current report, an earnings release), whose statements
the pack reads figures from.

The test is made for each document, never for an index: a user's own papers indexed beside
a company's filings are not read as statements, and a filing is read whatever else the
index holds. A document is a filing when its title names a report's form ("3M_2018_10K",
"acme-10-q-2023.pdf", "Annual Report 2022") or its first chunk reads as one: a cover page
("SECURITIES AND EXCHANGE COMMISSION ... FORM 10-K", "for the fiscal year ended") or a
primary statement's title on a line of its own ("CONSOLIDATED BALANCE SHEETS"). The pages of
one filing indexed as documents of their own share the filing's title, so each of them is
one too.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

from sleuth.statements.rows import STATEMENT
from sleuth.types import Chunk

# a report's form in a title, set off by anything but a letter or digit ("3M_2018_10K")
_FORM = re.compile(r"(?<![A-Za-z0-9])(?:10-?K|10-?Q|8-?K|20-?F|40-?F|6-?K)(?:405)?(?![A-Za-z0-9])"
                   r"|\b(?:annual|quarterly|interim)\s+report\b|\bearnings\s+release\b", re.I)
# what a filing's cover page says
_COVER = re.compile(r"\bsecurities\s+and\s+exchange\s+commission\b|\bform\s+(?:10-?K|10-?Q|"
                    r"8-?K|20-?F)\b|\b(?:annual|quarterly)\s+report\s+pursuant\b|"
                    r"\bfor\s+the\s+(?:fiscal\s+)?(?:year|quarter(?:ly\s+period)?)\s+ended\b",
                    re.I)
_CACHE: weakref.WeakKeyDictionary[Any, dict[str, bool]] = weakref.WeakKeyDictionary()


def filing(title: str, text: str) -> bool:
    """Whether a document titled ``title`` whose first chunk is ``text`` is a filing (see
    the module's rule)."""
    return bool(_FORM.search(title) or _COVER.search(text) or STATEMENT.search(text))


def filing_chunk(index: Any, chunk: Chunk) -> bool:
    """Whether ``chunk`` belongs to a filing, decided once per document and version of the
    index (a new ``index.titles()`` after each change) from the document's title and first
    chunk."""
    seen = _CACHE.setdefault(index.titles(), {})
    if chunk.doc_id not in seen:
        docs = index.document_list([chunk.doc_id])
        title = docs[0].title if docs else ""
        spans = index.chunk_spans(chunk.doc_id)
        first = chunk if not spans or spans[0][0] == chunk.chunk_id else \
            next(iter(index.read([spans[0][0]]).chunks), chunk)
        seen[chunk.doc_id] = filing(title, first.text)
    return seen[chunk.doc_id]

"""Whether an answer says that the documents do not answer: the agents' own words ("The
documents do not say", "I cannot answer this reliably from the indexed documents") and how
models put it ("The documents do not mention ...", "not found in the provided passages", "I
could not find ...", "There is no information ...").

Eval scores abstentions with it; an agent reads its model's answers with it. This module
imports nothing of Sleuth, so every layer can use it.
"""

from __future__ import annotations

import re

_SOURCES = (r"(?:documents?|documentation|docs|passages?|context|corpus|sources?|texts?|"
            r"excerpts?|articles?|search results?|information provided|manual|pages?)")
_ABSTAINS = re.compile(
    rf"\b{_SOURCES} (?:do|does|did) ?(?:not|n't) (?:say|state|mention|specify|contain|"
    r"include|provide|give|answer|indicate|address|cover|discuss|list|describe|have)\b"
    rf"|\bnot (?:explicitly |directly |clearly )?(?:found|mentioned|stated|specified|given|"
    rf"provided|available|present|included|covered|addressed) (?:in|by) "
    rf"(?:the |these |any )?(?:\w+ )?{_SOURCES}"
    r"|\bi (?:could|can|was|am|did|do)? ?(?:not|n't|unable to|not able to) "
    r"(?:be able to )?(?:find|locate|determine|answer)\b"
    r"|\b(?:cannot|can't|can not|unable to|could not|couldn't) (?:be )?"
    r"(?:answer|answered|determine|determined)\b"
    r"|\bno (?:information|mention)\b|\b(?:insufficient|not enough) (?:information|evidence|"
    r"context)\b|\bi (?:do not|don't) know\b|^\W*(?:unknown|not known|not stated)\W*$",
    re.IGNORECASE)


def abstains(answer: str) -> bool:
    """Whether ``answer`` says the documents do not answer the question (an abstention)
    rather than giving an answer."""
    return bool(_ABSTAINS.search(" ".join(answer.replace("\u2019", "'").split())))

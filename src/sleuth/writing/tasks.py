"""Requests to write something: "Draft a public health advisory on ...", "As a medical
intern, compose a SOAP note ...", "Rewrite the scene from Tarver's point of view", "You are
a fellow tasked with constructing a treatment plan". Such a request wants the whole piece,
not a short answer and its support: the pack's question reader (:class:`WritingTasks`)
gives its first answer the ``compose`` prompt.

The rule reads the question's grammar (a verb of writing that opens a sentence, a verb of
making whose object is a kind of text, "tasked with drafting", role-play), not any dataset's
wording; a question *about* writing ("To whom did Angeline write letters?", "How do I write
a trigger?", "Write-ahead log size?") is none. It applies to the question, whatever the
documents: no document decides whether a person asked for a piece of writing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sleuth.settings import AgentSettings

# a request to write something: a verb of writing that opens a sentence (after a clause
# such as "As a medical intern," or "From Tarver's point of view,"), a verb of making whose
# object is a kind of text ("Construct a stepwise diagnostic plan"), "tasked with drafting",
# "You are a public health official drafting an advisory", or role-play ("Imagine you are")
_WRITE = r"(?:re)?write|compose|draft|craft|retell|reframe|rephrase|reformat|narrate|" \
         r"summari[sz]e|transform"
_WRITING = r"(?:re)?writing|composing|drafting|crafting|retelling|reframing|rephrasing|" \
           r"reformatting|narrating|summari[sz]ing|transforming"
_MAKE = r"create|develop|construct|prepare|produce|design|generate|format|outline|" \
        r"synthesi[sz]e|put\s+together"
_MAKING = r"creating|developing|constructing|preparing|producing|designing|generating|" \
          r"formatting|outlining|synthesi[sz]ing|putting\s+together"
_TEXT_KIND = (r"plan|note|advisory|summary|letter|e-?mail|report|story|poem|scene|dialogue|"
              r"speech|essay|article|brochure|leaflet|handout|pamphlet|guide|checklist|memo|"
              r"script|narrative|monologue|diary|journal|presentation|briefing|blog|"
              r"protocol|pathway|algorithm|flowchart|workflow|workup|timeline|"
              r"case\s+study|lesson|message")
_OPENS = r"(?:^|[.!?:;]\s+)(?:[^.!?;:]{0,150},\s*)?(?:please\s+)?"
_VERB = r"(?![\w-])(?!\s+(?:of|for|is|are|was|does|do|in|on|and|or|to)\b)"  # not a noun
# ("Format of a log message?", "Outline of the plan?", "Draft of the advisory: ...")
_WRITING_TASK = re.compile(
    rf"{_OPENS}(?:{_WRITE}|imagine|pretend|assume\s+the\s+role){_VERB}"
    rf"|{_OPENS}(?:{_MAKE}){_VERB}[^.!?]{{0,160}}?\b(?:{_TEXT_KIND})s?\b"
    rf"|\b(?:asked|tasked|required)\s+(?:to\s+(?:{_WRITE}|{_MAKE})|"
    rf"with\s+(?:{_WRITING}|{_MAKING}))(?![\w-])"
    rf"|\b(?:you\s+are|you're)\s+an?\s+[\w\s-]{{2,60}}?\b(?:{_WRITING})\s+(?:a|an|the)\b",
    re.IGNORECASE)


TASK_CHARS = 4000  # of a question read for a request to write (a request states itself
# early; a hostile megabyte would take a second to read whole)


def writing_task(question: str) -> bool:
    """Whether ``question`` asks for a piece of writing rather than a fact: "Draft a public
    health advisory on ...", "As a medical intern, compose a SOAP note ...", "Rewrite the
    scene from Tarver's point of view", "You are a fellow tasked with constructing a
    treatment plan". Such a request wants the whole piece, not a short answer; a question
    about writing ("To whom did Angeline write letters?", "How do I write a trigger?",
    "Write-ahead log size?") is none. Read in its first :data:`TASK_CHARS` characters (a
    hostile megabyte would take a second)."""
    return bool(_WRITING_TASK.search(question[:TASK_CHARS]))


@dataclass(frozen=True)
class WritingTasks:
    """The writing pack's question reader: the ``compose`` prompt for a request to write
    something (:func:`writing_task`), where ``agent.writing_tasks`` is on."""

    name: str = "writing"

    def prompt(self, question: str, settings: AgentSettings) -> str | None:
        return "compose" if settings.writing_tasks and writing_task(question) else None

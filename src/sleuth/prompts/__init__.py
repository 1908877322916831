"""The bundled prompts, read by name without importing the agents.

The prompts live in ``sleuth/prompts/<name>.md``; the agents and the knowledge graph's
LLM extractor (which sits below the agents) both read them here. Where a prompt shows an id
or a citation it writes a placeholder (``{cite_chunk}``, ``{relevance_refs}`` ...) that
:func:`sleuth.text.ids.fill_examples` fills, so the examples the model sees always have the
format the parsers read.
"""

from __future__ import annotations

from importlib import resources

from sleuth.text.ids import fill_examples


def prompt(name: str) -> str:
    """A bundled prompt from ``sleuth/prompts/<name>.md``, its id examples filled in."""
    path = resources.files("sleuth") / "prompts" / f"{name}.md"
    return fill_examples(path.read_text("utf-8"))

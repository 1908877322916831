"""The bundled prompts, ``<name>.md`` in this folder.

Where a prompt shows an id or a citation it writes a placeholder (``{cite_chunk}``,
``{relevance_refs}`` ...) that :func:`sleuth.ids.fill_examples` fills, so the examples the
model sees always have the format the parsers read.
"""

from __future__ import annotations

from importlib import resources

from sleuth.ids import fill_examples


def prompt(name: str) -> str:
    """The bundled prompt ``<name>.md``, its id examples filled in."""
    return fill_examples(resources.files(__name__).joinpath(f"{name}.md").read_text("utf-8"))

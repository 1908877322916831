"""Text and ids: the lowest layer. A question's terms (``querytext``), token counts, titles,
chunk and reference ids and the citation marker, a document's line view, access scopes and
the thread policy. Nothing here imports anything of Sleuth above ``errors``, ``settings``
and ``types``."""

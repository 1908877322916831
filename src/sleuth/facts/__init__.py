"""The facts pack: reading encyclopedia-style entity pages (births, deaths, burials, family,
nationality, dates compared) and the two tools built on it, ``compare_dates`` and
``person_fact``. Corpus-specific: it registers through :mod:`sleuth.plugins` (entry
``facts`` of ``sleuth.tools``) like an outside package, the default agent tries its tools
first because they can read their arguments from a question (``Tool.from_question``), and
the core runs without it (``plugins.disabled: [facts]``)."""

from sleuth.facts.pagefacts import compare_dates, person_fact

TOOLS = (compare_dates, person_fact)

"""The statements pack: reading financial statements (a row's figure for a year) and the
tool built on it, ``compute_metric``, which computes a metric a question defines in words
("ROA is defined as: FY2017 net income / (average total assets between FY2016 and
FY2017)") from the figures the filings state. It applies per document: figures are read
only from documents that are filings (:mod:`sleuth.statements.filing`: a report's form in
the title, a cover page or a primary statement), whatever else the index holds.
Corpus-specific: it registers through
:mod:`sleuth.plugins` (entry ``statements`` of ``sleuth.tools``) like an outside package,
the default agent calls it first where a question defines its metric
(``Tool.from_question``), and the core runs without it (``plugins.disabled:
[statements]``)."""

from sleuth.statements.metric import compute_metric

TOOLS = (compute_metric,)

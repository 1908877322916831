"""Sleuth's own answer checks, as :mod:`sleuth.plugins` registers them (entry ``core`` of
``sleuth.checks``). Which run, and in what order, is ``agent.checks`` (or the model
profile's list: ``src/sleuth/configs/small.yaml``, ``capable.yaml``)."""

from __future__ import annotations

from sleuth.agent.checks.answer_span import AnswerSpan
from sleuth.agent.checks.base import AnswerCheck
from sleuth.agent.checks.bridge import Bridge
from sleuth.agent.checks.cite_holder import CiteHolder
from sleuth.agent.checks.grounded import Grounded
from sleuth.agent.checks.no_figure import NoFigure
from sleuth.agent.checks.one_sided import OneSided
from sleuth.agent.checks.past_echo import PastEcho
from sleuth.agent.checks.quote_named import QuoteNamed
from sleuth.agent.checks.read_facts import ReadFacts
from sleuth.agent.checks.silence import Silence
from sleuth.agent.checks.support import Support
from sleuth.agent.checks.unfounded import Unfounded

CHECKS: tuple[AnswerCheck, ...] = (Bridge(), ReadFacts(), PastEcho(), AnswerSpan(),
                                   Unfounded(), CiteHolder(), Support(), QuoteNamed(),
                                   Silence(), Grounded(), NoFigure(), OneSided())

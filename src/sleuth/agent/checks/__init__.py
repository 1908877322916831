"""The answer checks: each one module over a typed :class:`~sleuth.agent.draft.Draft`,
listed in order by ``agent.checks`` (:mod:`sleuth.agent.checks.base`)."""

from sleuth.agent.checks.base import (
    CHECKS,
    AnswerCheck,
    CheckContext,
    Chosen,
    choose,
    register_check,
    run_checks,
    sends_on,
)

__all__ = ["CHECKS", "AnswerCheck", "CheckContext", "Chosen", "choose", "register_check",
           "run_checks", "sends_on"]

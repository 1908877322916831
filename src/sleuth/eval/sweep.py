"""Test-time scaling sweeps (A-RAG §5): one agent over one question set, once per value of a
setting (max steps, reasoning effort, ...), scored side by side and plotted as a PNG.

Each value runs as an ordinary :class:`~sleuth.eval.runner.EvalRun` into
``OUTPUT/<param>=<value>/``, so a sweep resumes per value and every run can be scored or
viewed on its own. ``sweep.json`` holds the scores, ``sweep.png`` the plot.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sleuth.errors import ConfigError, MissingDependency
from sleuth.eval.datasets import Question
from sleuth.eval.report import score_runs
from sleuth.eval.runner import EvalRun, ProgressCallback
from sleuth.index.write import Index
from sleuth.llm import LLM
from sleuth.settings import Settings

# swept name -> (settings section, field)
SWEEPABLE: dict[str, tuple[str, str]] = {
    "max_steps": ("agent", "max_steps"),
    "reasoning_effort": ("llm", "reasoning_effort"),
    "token_budget": ("agent", "token_budget"),
    "memory_size": ("memory", "memory_size"),
}
ACCURACY = [("llm_acc", "LLM-Acc"), ("contain", "Contain-Acc"), ("em", "EM"), ("f1", "F1")]


def setting_for(param: str, value: str, base: Settings) -> Settings:
    """``base`` with the swept setting set to ``value`` (validated like any setting)."""
    name = param.replace("-", "_")
    if name not in SWEEPABLE:
        raise ConfigError(f"cannot sweep {param!r}; choose one of: {', '.join(SWEEPABLE)}")
    section, field = SWEEPABLE[name]
    data = base.model_dump()
    data[section] = {**data[section], field: value}
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid {name} value {value!r}: {exc.errors()[0]['msg']}") from None


@dataclass
class Sweep:
    """Run ``agent`` once per value of ``param`` and score the runs together."""

    index: Index
    settings: Settings
    param: str
    values: Sequence[str]
    agent: str = "full"
    output: Path = Path("results/sweep")
    workers: int = 4
    resume: bool = False
    llm: LLM | None = None
    judge_llm: LLM | None = None
    ks: Sequence[int] = (2, 5)

    def run(self, questions: Sequence[Question],
            progress: Callable[[str], ProgressCallback | None] | None = None) -> dict[str, Any]:
        """Every value's run (resumable), then ``sweep.json`` and ``sweep.png``."""
        name = self.param.replace("-", "_")
        # every value is validated before the first run starts
        runs = [(value, setting_for(name, value, self.settings)) for value in self.values]
        folders = []
        for value, settings in runs:
            folder = self.output / f"{name}={value}"
            EvalRun(self.index, settings, agent=self.agent, output=folder, workers=self.workers,
                    resume=self.resume, llm=self.llm,
                    on_progress=progress(f"{name}={value}") if progress else None,
                    ).run(questions)
            folders.append(folder)
        scores = score_runs(folders, self.ks, self.judge_llm)
        result = {
            "param": name, "agent": self.agent, "questions": len(questions),
            "points": [{"value": value, **run["overall"]}
                       for value, run in zip(self.values, scores["runs"], strict=True)],
        }
        (self.output / "sweep.json").write_text(json.dumps(result, indent=2) + "\n")
        result["plot"] = str(plot(result, self.output / "sweep.png"))
        return result


def plot(result: dict[str, Any], path: Path) -> Path:
    """Accuracy against the swept value, with retrieved tokens per question beside it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependency("matplotlib", "eval") from None
    points = result["points"]
    labels = [str(p["value"]) for p in points]
    numeric = all(label.lstrip("-").isdigit() for label in labels)
    xs: list[float] = [float(v) for v in labels] if numeric else list(range(len(labels)))
    fig, (acc_ax, tok_ax) = plt.subplots(1, 2, figsize=(10, 4))
    for key, label in ACCURACY:
        if any(key in p for p in points):
            acc_ax.plot(xs, [100 * p.get(key, 0.0) for p in points], marker="o", label=label)
    tok_ax.plot(xs, [p.get("retrieved_tokens", 0.0) for p in points], marker="s",
                color="tab:gray")
    for ax, ylabel in ((acc_ax, "accuracy (%)"), (tok_ax, "retrieved tokens / question")):
        ax.set_xlabel(result["param"])
        ax.set_ylabel(ylabel)
        ax.set_xticks(xs, labels)
        ax.grid(alpha=0.3)
    acc_ax.legend()
    fig.suptitle(f"{result['agent']}: {result['questions']} questions, "
                 f"sweep over {result['param']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

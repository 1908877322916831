"""The named presets: ``NAME.yaml`` files in this folder, read as config files by
:meth:`sleuth.settings.Settings.from_name` (paper-qa's ``configs/*.json``).

``small.yaml`` and ``capable.yaml`` are the model profiles: the answer checks the default
agent runs on a draft, in order, and whether the model's answer object starts with the facts
it rests on. ``agent.profile`` picks one (``auto``: ``capable`` for an endpoint, ``small``
for the local model); :class:`Profile` is the one a configuration resolves to.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError

CONFIGS = Path(__file__).parent  # the named presets, NAME.yaml


def presets() -> list[str]:
    """The names of the presets."""
    return sorted(p.stem for p in CONFIGS.glob("*.yaml"))


def preset_path(name: str) -> Path:
    """The file of the preset ``name``; an unknown name is a ConfigError naming the
    nearest."""
    path = CONFIGS / f"{name}.yaml"
    if not path.is_file():
        close = difflib.get_close_matches(name, presets(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown preset {name!r}{hint}; the presets: "
                          f"{', '.join(presets())}")
    return path


@dataclass(frozen=True)
class Profile:
    """A model profile as :meth:`~sleuth.settings.Settings.profile` resolves it: its name,
    why it was chosen, the answer checks of the default agent in order (``custom``:
    ``agent.checks`` set others than the profile's) and whether the model's answer starts
    with its facts."""

    name: str
    chosen: str
    checks: tuple[str, ...]
    facts_first: bool
    custom: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "chosen": self.chosen, "checks": list(self.checks),
                "facts_first": self.facts_first, "custom": self.custom}

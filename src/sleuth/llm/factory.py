"""The LLM a configuration names: an OpenAI-compatible endpoint, or the offline local model."""

from __future__ import annotations

import logging

from sleuth.errors import ConfigError
from sleuth.llm import local
from sleuth.llm.base import LLM
from sleuth.llm.client import OpenAIClient
from sleuth.llm.jsontools import JsonToolCalls
from sleuth.settings import Settings
from sleuth.text.threads import policy_from


def llm_from_settings(settings: Settings) -> LLM:
    """The client the settings describe: the configured OpenAI-compatible endpoint (Azure
    OpenAI when an API version is set or in the URL; it adapts to what the server refuses and
    falls back to the JSON tool protocol by itself), else the installed offline model
    (started on first use), else a ConfigError saying how to set one. The model profile
    (``Settings.profile``) says whether a JSON answer object starts with the model's facts
    (``small``, the local model's, does; ``capable`` does not).
    """
    cfg = settings.llm
    if not cfg.configured:
        if local.installed(cfg.local_model, cfg.local_runtime):
            server = local.shared_server(cfg.local_model, cfg.local_context,
                                         runtime=cfg.local_runtime,
                                         idle_minutes=cfg.local_idle_minutes,
                                         say=logging.getLogger("sleuth").info,
                                         policy=policy_from(settings.threads))
            return local.client(server, cfg.local_model, cfg,
                                facts_first=settings.profile().facts_first)
        raise ConfigError(
            "no LLM endpoint configured: set SLEUTH_BASE_URL (e.g. https://api.openai.com/v1 or "
            "http://localhost:11434/v1), SLEUTH_MODEL (e.g. gpt-4o-mini) and, if the server "
            "needs one, SLEUTH_API_KEY; or install the offline model: sleuth llm install-local"
        )
    client = OpenAIClient(
        cfg.model or "", cfg.base_url, cfg.api_key, temperature=cfg.temperature,
        max_tokens=cfg.max_tokens, reasoning_effort=cfg.reasoning_effort, timeout=cfg.timeout,
        max_retries=cfg.max_retries, api_version=cfg.api_version,
    )
    return JsonToolCalls(client, facts_first=settings.profile().facts_first) \
        if cfg.tool_mode == "json" else client

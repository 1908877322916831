"""``sleuth serve``: the HTTP API and the MCP server over one index."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from sleuth.cli.console import load_settings, status

F = TypeVar("F", bound=Callable[..., Any])


@click.group("serve")
def serve_group() -> None:
    """Serve the index to other programs: an HTTP API or an MCP server (extra: serve).

    \b
      sleuth serve http --index idx              # API keys from serve.api_keys
      sleuth serve http --index idx --no-auth    # local use only, no keys
      sleuth serve mcp --index idx               # stdio, for an MCP client to launch
      sleuth serve mcp --transport http --port 8766
    """


def _serve_options(func: F) -> F:
    func = click.option("--config", "config", type=click.Path(dir_okay=False), default=None,
                        help="Config file (YAML or TOML).")(func)
    func = click.option("--queue", type=click.IntRange(0), default=None,
                        help="Requests that may wait for a worker; beyond them a request "
                        "gets 503 with Retry-After at once [serve.queue, 256].")(func)
    func = click.option("--workers", type=click.IntRange(1), default=None,
                        help="Tool calls and indexing requests run at once, each on one "
                        "thread [serve.workers, the usable cores].")(func)
    func = click.option("--port", type=click.IntRange(1, 65535), default=None,
                        help="TCP port [serve.port, 8765].")(func)
    func = click.option("--host", default=None,
                        help="Interface to listen on [serve.host, 127.0.0.1].")(func)
    func = click.option("--index", "--store", "index_dir", default=None, envvar="SLEUTH_INDEX",
                        show_envvar=True, help="Index folder (default ./.sleuth) or store URL "
                        "(postgresql://user@host/db?schema=NAME).")(func)
    return func


_NO_AUTH_REMOTE = click.option(
    "--allow-remote-no-auth", is_flag=True,
    help="With --no-auth, listen on an address other machines reach (refused without this "
    "flag: anyone reaching the port could read and change the index).")


@serve_group.command("http")
@click.option("--no-auth", is_flag=True,
              help="Accept requests without an API key (local use only; otherwise keys come "
              "from serve.api_keys / SLEUTH_SERVE__API_KEYS and the server refuses to start "
              "without them).")
@_NO_AUTH_REMOTE
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of eval runs the viewer at /viewer browses [serve.runs, results].")
@_serve_options
def serve_http_cmd(no_auth: bool, allow_remote_no_auth: bool, runs_dir: str | None,
                   index_dir: str | None, host: str | None, port: int | None,
                   workers: int | None, queue: int | None, config: str | None) -> None:
    """Serve the app and the HTTP API (FastAPI; OpenAPI schema at /docs and /openapi.json).

    \b
    The app at / : ask your documents and watch the agent work, open the passages it
    cites, follow up in sessions, upload and delete documents (it asks for the API key
    once per browser tab). The API: status, documents, every tool at /v1/tools/NAME,
    /v1/ask (and SSE /v1/ask/stream), sessions, an OpenAI-compatible
    /v1/chat/completions with /v1/models, eval runs at /v1/runs and the run viewer at
    /viewer. Keys: `Authorization: Bearer KEY` or `X-API-Key: KEY`.

    \b
    Requests naming another host than this server's (DNS rebinding) get 421, and requests
    from other web pages may not change anything (serve.allowed_hosts widens the first).
    SIGTERM or Ctrl-C stops the server within seconds."""
    from sleuth.server.http import create_app
    from sleuth.server.serving import check_exposure, run
    from sleuth.service.service import Service

    settings = load_settings(config, index_dir, serve={"host": host, "port": port,
                                                   "runs": runs_dir, "workers": workers,
                                                   "queue": queue})
    check_exposure(settings.serve, auth=not no_auth, allow_remote=allow_remote_no_auth)
    service = Service(settings=settings)
    app = create_app(service, auth=not no_auth)
    status(f"serving {service.index.location}: the app at http://{settings.serve.host}:"
            f"{settings.serve.port}/ (OpenAPI at /docs, run viewer at /viewer over "
            f"{settings.serve.runs}{'; no auth' if no_auth else ''}; {service.pool.workers} "
            f"workers, {service.pool.queue} may wait)")
    run(app, settings.serve, on_stop=service.close)


@serve_group.command("mcp")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio",
              show_default=True,
              help="stdio (the MCP client launches this command) or streamable HTTP at /mcp.")
@click.option("--no-auth", is_flag=True,
              help="HTTP transport: accept requests without an API key (local use only).")
@_NO_AUTH_REMOTE
@_serve_options
def serve_mcp_cmd(transport: str, no_auth: bool, allow_remote_no_auth: bool,
                  index_dir: str | None, host: str | None, port: int | None,
                  workers: int | None, queue: int | None, config: str | None) -> None:
    """Serve the MCP server: every retrieval tool with the agent's own descriptions and
    schemas, plus `ask`. Over HTTP each request needs a key of serve.api_keys (Bearer or
    X-API-Key), and a tenant's key sees only its collection and groups."""
    from sleuth.server.mcp import serve_mcp
    from sleuth.server.serving import check_exposure
    from sleuth.service.service import Service

    # over stdio every call is in the one client's session, which runs on the server's
    # threads: tool processes would only hold memory
    settings = load_settings(config, index_dir, serve={
        "host": host, "port": port, "workers": workers, "queue": queue,
        "tool_processes": None if transport == "http" else False})
    if transport == "http":
        check_exposure(settings.serve, auth=not no_auth, allow_remote=allow_remote_no_auth)
    service = Service(settings=settings)
    if transport == "http":
        status(f"MCP over streamable HTTP at http://{settings.serve.host}:"
                f"{settings.serve.port}/mcp")
    serve_mcp(service, "http" if transport == "http" else "stdio", host=settings.serve.host,
              port=settings.serve.port, auth=not no_auth)

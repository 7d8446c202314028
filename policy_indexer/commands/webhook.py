"""``policy-indexer webhook``: serve the receiver (into Kafka); ``sign`` and ``send`` test a setup.

``webhook sign FILE`` prints the headers a CMS would send with the body in
FILE; ``webhook send URL FILE`` posts it with them and prints the answer. The
secret is the configured one of the scheme (the first, during a rotation),
or ``--secret``.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.webhook import serve_webhook, setting_env
from policy_indexer.settings import Settings
from webhooks.adapters.registry import ADAPTERS

# the adapters that declare how their sender signs, each with its secret's setting
_SIGNERS = {spec.name: spec.sign for spec in ADAPTERS if spec.sign is not None}
SCHEMES = ("cms", *_SIGNERS)
_SETTING = {"cms": "webhook_secrets"} | {spec.name: spec.secrets_setting
                                         for spec in ADAPTERS if spec.name in _SIGNERS}


@click.group(invoke_without_command=True)
@click.pass_context
@says_errors("cannot open the embedded queue")
def webhook(ctx: click.Context) -> None:
    """Serve POST /webhooks/cms and the adapters' routes, /healthz, /readyz and /metrics."""
    if ctx.invoked_subcommand is not None:
        return
    settings: Settings = ctx.obj
    serve_webhook(settings)


def signed_headers(settings: Settings, scheme: str, body: bytes, secret: str | None, *,
                   event: str, now: float) -> dict[str, str]:
    """The headers of ``scheme`` for ``body``, signed with ``secret`` or the configured one."""
    if secret is None:
        configured = getattr(settings, _SETTING[scheme])
        if not configured:
            setting = setting_env(_SETTING[scheme])
            raise click.UsageError(f"no secret for scheme {scheme!r}: set {setting} or --secret")
        secret = str(configured[0].get_secret_value())
    headers = {"Content-Type": "application/json"}
    if scheme == "cms":
        from webhooks import signature  # noqa: PLC0415 (commands import lazily)

        headers[signature.HEADER] = signature.sign([secret.encode()], int(now), body)
        return headers
    try:
        headers |= _SIGNERS[scheme](secret, body, event, now)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    return headers


_scheme = click.option("--scheme", type=click.Choice(SCHEMES), default="cms", show_default=True,
                       help="How the CMS signs: our Policy-Signature, GitHub, GitLab, Standard.")
_secret = click.option("--secret", default=None, help="Sign with this instead of the setting.")
_event = click.option("--event", default="push", show_default=True,
                      help="github/gitlab: the event header (push, ping...).")
_body = click.argument("body_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))


@webhook.command()
@_scheme
@_secret
@_event
@_body
@click.pass_obj
def sign(settings: Settings, *, scheme: str, secret: str | None, event: str,
         body_file: Path) -> None:
    """Print the headers a CMS sends with the body in BODY_FILE (one 'Name: value' a line)."""
    body = body_file.read_bytes()
    headers = signed_headers(settings, scheme, body, secret, event=event, now=time.time())
    for name, value in headers.items():
        click.echo(f"{name}: {value}")


@webhook.command()
@_scheme
@_secret
@_event
@click.option("--timeout", default=30.0, show_default=True, help="Seconds to wait for the answer.")
@click.argument("url")
@_body
@click.pass_obj
def send(settings: Settings, *, scheme: str, secret: str | None, event: str, timeout: float,
         url: str, body_file: Path) -> None:
    """POST BODY_FILE to URL signed as SCHEME; print the status and the answer."""
    import httpx  # noqa: PLC0415

    body = body_file.read_bytes()
    headers = signed_headers(settings, scheme, body, secret, event=event, now=time.time())
    try:
        answer = httpx.post(url, content=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise click.ClickException(f"POST {url} failed: {exc}") from exc
    click.echo(f"{answer.status_code} {answer.reason_phrase}")
    click.echo(answer.text)
    if answer.status_code >= 400:
        raise SystemExit(1)

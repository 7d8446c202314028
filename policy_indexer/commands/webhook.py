"""``policy-indexer webhook``: serve the receiver (into Kafka); ``sign`` and ``send`` test a setup.

``webhook sign FILE`` prints the headers a CMS would send with the body in
FILE; ``webhook send URL FILE`` posts it with them and prints the answer. The
secret is the configured one of the scheme (the first, during a rotation),
or ``--secret``.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.webhook import serve_webhook
from policy_indexer.settings import Settings

SCHEMES = ("cms", "github", "gitlab", "standard")
_SETTING = {"cms": "webhook_secrets", "github": "webhook_github_secrets",
            "gitlab": "webhook_gitlab_tokens", "standard": "webhook_standard_secrets"}


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
            setting = "POLICY_INDEXER_" + _SETTING[scheme].upper()
            raise click.UsageError(f"no secret for scheme {scheme!r}: set {setting} or --secret")
        secret = str(configured[0].get_secret_value())
    headers = {"Content-Type": "application/json"}
    if scheme == "cms":
        from webhooks import signature  # noqa: PLC0415 (commands import lazily)

        headers[signature.HEADER] = signature.sign([secret.encode()], int(now), body)
    elif scheme == "github":
        from webhooks.adapters import github  # noqa: PLC0415

        headers[github.SIGNATURE_HEADER] = github.sign(secret.encode(), body)
        headers[github.EVENT_HEADER] = event
        headers["X-GitHub-Delivery"] = str(uuid.uuid4())
    elif scheme == "gitlab":
        from webhooks.adapters import gitlab  # noqa: PLC0415

        headers[gitlab.TOKEN_HEADER] = secret
        headers[gitlab.EVENT_HEADER] = "Push Hook" if event == "push" else event
    else:
        from webhooks.adapters import standard  # noqa: PLC0415

        try:
            key = standard.decode_secret(secret)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
        msg_id = f"msg_{uuid.uuid4().hex}"
        headers[standard.ID_HEADER] = msg_id
        headers[standard.TIMESTAMP_HEADER] = str(int(now))
        headers[standard.SIGNATURE_HEADER] = standard.sign(key, msg_id, int(now), body)
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

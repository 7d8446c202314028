"""Requests signed by the CMS vendors' own libraries (npm), and real-shaped CMS payloads.

``@sanity/webhook`` (``encodeSignatureHeader``) and
``@contentful/node-apps-toolkit`` (``signRequest``) are installed by
``scripts/install`` into ``.local/node``; each call runs ``node`` once, so the
signature the tests send is the vendor's, not a copy of our own code.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = REPO_ROOT / ".local" / "node" / "node_modules"

_SIGNER = r"""
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const req = (name) => require(require('path').join(input.modules, name));
(async () => {
  if (input.vendor === 'sanity') {
    const {encodeSignatureHeader} = req('@sanity/webhook');
    const value = await encodeSignatureHeader(input.body, input.t, input.secret);
    process.stdout.write(JSON.stringify({'sanity-webhook-signature': value}));
  } else {
    const {signRequest} = req('@contentful/node-apps-toolkit');
    process.stdout.write(JSON.stringify(signRequest(input.secret,
      {method: 'POST', path: input.path, headers: input.headers, body: input.body}, input.t)));
  }
})().catch((e) => { console.error(e); process.exit(1); });
"""


def _node(vendor: str, **values: Any) -> dict[str, str]:
    package = {"sanity": "@sanity/webhook", "contentful": "@contentful/node-apps-toolkit"}[vendor]
    if not (NODE_MODULES / package / "package.json").exists():
        raise AssertionError(f"{NODE_MODULES / package} is missing: run scripts/install (it "
                             f"installs the npm package {package} into .local/node)")
    done = subprocess.run(["node", "-e", _SIGNER], capture_output=True, timeout=60, check=False,
                          input=json.dumps({"vendor": vendor, "modules": str(NODE_MODULES),
                                            **values}).encode())
    if done.returncode != 0:
        raise AssertionError(f"{package} failed to sign: {done.stderr.decode()[-800:]}")
    result: dict[str, str] = json.loads(done.stdout)
    return result


def sanity_headers(body: bytes, secret: str, t_ms: int, operation: str = "update",
                   **extra: str) -> dict[str, str]:
    """The headers a Sanity GROQ webhook sends, signed by ``@sanity/webhook``."""
    signed = _node("sanity", body=body.decode("utf-8"), secret=secret, t=t_ms)
    return {"Content-Type": "application/json", "sanity-operation": operation,
            "sanity-dataset": "production", "sanity-project-id": "abc123xy", **signed, **extra}


def contentful_headers(body: bytes, secret: str, t_ms: int, topic: str,
                       path: str = "/webhooks/contentful") -> dict[str, str]:
    """The headers Contentful sends with request verification on, signed by the toolkit.

    The topic and the webhook name are signed too, as Contentful signs them.
    """
    plain = {"X-Contentful-Topic": topic, "X-Contentful-Webhook-Name": "policy-indexer"}
    signed = _node("contentful", body=body.decode("utf-8"), secret=secret, t=t_ms, path=path,
                   headers=plain)
    return {"Content-Type": "application/vnd.contentful.management.v1+json", **plain, **signed}


def contentful_rich_text() -> dict[str, Any]:
    """A rich-text field as Contentful's management API returns it (nodes, marks, data)."""
    def text(value: str, *marks: str) -> dict[str, Any]:
        return {"nodeType": "text", "value": value, "marks": [{"type": m} for m in marks],
                "data": {}}

    def node(kind: str, *content: dict[str, Any], **data: Any) -> dict[str, Any]:
        return {"nodeType": kind, "data": data, "content": list(content)}

    return node(
        "document",
        node("heading-1", text("Refunds")),
        node("paragraph", text("Customers get their money back within "),
             text("60 days", "bold"), text(".")),
        node("heading-2", text("Eligibility")),
        node("unordered-list",
             node("list-item", node("paragraph", text("Unused items"))),
             node("list-item", node("paragraph", text("Damaged on "), node(
                 "hyperlink", text("delivery"), uri="https://example.com/delivery")))),
        node("heading-2", text("Exceptions")),
        node("blockquote", node("paragraph", text("Gift cards are final."))),
        node("table",
             node("table-row", node("table-header-cell", node("paragraph", text("Item"))),
                  node("table-header-cell", node("paragraph", text("Days")))),
             node("table-row", node("table-cell", node("paragraph", text("Scooter"))),
                  node("table-cell", node("paragraph", text("30"))))),
        node("embedded-entry-block", target={"sys": {"id": "x", "type": "Link",
                                                     "linkType": "Entry"}}),
        node("hr"),
    )


def contentful_entry(entry_id: str, rich: dict[str, Any], *, updated: str,
                     version: int = 7) -> dict[str, Any]:
    """An ``Entry.publish`` body: the management API's entry, fields per locale."""
    link = {"sys": {"type": "Link", "linkType": "Space", "id": "yadj1kx9rmg0"}}
    return {
        "metadata": {"tags": []},
        "sys": {"type": "Entry", "id": entry_id, "space": link,
                "environment": {"sys": {"id": "master", "type": "Link",
                                        "linkType": "Environment"}},
                "contentType": {"sys": {"type": "Link", "linkType": "ContentType",
                                        "id": "policy"}},
                "createdAt": "2026-11-01T09:00:00.000Z", "updatedAt": updated,
                "publishedAt": updated, "firstPublishedAt": "2026-11-01T09:00:00.000Z",
                "version": version, "publishedVersion": version - 1, "revision": 2},
        "fields": {"title": {"en-US": "Refunds"}, "body": {"en-US": rich},
                   "scope": {"en-US": ["city:lisbon"]}, "validFrom": {"en-US": "2026-12-01"},
                   "accessLabels": {"en-US": ["agents"]}},
    }


def contentful_tombstone(entry_id: str, deleted: str) -> dict[str, Any]:
    """An ``Entry.unpublish``/``delete`` body: a DeletedEntry, with no sys.version."""
    return {"sys": {"type": "DeletedEntry", "id": entry_id,
                    "space": {"sys": {"type": "Link", "linkType": "Space", "id": "yadj1kx9rmg0"}},
                    "environment": {"sys": {"id": "master", "type": "Link",
                                            "linkType": "Environment"}},
                    "contentType": {"sys": {"type": "Link", "linkType": "ContentType",
                                            "id": "policy"}},
                    "revision": 2, "createdAt": "2026-11-01T09:00:00.000Z",
                    "updatedAt": deleted, "deletedAt": deleted}}


def portable_text() -> list[dict[str, Any]]:
    """A Portable Text body as Sanity stores it (keys, styles, lists, marks, link markDefs)."""
    def block(style: str, *spans: tuple[str, list[str]], key: str, **more: Any) -> dict[str, Any]:
        return {"_type": "block", "_key": key, "style": style, "markDefs": more.pop("defs", []),
                "children": [{"_type": "span", "_key": f"{key}{i}", "text": t, "marks": m}
                             for i, (t, m) in enumerate(spans)], **more}

    return [
        block("h1", ("Deliveries", []), key="a1"),
        block("normal", ("Orders ship in ", []), ("two days", ["strong"]), (".", []), key="a2"),
        block("h2", ("Late deliveries", []), key="a3"),
        block("normal", ("Refund the fee", []), key="a4", listItem="bullet", level=1),
        block("normal", ("within a week", ["em"]), key="a5", listItem="bullet", level=2),
        block("normal", ("see ", []), ("the terms", ["lnk1"]), key="a6", listItem="bullet",
              level=1, defs=[{"_type": "link", "_key": "lnk1", "href": "https://example.com/t"}]),
        {"_type": "image", "_key": "a7", "asset": {"_ref": "image-abc-200x200-png",
                                                    "_type": "reference"}},
        block("h2", ("Lost parcels", []), key="a8"),
        block("blockquote", ("Report within 48 hours.", []), key="a9"),
    ]


def sanity_document(doc_id: str, updated: str, rev: str = "kR4nd0mRev") -> dict[str, Any]:
    return {"_id": doc_id, "_type": "policy", "_rev": rev, "_createdAt": "2026-11-01T09:00:00Z",
            "_updatedAt": updated, "title": "Deliveries", "body": portable_text(),
            "scope": ["city:porto"], "validFrom": "2026-12-01", "validTo": "2027-06-30",
            "accessLabels": ["agents", "tier2"]}


def strapi_blocks() -> list[dict[str, Any]]:
    """A "Rich text (Blocks)" field of Strapi 5."""
    def text(value: str, **marks: bool) -> dict[str, Any]:
        return {"type": "text", "text": value, **marks}

    return [
        {"type": "heading", "level": 1, "children": [text("Warranty")]},
        {"type": "paragraph", "children": [text("Two years on "), text("every", bold=True),
                                           text(" device.")]},
        {"type": "heading", "level": 2, "children": [text("Claims")]},
        {"type": "list", "format": "ordered", "children": [
            {"type": "list-item", "children": [text("Open a ticket")]},
            {"type": "list-item", "children": [text("Send the "), {
                "type": "link", "url": "https://example.com/form", "children": [text("form")]}]}]},
        {"type": "quote", "children": [text("Keep the receipt.")]},
    ]


def strapi_event(event: str, document_id: str, updated: str, *, body: Any = None,
                 created: str | None = None, published: bool = True) -> dict[str, Any]:
    """A Strapi 5 webhook body (``entry.publish`` ...), as its docs show."""
    entry: dict[str, Any] = {
        "id": 12, "documentId": document_id, "title": "Warranty", "locale": "en",
        "createdAt": "2026-11-01T09:00:00.000Z", "updatedAt": updated,
        "publishedAt": updated if published else None, "scope": "city:berlin, city:hamburg",
        "validFrom": "2026-12-01", "accessLabels": ["public"]}
    if body is not None:
        entry["body"] = body
    return {"event": event, "createdAt": created or updated, "model": "policy",
            "uid": "api::policy.policy", "entry": entry}

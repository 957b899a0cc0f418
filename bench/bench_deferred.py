"""What deferred tools save: the bytes of an agent's first request with 200 tools.

    python bench/bench_deferred.py        # or: make bench-deferred, or bench/run.py deferred

200 realistic tools (10 services × 20 operations, each a description and a JSON Schema
of 2–5 described, typed parameters, the shape MCP servers list) are given to an
``mw.Agent`` twice: as plain tools, sent with every request, and made with
``defer=True``, where the first request carries only ``search_tools`` (the agent's own
search) in their place. Each agent makes its first request to a loopback
``MockServer``; the figure is the exact request body the server received, for each
wire API, and the ratio of the two. Byte counts do not vary between runs.

The provider-side search (``Capabilities.tool_search``: Anthropic Messages, OpenAI
Responses) is shown too: there every tool is still sent, marked ``defer_loading``, and
the saving is in the model's context (tokens), which the provider does not report per
tool, not in bytes on the wire.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import modelwire as mw
from modelwire.testing import MockServer

N_TOOLS = 200
APIS = ("openai-chat", "anthropic-messages", "openai-responses", "google-generative-ai")

_SERVICES = {
    "github": ("GitHub", "repository", "repo"),
    "slack": ("Slack", "channel", "channel_id"),
    "jira": ("Jira", "project", "project_key"),
    "calendar": ("Google Calendar", "calendar", "calendar_id"),
    "gmail": ("Gmail", "mailbox", "label"),
    "drive": ("Google Drive", "folder", "folder_id"),
    "salesforce": ("Salesforce", "account", "account_id"),
    "stripe": ("Stripe", "customer", "customer_id"),
    "zendesk": ("Zendesk", "ticket queue", "queue_id"),
    "notion": ("Notion", "workspace", "workspace_id"),
}
# (operation, what it does, its own parameters: name → (JSON type, description)).
_OPERATIONS: list[tuple[str, str, dict[str, tuple[str, str]]]] = [
    ("list_items", "List the items in a {scope}, newest first, one page at a time.",
     {"page_size": ("integer", "Items per page, 1-100."),
      "cursor": ("string", "The cursor of the page to read; omit for the first page.")}),
    ("get_item", "Read one item of a {scope} with all its fields.",
     {"item_id": ("string", "The item's id, as list_items returns it.")}),
    ("create_item", "Create an item in a {scope}; returns the new item's id.",
     {"title": ("string", "A short title, at most 200 characters."),
      "body": ("string", "The full text, Markdown allowed.")}),
    ("update_item", "Change the title or text of an item of a {scope}.",
     {"item_id": ("string", "The item to change."),
      "title": ("string", "The new title; omit to keep it."),
      "body": ("string", "The new text; omit to keep it.")}),
    ("delete_item", "Delete an item of a {scope}. This cannot be undone.",
     {"item_id": ("string", "The item to delete.")}),
    ("search_items", "Full-text search over the items of a {scope}.",
     {"query": ("string", "Words to look for; quotes for an exact phrase."),
      "limit": ("integer", "The most results to return, 1-50.")}),
    ("add_comment", "Add a comment to an item of a {scope}.",
     {"item_id": ("string", "The item to comment on."),
      "text": ("string", "The comment, Markdown allowed.")}),
    ("list_comments", "The comments on an item of a {scope}, oldest first.",
     {"item_id": ("string", "The item whose comments to read.")}),
    ("assign_item", "Assign an item of a {scope} to a member.",
     {"item_id": ("string", "The item to assign."),
      "user_id": ("string", "The member's id, as list_members returns it.")}),
    ("list_members", "The members who can see a {scope}, with their roles.",
     {"role": ("string", "Only members with this role: owner, editor or viewer.")}),
    ("get_member", "One member of a {scope}: name, email, role, time zone.",
     {"user_id": ("string", "The member's id.")}),
    ("invite_member", "Invite someone to a {scope} by email.",
     {"email": ("string", "The address to invite."),
      "role": ("string", "owner, editor or viewer.")}),
    ("remove_member", "Remove a member from a {scope}.",
     {"user_id": ("string", "The member to remove.")}),
    ("add_label", "Put a label on an item of a {scope}, creating the label if needed.",
     {"item_id": ("string", "The item to label."),
      "label": ("string", "The label's name.")}),
    ("remove_label", "Take a label off an item of a {scope}.",
     {"item_id": ("string", "The item."), "label": ("string", "The label's name.")}),
    ("list_labels", "The labels used in a {scope}, with how many items carry each.", {}),
    ("export_items", "Export the items of a {scope} as CSV or JSON; returns a link.",
     {"format": ("string", "csv or json."),
      "since": ("string", "Only items changed since this ISO 8601 date.")}),
    ("get_activity", "Recent changes in a {scope}: who changed what, and when.",
     {"since": ("string", "ISO 8601 date-time to start from."),
      "limit": ("integer", "The most events to return, 1-200.")}),
    ("get_settings", "The settings of a {scope}: visibility, defaults, integrations.", {}),
    ("update_settings", "Change one setting of a {scope}.",
     {"key": ("string", "The setting's name, as get_settings lists it."),
      "value": ("string", "The new value, as text.")}),
]  # fmt: skip


def _execute(args: dict[str, Any], ctx: mw.ToolContext) -> str:
    return "ok"


def tools(defer: bool) -> list[mw.Tool]:
    out = []
    for service, (product, scope, scope_param) in _SERVICES.items():
        for op, description, params in _OPERATIONS:
            properties: dict[str, Any] = {
                scope_param: {"type": "string", "description": f"The {product} {scope}."}
            }
            properties.update(
                {name: {"type": t, "description": d} for name, (t, d) in params.items()}
            )
            required = [scope_param, *(n for n in params if n in ("item_id", "title", "query",
                                                                 "user_id", "email", "text"))]  # fmt: skip
            schema = {"type": "object", "properties": properties, "required": required,
                      "additionalProperties": False}  # fmt: skip
            text = f"{product}: {description.format(scope=scope)}"
            out.append(mw.Tool(f"{service}_{op}", text, schema, _execute, defer=defer))
    assert len(out) == N_TOOLS
    return out


def first_request(api: str, defer: bool, provider_search: bool = False) -> tuple[int, int]:
    """(body bytes, tools-array bytes) of the first request an agent makes."""
    caps = mw.Capabilities(tool_search=True) if provider_search else None
    with MockServer(["ok"]) as server:
        agent = mw.Agent(server.model(api, "bench-model", capabilities=caps), tools(defer))
        agent.run_sync("Open an issue in the modelwire repository about the flaky test.")
        body = server.requests[0].body
    parsed = json.loads(body)
    declared = parsed.get("tools")
    if api == "google-generative-ai":
        declared = [d for t in parsed.get("tools", []) for d in t.get("functionDeclarations", [])]
    compact = json.dumps(declared, separators=(",", ":"), ensure_ascii=False).encode()
    return len(body), len(compact)


def main() -> None:
    print(f"### deferred tools: the first request of an agent with {N_TOOLS} tools\n")
    print("| wire API | all sent | deferred (search_tools) | ratio | tool definitions: all → "
          "deferred |")  # fmt: skip
    print("|---|---:|---:|---:|---:|")
    for api in APIS:
        full, full_tools = first_request(api, defer=False)
        lean, lean_tools = first_request(api, defer=True)
        print(f"| {api} | {full:,} B | {lean:,} B | {full / lean:.1f}× | "
              f"{full_tools:,} → {lean_tools:,} B |")  # fmt: skip
    print(
        "\nProvider-side search (`Capabilities.tool_search`): every tool is still sent, "
        "marked `defer_loading`; the provider keeps them out of the model's context.\n"
    )
    print("| wire API | all sent | deferred, provider searches |")
    print("|---|---:|---:|")
    for api in ("anthropic-messages", "openai-responses"):
        full, _ = first_request(api, defer=False)
        marked, _ = first_request(api, defer=True, provider_search=True)
        print(f"| {api} | {full:,} B | {marked:,} B |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

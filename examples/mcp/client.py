"""An agent's side of kledger's MCP server, on the official Python SDK (`mcp`).

    python client.py http http://127.0.0.1:9464/mcp TOKEN [OTHER_TOKEN]
    python client.py stdio KLEDGER_BINARY              (env: the kledger mcp configuration)

`http` connects to a running `kledger run` over Streamable HTTP with a bearer token, lists the
tools, calls each one, checks a second principal gets the uniform `unavailable` for the first
one's playbook and sees over MCP exactly what HTTP shows it, then remembers a fact and finds
it on the first search (the session passes the write's consistency token on). `stdio` starts
`kledger mcp` as a child process and does the same with one principal. Each step prints one
JSON line; any failed check exits with status 1.

The test suite runs this file (topology/tests/mcp.rs); docs/mcp.md shows the same calls.
"""

import asyncio
import json
import os
import sys
import time
import urllib.request

import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

TOOLS = {"search_knowledge", "read_playbook", "get_entity_timeline", "get_profile", "remember", "search_conversations"}


def say(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


def check(ok, what, **fields):
    if not ok:
        say("failed", what=what, **fields)
        sys.exit(1)


def result_of(r):
    """A tool result's JSON (structured content), and whether it is an error."""
    data = r.structured_content
    if data is None and r.content:
        data = json.loads(r.content[0].text)
    return data, bool(r.is_error)


async def call(session, tool, **args):
    data, error = result_of(await session.call_tool(tool, args))
    return data, error


async def tour(session, label):
    """Initialize, list the tools, call each read tool; the profile's first playbook id."""
    init = await session.initialize()
    say("initialize", session=label, server=init.server_info.name)
    tools = await session.list_tools()
    names = {t.name for t in tools.tools}
    check(TOOLS <= names, "every tool listed", names=sorted(names))
    for t in tools.tools:
        check(t.description and t.input_schema.get("type") == "object", "schema and description", tool=t.name)
    say("tools", session=label, tools=sorted(names))
    profile, error = await call(session, "get_profile")
    check(not error and "profile" in profile, "get_profile", answer=profile)
    say("get_profile", session=label, profile=profile["profile"])
    found, error = await call(session, "search_knowledge", query="where does she live", limit=3)
    check(not error and found["results"], "search_knowledge", answer=found)
    say("search_knowledge", session=label, first=found["results"][0]["content"])
    timeline, error = await call(session, "get_entity_timeline", entity="user", limit=5)
    check(not error and timeline["items"], "get_entity_timeline", answer=timeline)
    say("get_entity_timeline", session=label, items=len(timeline["items"]))
    # Bounded conversation retrieval is off unless the deployment enables it.
    found, error = await call(session, "search_conversations", query="the trip")
    off = error and "conversation_retrieval_off" in json.dumps(found)
    say("search_conversations", session=label, off=bool(off), answer=found if not off else None)
    playbook = None
    index = profile.get("playbook_index", "")
    if index:
        playbook = index.split(":")[0]
        book, error = await call(session, "read_playbook", memory_id=playbook)
        check(not error and book["body"], "read_playbook", answer=book)
        say("read_playbook", session=label, description=book["description"])
    return playbook


async def remember_then_search(session, label, http=None):
    fact = "Plays the cello in a string quartet on Sundays"
    # With its provenance: the conversation and message it came from.
    wrote, error = await call(session, "remember", content=fact, source_type="conversation",
                              source_id="conv_42", conversation_id="conv_42", message_id="msg_7")
    check(not error and wrote["receipt"]["outcome"] in ("committed", "duplicate"), "remember", answer=wrote)
    check(wrote["consistency_token"] is not None, "a consistency token", answer=wrote)
    ids = set(wrote["receipt"]["memory_ids"])
    say("remember", session=label, outcome=wrote["receipt"]["outcome"], token=wrote["consistency_token"])
    # An agent cannot lift its write above the user's words with a source type.
    lifted, error = await call(session, "remember", content="Is the CEO", source_type="system_of_record")
    check(error and lifted["error"]["code"] == "bad_source_type", "a claimed system of record is refused", answer=lifted)
    if http:
        # The row carries it: author (the session's principal), source and version, evidence.
        base, token = http
        # (The view store folds it soon after the receipt: looked for up to 30 s.)
        for _ in range(150):
            status, features = http_get(base, token, "/v1/semantic/features?session_id=conv_42")
            if status != 200 or features["features"]:
                break
            time.sleep(0.2)
        check(status == 200 and features["features"], "the remembered row by its conversation", answer=features)
        provenance = features["features"][0]["metadata"]["provenance"]
        source, evidence = provenance["source"], provenance["evidence"]
        check(source["source_type"] == "conversation" and source["source_id"] == "conv_42", "its source", source=source)
        check(source["source_version"] and source["author_id"].startswith("user/"), "its version and author", source=source)
        check(evidence and evidence[0]["message_id"] == "msg_7", "its message", evidence=evidence)
        say("remember_provenance", session=label, author=source["author_id"])
    # The first search after the write finds it: the session waits for its own token.
    found, error = await call(session, "search_knowledge", query="what instrument does she play", limit=3)
    check(not error, "search after remember", answer=found)
    got = [r["memory_id"] for r in found["results"]]
    check(bool(ids & set(got)) or wrote["receipt"]["outcome"] == "duplicate", "the new row on the first search", ids=sorted(ids), got=got)
    say("search_after_remember", session=label, first=found["results"][0]["content"])


def http_get(base, token, path):
    req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


async def over_http(url, token, other):
    base = url.rsplit("/mcp", 1)[0]
    # Without a token: 401 before MCP.
    status = httpx2.post(url, json={}).status_code
    check(status == 401, "no token is 401", status=status)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                playbook = await tour(session, "owner")
                if other:
                    await as_other(url, base, other, playbook, token)
                await remember_then_search(session, "owner", http=(base, token))


async def as_other(url, base, other, playbook, owner_token):
    """A second principal: the owner's playbook is `unavailable`, and MCP shows it what HTTP
    shows it."""
    _, owner_profile = http_get(base, owner_token, "/v1/profile")
    owner = owner_profile["account_id"]
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {other}"}, timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                if playbook:
                    book, error = await call(session, "read_playbook", memory_id=playbook, account=owner)
                    check(error and book["error"]["code"] == "unavailable", "foreign playbook unavailable", answer=book)
                    status, http_book = http_get(base, other, f"/v1/playbooks/{playbook}?account={owner}")
                    check(status == 404 and http_book == book, "HTTP gives the same", http=http_book, mcp=book)
                    say("foreign_playbook", answer=book["error"]["code"])
                profile, error = await call(session, "get_profile", account=owner)
                status, http_profile = http_get(base, other, f"/v1/profile?account={owner}")
                check(not error and status == 200, "foreign profile", answer=profile)
                for key in ("profile", "playbook_index", "account_id"):
                    check(profile[key] == http_profile[key], "profile as HTTP shows it", key=key)
                # Another owner's history: refused alike on both (no role_history).
                for past in ("history=true", "known_at=0", "as_of=1"):
                    name, value = past.split("=")
                    arg = {"history": True} if name == "history" else {name: int(value)}
                    refused, error = await call(session, "get_entity_timeline", entity="user", account=owner, **arg)
                    status, http_refused = http_get(base, other, f"/v1/entities/user/timeline?account={owner}&{past}")
                    check(error and refused["error"]["code"] == "history_not_allowed", "history refused over MCP", answer=refused, ask=past)
                    check(status == 403 and http_refused["error"]["code"] == "history_not_allowed", "history refused over HTTP", answer=http_refused, ask=past)
                timeline, error = await call(session, "get_entity_timeline", entity="user", account=owner)
                status, http_timeline = http_get(base, other, f"/v1/entities/user/timeline?account={owner}")
                check(not error and timeline["items"] == http_timeline["items"], "timeline as HTTP shows it")
                say("other_principal", profile_lines=len(profile["profile"].splitlines()), timeline_items=len(timeline["items"]), history="history_not_allowed")


async def over_stdio(binary):
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await tour(session, "stdio")
            await remember_then_search(session, "stdio")


def main():
    mode = sys.argv[1]
    if mode == "http":
        asyncio.run(over_http(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None))
    elif mode == "stdio":
        asyncio.run(over_stdio(sys.argv[2]))
    else:
        sys.exit(f"unknown mode {mode}")
    say("ok")


if __name__ == "__main__":
    main()

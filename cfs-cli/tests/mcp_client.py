"""`cfs serve --mcp` driven by the official Python MCP client (PyPI `mcp`).

Usage: mcp_client.py PATH/TO/cfs

Two servers on one indexed tree: one with --watch (edits, a rename and a delete must
show within the debounce window), one without (it follows commits of other processes,
refreshes named files, and survives its store being deleted and made again); then one
over HTTP (`--http 127.0.0.1:0`) on another tree: two sessions at once, a foreign Host
or an Origin refused, other paths 404, Ctrl-C ends it. Prints one line per check and a
closing 'N passed, N failed'; exits 1 on any failure.
"""

import asyncio
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
import http.client
import signal

CFS = os.path.abspath(sys.argv[1])
# Longest wait for an edit to show: the watcher's debounce (50 ms quiet, 1 s at most)
# plus a sync, with room for a loaded machine.
WINDOW_S = 10.0
results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)
    return ok


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def cfs(*args, cwd=None):
    out = subprocess.run([CFS, *args], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"cfs {' '.join(args)}: {out.stderr}")
    return out.stdout


def make_tree(root):
    write(root, "src/lib.rs", "/// Parses a config file.\npub fn parse_config() {}\n\n"
          "/// Opens a socket.\npub fn open_socket() {}\n")
    write(root, "guide.md", "# Guide\n\nInstall the platypus tool first.\n\n"
          "## Use\n\nRun it daily.\n")
    write(root, "api/handler.py", "def handle(request):\n    \"\"\"Answer one request.\"\"\"\n"
          "    return request\n")
    write(root, ".cfs/collections.yaml", "collections:\n  - name: backend\n"
          "    description: Request handlers\n    pathContext:\n      \"api/\": HTTP API\n")
    cfs("index", root, "--embedder", "hash", "--json")


async def call(session, tool, **args):
    """(structured answer, is_error, text) of one tool call."""
    r = await session.call_tool(tool, args)
    text = "".join(getattr(c, "text", "") for c in r.content)
    return r.structured_content, r.is_error, text


async def wait_for(session, predicate, query, **args):
    """Seconds until `predicate(answer)` holds for search(query), or None."""
    started = time.monotonic()
    while time.monotonic() - started < WINDOW_S:
        answer, err, _ = await call(session, "search", query=query, **args)
        if not err and predicate(answer):
            return time.monotonic() - started
        await asyncio.sleep(0.05)
    return None


def paths(answer):
    return [r["path"] for r in answer["results"]]


async def basics(session, root):
    tools = (await session.list_tools()).tools
    names = {t.name for t in tools}
    check("lists the seven tools", names == {"search", "context", "get_chunk", "get_file",
                                              "status", "refresh", "collections"}, names)
    search_tool = next(t for t in tools if t.name == "search")
    props = set(search_tool.input_schema["properties"])
    check("search schema", {"query", "k", "mode", "path", "collection", "lang", "kind",
                            "exact"} <= props and search_tool.input_schema.get("required") == ["query"],
          search_tool.input_schema)
    check("search has an output schema", search_tool.output_schema is not None)

    status, err, _ = await call(session, "status")
    check("status", not err and status["state"] == "ok" and status["counts"]["files"] == 3,
          status)
    root_hex = status["root"]
    answer, err, _ = await call(session, "search", query="parse config", k=3)
    check("search finds the function", not err and answer["results"][0]["path"] == "src/lib.rs"
          and answer["results"][0]["start_line"] == 1, answer)
    check("search names the served root", answer["root"] == root_hex, answer["root"])
    first = answer["results"][0]
    chunk, err, _ = await call(session, "get_chunk", id=first["chunk_id"])
    check("get_chunk returns the text", not err and "parse_config" in chunk["text"]
          and chunk["path"] == "src/lib.rs" and chunk["root"] == root_hex, chunk)
    check("get_chunk names its neighbour", chunk.get("next") is not None
          and chunk["chunks_in_file"] == 2, chunk)
    nxt, err, _ = await call(session, "get_chunk", id=chunk["next"])
    check("the neighbour points back", not err and nxt["previous"] == first["chunk_id"]
          and "open_socket" in nxt["text"], nxt)
    file, err, _ = await call(session, "get_file", path="guide.md")
    check("get_file returns chunks in order", not err and len(file["chunks"]) == 2 and
          file["chunks"][0]["start_line"] < file["chunks"][1]["start_line"], file)
    ctx, err, text = await call(session, "context", query="parse config", tokens=200)
    check("context cites the function's lines", not err and ctx["root"] == root_hex
          and ctx["files"][0]["path"] == "src/lib.rs"
          and ctx["files"][0]["spans"][0]["start_line"] == 1
          and "parse_config" in text and text.startswith("src/lib.rs:1-"), text)
    check("context's text reaches the model once", not err and "text" not in ctx
          and all("text" not in s for f in ctx["files"] for s in f["spans"]), ctx)
    check("context keeps to its budget", not err and 0 < ctx["tokens"] <= 200, ctx)
    cols, err, _ = await call(session, "collections")
    backend = [c for c in cols["collections"] if c["name"] == "backend"] if not err else []
    check("collections", backend and backend[0]["files"] == 1
          and backend[0]["description"] == "Request handlers", cols)
    answer, err, _ = await call(session, "search", query="request", collection="backend")
    check("search by collection", not err and paths(answer) == ["api/handler.py"], answer)

    for args, says in [
        (dict(tool="search", query="x", mode="fuzzy"), "mode"),
        (dict(tool="search", query="x", k=0), "k must be"),
        (dict(tool="context", query="x", tokens=10), "tokens must be 64 to"),
        (dict(tool="context", query="x", budget=100), "unknown field `budget`"),
        (dict(tool="get_chunk", id="not-an-id"), "not a chunk id"),
        (dict(tool="get_chunk", id="0" * 32), "no chunk"),
        (dict(tool="get_file", path="nowhere.md"), "no file"),
        (dict(tool="refresh", paths=[]), "names no file"),
        (dict(tool="refresh", paths=["/etc/passwd"]), "outside the indexed tree"),
        (dict(tool="refresh", paths=[""]), "empty path"),
        (dict(tool="search", query="x", language="go"), "unknown field `language`"),
        (dict(tool="get_file", path="guide.md", lines="1-2"), "unknown field `lines`"),
    ]:
        tool = args.pop("tool")
        _, err, text = await call(session, tool, **args)
        check(f"bad argument is a tool error: {tool} {args}", err and says in text, text)


async def watched(session, root):
    write(root, "guide.md", "# Guide\n\nFeed the zebrafish first.\n\n## Use\n\nRun it daily.\n")
    seconds = await wait_for(session, lambda a: paths(a)[:1] == ["guide.md"],
                             "zebrafish", mode="text")
    check("an edit shows within the window", seconds is not None, "zebrafish not found")
    gone = await wait_for(session, lambda a: a["results"] == [], "platypus", mode="text")
    check("the edited-out text is gone", gone is not None)
    os.rename(os.path.join(root, "guide.md"), os.path.join(root, "manual.md"))
    seconds = await wait_for(session, lambda a: paths(a)[:1] == ["manual.md"],
                             "zebrafish", mode="text")
    check("a rename shows", seconds is not None)
    _, err, _ = await call(session, "get_file", path="guide.md")
    check("the old path is gone", err)
    os.remove(os.path.join(root, "manual.md"))
    seconds = await wait_for(session, lambda a: a["results"] == [], "zebrafish", mode="text")
    check("a delete shows", seconds is not None)
    status, _, _ = await call(session, "status")
    check("status says watching", status["watching"] is True and status["counts"]["files"] == 2,
          status)


async def unwatched(session, root):
    before, _, _ = await call(session, "status")
    write(root, "other.md", "# Other\n\nA quokka lives here.\n")
    cfs("refresh", "other.md", cwd=root)
    answer, err, _ = await call(session, "search", query="quokka", mode="text")
    check("follows a commit of another process", not err and paths(answer) == ["other.md"]
          and answer["root"] != before["root"], answer)
    write(root, "wombat.md", "# Wombat\n\nBurrows.\n")
    done, err, text = await call(session, "refresh", paths=["wombat.md"])
    check("refresh tool", not err and done["added"] == 1, text)
    answer, err, _ = await call(session, "search", query="burrows", mode="text")
    check("a refreshed file is searchable", not err and paths(answer) == ["wombat.md"]
          and answer["root"] == done["root"], answer)

    shutil.rmtree(os.path.join(root, ".cfs"))
    status, err, text = await call(session, "status")
    check("a deleted store is a state, not a crash", not err and status["state"] == "missing",
          text)
    _, err, text = await call(session, "search", query="quokka")
    check("searching a deleted store is a tool error", err and "gone" in text, text)
    cfs("index", root, "--embedder", "hash", "--json")
    answer, err, text = await call(session, "search", query="quokka", mode="text")
    check("a store made again is served", not err and paths(answer) == ["other.md"], text)

    store = os.path.join(root, ".cfs", "store.redb")
    with open(store + ".new", "wb") as f:
        f.write(b"not a store" * 1000)
    os.replace(store + ".new", store)
    status, err, text = await call(session, "status")
    check("a store replaced by a bad file is a state", not err
          and status["state"] == "replaced" and status["problem"], text)
    _, err, text = await call(session, "search", query="quokka")
    check("searching a bad store is a tool error", err and "store.redb" in text, text)
    status, _, _ = await call(session, "status")
    check("a replaced store stays replaced", status["state"] == "replaced", status)


async def serve(args, cwd, body, root):
    params = StdioServerParameters(command=CFS, args=["serve", "--mcp", *args], cwd=cwd)
    with tempfile.TemporaryFile("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write_):
            async with ClientSession(read, write_) as session:
                init = await session.initialize()
                check("initialize", init.server_info.name == "cfs", init.server_info)
                await body(session, root)
        errlog.seek(0)
        err = errlog.read()
        check("nothing but notes on stderr", "panicked" not in err, err)


def raw_post(port, headers, host="127.0.0.1"):
    """Status of a bare initialize POST to the HTTP server with extra `headers`."""
    conn = http.client.HTTPConnection(host, port, timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    conn.request("POST", "/mcp", body, {"Content-Type": "application/json",
                                        "Accept": "application/json, text/event-stream",
                                        **headers})
    status = conn.getresponse().status
    conn.close()
    return status


async def over_http(tmp):
    root = os.path.join(tmp, "http-tree")
    make_tree(root)
    cfs("index", root, "--embedder", "hash", "--json")
    out = subprocess.run([CFS, "serve", "--mcp", root, "--http", "0.0.0.0:0"],
                         capture_output=True, text=True, timeout=30)
    check("http: a non-loopback address is refused", out.returncode == 1
          and "loopback" in out.stderr, out.stderr)
    server = subprocess.Popen([CFS, "serve", "--mcp", root, "--http", "127.0.0.1:0"],
                              stderr=subprocess.PIPE, text=True)
    line = server.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
    if not check("http: says where it listens", found, line):
        server.kill()
        return
    port = int(found.group(1))
    url = f"http://127.0.0.1:{port}/mcp"

    async def one(query):
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                init = await session.initialize()
                answer, err, text = await call(session, "search", query=query, k=1)
                return init.server_info.name, (answer["results"][0]["path"] if not err else text)

    # The client warns when a session's end is not answered as a DELETE done.
    warned = []

    class Catch(logging.Handler):
        def emit(self, record):
            if "Session termination failed" in record.getMessage():
                warned.append(record.getMessage())

    catch = Catch()
    logging.getLogger("mcp").addHandler(catch)
    both = await asyncio.gather(one("parse config"), one("platypus"))
    check("http: two sessions at once", both == [("cfs", "src/lib.rs"), ("cfs", "guide.md")],
          both)
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            ctx, err, text = await call(session, "context", query="parse config", tokens=300)
            check("http: context", not err and ctx["files"][0]["path"] == "src/lib.rs"
                  and text.startswith("src/lib.rs:"), text)
    logging.getLogger("mcp").removeHandler(catch)
    check("http: sessions end as a DELETE done", not warned, warned)
    check("http: a plain request is answered", raw_post(port, {}) == 200)
    check("http: a foreign Host is refused", raw_post(port, {"Host": "evil.example"}) >= 400)
    check("http: a web page's Origin is refused",
          raw_post(port, {"Origin": "http://evil.example"}) >= 400)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/")
    check("http: other paths are 404", conn.getresponse().status == 404)
    conn.close()
    server.send_signal(signal.SIGINT)
    try:
        code = server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        code = None
    rest = server.stderr.read()
    check("http: Ctrl-C ends it cleanly", code == 0 and "panicked" not in rest, (code, rest))
    # Another loopback address answers at its own name.
    other = subprocess.Popen([CFS, "serve", "--mcp", root, "--http", "127.0.0.2:0"],
                             stderr=subprocess.PIPE, text=True)
    found = re.search(r"http://127\.0\.0\.2:(\d+)/mcp", other.stderr.readline())
    status = raw_post(int(found.group(1)), {}, host="127.0.0.2") if found else None
    check("http: 127.0.0.2 answers at its own address", status == 200, status)
    other.send_signal(signal.SIGINT)
    try:
        other.wait(timeout=10)
    except subprocess.TimeoutExpired:
        other.kill()


async def main():
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "tree")
        make_tree(root)

        async def first(session, root):
            await basics(session, root)
            await watched(session, root)

        await serve([root, "--watch"], tmp, first, root)
        await serve([], root, unwatched, root)
        await over_http(tmp)
    print(f"mcp: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

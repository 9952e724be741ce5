"""`cfs serve --mcp --db` driven by the official Python MCP client (PyPI `mcp`).

Usage: mcp_db_client.py PATH/TO/cfs PRIMARY_URL [STANDBY_URL]

Two trees are indexed and published into the primary as repositories of a new
database; a server on the standby (or the primary without one) must list them with
their heads, answer searches across both and within one exactly as `cfs search --db`
does, prove answers when asked, and refuse what it does not serve. Prints one line per
check and a closing 'N passed, N failed'; exits 1 on any failure.
"""

import asyncio
import json
import re
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CFS = os.path.abspath(sys.argv[1])
# The psql of the PostgreSQL that scripts/pg runs, else one on the PATH.
HERE = os.path.dirname(os.path.abspath(__file__))
PSQL = os.path.join(HERE, "..", "..", ".cache", "pg", "root", "pgserver", "pginstall", "bin", "psql")
PSQL = PSQL if os.path.exists(PSQL) else "psql"
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
    return json.loads(out.stdout) if "--json" in args else out.stdout


def with_db(url, name):
    """`url` naming the database `name`."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def make_trees(tmp):
    api, web = os.path.join(tmp, "api"), os.path.join(tmp, "web")
    write(api, "src/config.rs", "/// Parses a config file.\npub fn parse_config() {}\n")
    write(api, "src/net.rs", "/// Opens a socket and listens.\npub fn open_socket() {}\n")
    # A function long enough to be chunked in windows, which begin and end inside lines.
    # Its one rare word sits in a middle window, so that window alone answers it.
    lines = "".join(f"    let ledger_row_{i} = tally(ledger, {i});\n" if i != 230
                    else "    let zebra_quota = tally(ledger, 230);\n" for i in range(400))
    write(api, "src/ledger.rs", f"pub fn tally_ledger_rows() {{\n{lines}}}\n")
    write(web, "app/router.py", "def route(request):\n    \"\"\"Send a request to its handler.\"\"\"\n"
          "    return request\n")
    write(web, "docs/guide.md", "# Guide\n\nParse the config file before you open a socket.\n")
    for tree in (api, web):
        cfs("index", tree, "--embedder", "hash", "--json")
    return api, web


def wait_replayed(primary, standby):
    """Waits until the standby has replayed what the primary committed."""
    lsn = subprocess.run([PSQL, primary, "-Atc", "SELECT pg_current_wal_lsn()"],
                         capture_output=True, text=True)
    if lsn.returncode != 0:
        time.sleep(2)
        return
    for _ in range(300):
        ok = subprocess.run([PSQL, standby, "-Atc",
                             f"SELECT pg_last_wal_replay_lsn() >= '{lsn.stdout.strip()}'"],
                            capture_output=True, text=True)
        if ok.stdout.strip() == "t":
            return
        time.sleep(0.1)


async def call(session, tool, **args):
    r = await session.call_tool(tool, args)
    text = "".join(getattr(c, "text", "") for c in r.content)
    return r.structured_content, r.is_error, text


async def checks(session, url, api, web):
    status, err, text = await call(session, "status")
    names = sorted(r["repo"] for r in (status or {}).get("repos", []))
    check("status lists the repositories", not err and names == ["api", "web"], text)
    query = "parse the config file"
    answer, err, text = await call(session, "search", query=query, k=5)
    check("search answers", not err and answer["results"], text)
    if err:
        return
    expected = cfs("search", query, "--db", url, "-k", "5", "--json")
    same = [(r["repo"], r["path"], r["start_line"], r["score"]) for r in answer["results"]] == \
        [(h["repo"], h["path"], h["start_line"], h["score"]) for h in expected["hits"]]
    check("search equals cfs search --db", same, (answer, expected))
    check("results come from both repositories",
          {r["repo"] for r in answer["results"]} == {"api", "web"}, answer)
    heads = {h["repo"]: h["root"] for h in answer["heads"]}
    check("heads are the published roots",
          heads == {r["repo"]: r["root"] for r in status["repos"]}, (heads, status))
    one, err, text = await call(session, "search", query=query, repos=["web"],
                                check_answers=True)
    check("one repository, proved", not err and one["results"]
          and all(r["repo"] == "web" and r["proved"] for r in one["results"]), text)
    _, err, text = await call(session, "search", query=query, repos=["nope"])
    check("an unknown repository is an error naming it", err and "nope" in text, text)
    _, err, text = await call(session, "search", query=query, repos=[])
    check("an empty repository list is an error, not every repository",
          err and "names no repository" in text, text)
    _, err, text = await call(session, "search", query=query, k=0)
    check("a bad k is an error", err and "k must be" in text, text)

    ctx, err, text = await call(session, "context", query=query, tokens=300)
    check("context answers from both repositories", not err
          and {f["repo"] for f in ctx["files"]} == {"api", "web"}
          and 0 < ctx["tokens"] <= 300 and "text" not in ctx, text)
    check("context cites [REPO] PATH:LINES", not err
          and text.split(" ")[0] in ("[api]", "[web]"), text)
    cli = cfs("context", query, "--db", url, "--tokens", "300", "--json")
    check("context equals cfs context --db", cli["text"] == text
          and cli["tokens"] == ctx["tokens"], (cli, ctx))
    # One repository's context from the database is its store's, cited under its name.
    # One repository's context from the database is its store's, windows of a long
    # function (which begin and end inside lines) included.
    rare = "zebra quota"
    one, err, text = await call(session, "context", query=rare, tokens=2500, repos=["api"])
    local = cfs("context", rare, "--tokens", "2500", "--json", cwd=api)
    spans = lambda files: [(f["path"], s["start_line"], s["end_line"], s["chunk_ids"])
                           for f in files for s in f["spans"]]
    windows = [s for f in local["files"] if f["path"] == "src/ledger.rs" for s in f["spans"]
               if s["start_line"] > 1 and s["text"].startswith("    let ")]
    check("the store's context holds a middle window, widened to whole lines", windows, local)
    check("a repository's context is its store's", not err
          and spans(one["files"]) == spans(local["files"])
          and re.sub(r"(?m)^\[api\] (?=\S+:\d+-\d+)", "", text) == local["text"], (one, local))
    _, err, text = await call(session, "context", query=query, tokens=10)
    check("a bad budget is an error", err and "budget" in text, text)


async def main():
    primary = sys.argv[2]
    standby = sys.argv[3] if len(sys.argv) > 3 else None
    name = f"cfs_mcp_{os.getpid()}"
    subprocess.run([PSQL, primary, "-c", f"CREATE DATABASE {name}"], check=True,
                   capture_output=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            api, web = make_trees(tmp)
            url = with_db(primary, name)
            for tree, repo in ((api, "api"), (web, "web")):
                cfs("publish", url, "--repo", repo, "--json", cwd=tree)
            served = url
            if standby:
                wait_replayed(url, with_db(standby, name))
                served = with_db(standby, name)
            params = StdioServerParameters(command=CFS, args=["serve", "--mcp", "--db", served])
            with tempfile.TemporaryFile("w+") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write_):
                    async with ClientSession(read, write_) as session:
                        init = await session.initialize()
                        check("initialize", init.server_info.name == "cfs", init.server_info)
                        await checks(session, url, api, web)
                errlog.seek(0)
                err = errlog.read()
                check("nothing but notes on stderr",
                      "panicked" not in err and "internal failure" not in err, err)
    finally:
        subprocess.run([PSQL, primary, "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"],
                       capture_output=True)
    print(f"mcp --db: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

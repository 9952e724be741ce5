#!/usr/bin/env python3
"""Share of a file's top-level definitions that cfs chunks as their own chunk, and the
size of its chunks, per language, on real trees (issue 33's chunking bar).

    python3 bench/definition_share.py CHUNK_LINES TREE [TREE ...] [--misses N] [--json F]
        [--names DIR [--per-tree N]]

CHUNK_LINES is `bench/target/release/chunk_lines`. The definitions come from a source
independent of cfs's chunker: Universal Ctags (installed with apt-get when missing; run
with `--fields=+neKZl`) for the languages it reads, and a line rule for the four it
does not (Scala, Dart, Swift, Zig: a definition keyword at the start of a line, outside
any block). A definition is *top-level* when ctags gives it no scope, or a namespace-like one
where the language wraps whole files in it (a Go package, a C++, C# or PHP namespace,
a Ruby or Elixir module; Go's methods count as top-level). Rust's inline `mod` and
OCaml's nested modules are containers, as classes are: their members are not counted. It *comes out as its own chunk* when a
chunk's symbol has its name (the last segment, an Erlang or Elixir arity dropped) and
the chunk's lines hold the definition's first line, or when one chunk holds the whole
definition (ctags's end line) and no other starts in it. Files cfs chunks as text count
their definitions as not their own chunk. Generated files (a `DO NOT EDIT`, `@generated`
or `AUTO GENERATED` banner in their first 2 KB) are left out: their definitions are not
what the goal is about, and the line rule misreads them.

In Rust, Kotlin, Lua, JavaScript, OCaml,
Haskell, R, shell, C and Go a definition whose line starts with white space is nested,
not top-level, whatever scope ctags gives it (it gives none to many members, closures
and local functions). A Kotlin file declaring a function named in backticks (`fun `a test``) has no
definitions here: ctags's Kotlin parser names some of those with memory it never set,
differently on every run, and then keeps or drops the scopes of what follows. The
oracle is approximate: ctags reports some members (Kotlin's, Rust's associated
types) and nested functions (Lua's in tables, OCaml's local lets) without a scope, which
count here as top-level definitions cfs "misses"; `--misses N` lists a sample of misses
to check by hand.

`--names DIR` also writes, for each TREE, `DIR/<tree's folder name>.tsv`: `name<TAB>path`
lines of top-level definitions whose name (5 characters or more) the oracle lists once
in the tree, at most N a tree (`--per-tree`, default 200) chosen by a hash of the name,
for `name_lookup` (where each definition's file ranks when its bare name is searched).
"""

import collections
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

NS = {"top", "namespace", "package", "module"}

# cfs's language -> {ctags kind: scope kinds allowed ("top": none)}.
CTAGS_RULES = {
    "c": {"function": {"top"}},
    "cpp": {k: {"top", "namespace"} for k in ("function", "class", "struct")},
    "csharp": {k: {"top", "namespace"} for k in ("class", "interface", "struct", "enum")},
    "go": {"func": {"package", "struct", "type", "unknown"},
           **{k: {"package"} for k in ("struct", "interface", "type")}},
    "java": {k: {"top"} for k in ("class", "interface", "enum", "annotation")},
    "javascript": {k: {"top"} for k in ("function", "class")},
    "typescript": {k: {"top", "namespace"} for k in ("function", "class", "interface", "enum")},
    "tsx": {k: {"top", "namespace"} for k in ("function", "class", "interface", "enum")},
    "kotlin": {k: {"top", "package"} for k in ("class", "interface", "object", "method")},
    "objc": {k: {"top"} for k in ("interface", "implementation", "protocol", "function")},
    "php": {k: {"top", "namespace"} for k in ("class", "interface", "trait", "function")},
    "python": {k: {"top"} for k in ("function", "class")},
    "ruby": {k: {"top", "module"} for k in ("class", "module", "method", "singletonMethod")},
    "rust": {k: {"top"}
             for k in ("function", "struct", "enum", "implementation", "interface", "typedef")},
    "elixir": {"function": {"module"}, "macro": {"module"}, "module": {"top", "module"},
               "protocol": {"top"}, "implementation": {"top", "module"}},
    "erlang": {"function": {"module", "top"}, "record": {"top"}, "type": {"top"}},
    "haskell": {k: {"top"} for k in ("function", "type")},
    "julia": {k: {"top", "module"} for k in ("function", "struct", "macro")},
    "lua": {"function": {"top"}},
    "ocaml": {"function": {"top"}, "type": {"top"}, "class": {"top"}, "module": {"top"}},
    "r": {"function": {"top"}},
    "shell": {"function": {"top"}},
}

MODS = r"(?:(?:private|protected)(?:\[[\w.]+\])?\s+|(?:final|sealed|abstract|implicit|case|lazy|open|inline|opaque|transparent|override)\s+)*"
LINE_RULES = {
    "scala": re.compile(MODS + r"(?:class|object|trait|enum|def|type|given)\s+([A-Za-z_][\w]*)"),
    "dart": re.compile(
        r"(?:(?:abstract|base|final|sealed|interface|mixin)\s+)*(?:class|mixin|enum|extension type|extension|typedef)\s+([A-Za-z_]\w*)"
        r"|(?:[A-Za-z_][\w<>?,\[\] ]*\s+)?([a-z_]\w*)\s*(?:<[^>()]*>)?\([^;]*$"),
    "swift": re.compile(
        r"(?:(?:public|private|internal|fileprivate|open|final|@\w+(?:\([^)]*\))?)\s+)*"
        r"(?:class|struct|enum|protocol|extension|func|actor|typealias)\s+([A-Za-z_][\w.]*)"),
    "zig": re.compile(
        r"(?:pub\s+)?(?:export\s+|inline\s+|extern\s+)?fn\s+([A-Za-z_]\w*)"
        r"|(?:pub\s+)?const\s+([A-Za-z_]\w*)\s*=\s*(?:extern\s+|packed\s+)?(?:struct|enum|union|opaque)\b"),
}
NOT_NAMES = {"if", "for", "while", "switch", "return", "import", "export", "part", "library", "main"}


def last_segment(name):
    name = re.sub(r"/\d+$", "", name or "")
    name = re.sub(r"\{.*\}$|\(.*\)$", "", name)
    return re.split(r"::|\.|#|\\|/|:", name)[-1]


# Names ctags makes up for what has none.
MADE_UP = re.compile(r"^(?:AnonymousFunction|<lambda>|__anon)")


def ensure_ctags():
    if shutil.which("ctags"):
        return
    print("definition_share: installing universal-ctags with apt-get", file=sys.stderr)
    subprocess.run(["apt-get", "install", "-y", "-q", "universal-ctags"], check=True)


GENERATED = re.compile(r"DO NOT EDIT|@generated|AUTO GENERATED|Code generated .* DO NOT", re.I)


def generated(path):
    with open(path, "rb") as f:
        return bool(GENERATED.search(f.read(2048).decode("utf-8", "replace")))


def ctags_tags(tree):
    """Tags of every file under tree, by path relative to it."""
    out = subprocess.run(
        ["ctags", "-R", "--output-format=json", "--fields=+neKZl", "--extras=-F", "-f", "-", "."],
        cwd=tree, capture_output=True, encoding="utf-8", errors="replace", check=True).stdout
    tags = collections.defaultdict(list)
    for line in filter(None, out.split("\n")):
        try:
            t = json.loads(line)
        except json.JSONDecodeError:
            continue  # a tag whose pattern ctags did not escape
        if t.get("_type") == "tag":
            tags[os.path.normpath(t["path"])].append(t)
    # Universal Ctags 5.9 names some Kotlin functions written in backticks with bytes of
    # memory it never set, different on every run, and then drops or keeps the scope of
    # what follows them at random: the tags of a Kotlin file holding one are left out.
    return {p: ts for p, ts in tags.items() if not backtick_functions(tree, p)}


def backtick_functions(tree, path):
    """True for a Kotlin file declaring a function named in backticks (`fun `a b``)."""
    if not path.endswith((".kt", ".kts")):
        return False
    with open(os.path.join(tree, path), "rb") as f:
        return b"fun `" in f.read()


def file_stem(path):
    return os.path.basename(path).split(".")[0].lower()


# Languages whose top-level definitions start at a line's first column, by their usual
# style or their own rules (gofmt, Haskell's layout): an indented one is nested, whatever
# scope ctags gives it (it gives none to many members and local functions).
COLUMN_ZERO = {"rust", "kotlin", "lua", "javascript", "ocaml", "haskell", "r", "shell", "c", "go"}


def indented(tag):
    """True when ctags's pattern for the tag shows its line starting with white space."""
    pattern = tag.get("pattern", "")
    return pattern.startswith("/^") and pattern[2:3] in (" ", "\t")


def ctags_definitions(language, tags):
    rules = CTAGS_RULES.get(language, {})
    defs = []
    for t in tags:
        scopes = rules.get(t.get("kind"))
        if scopes is None or (language in COLUMN_ZERO and indented(t)):
            continue
        scope = t.get("scopeKind", "top") if "scope" in t else "top"
        # OCaml's ctags names each file's own module, the file, as a module at line 1.
        own_module = t["kind"] == "module" and t["name"].lower() == file_stem(t["path"])
        if scope in scopes and not MADE_UP.match(t["name"]) and not own_module:
            defs.append((last_segment(t["name"]), t["line"], t["kind"], t.get("end")))
    return defs


def line_definitions(language, path):
    rule = LINE_RULES[language]
    defs, depth = [], 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if depth == 0 and line[:1].strip() and not line.startswith(("//", "/*", "*", "@")):
                m = rule.match(line)
                name = m and next((g for g in m.groups() if g), None)
                if name and name not in NOT_NAMES:
                    defs.append((last_segment(name), n, "line", None))
            code = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|//.*', "", line)
            depth = max(0, depth + code.count("{") - code.count("}"))
    return defs


def symbol_name(symbol):
    """A chunk symbol's own name: `IntoResponse for Json<T>` is `Json`."""
    symbol = symbol.split(" for ")[-1]
    return last_segment(re.sub(r"<.*>$|\[.*\]$", "", symbol).strip())


def own_chunk(name, line, end, chunks, starts):
    """A chunk named after the definition holds its first line, or one chunk holds the
    whole of it (`end`, when known) and no other definition starts in it."""
    for c in chunks:
        if not c["start"] <= line <= c["end"]:
            continue
        if c["symbol"] is not None and symbol_name(c["symbol"]) == name:
            return True
        if end is not None and end <= c["end"]:
            others = [s for s in starts if c["start"] <= s <= c["end"] and s != line]
            if not others:
                return True
    return False


def percentile(sorted_values, p):
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


def new_tally():
    return {"files": 0, "parsed": 0, "defs": 0, "own": 0, "as_text": 0, "defs_as_text": 0,
            "symbol_bytes": [], "all_bytes": [], "misses": []}


def definitions_of(language, tree, path, tags):
    if language in LINE_RULES:
        return line_definitions(language, os.path.join(tree, path))
    return ctags_definitions(language, tags.get(os.path.normpath(path), []))


def add_file(s, where, row, defs):
    """Counts one file's chunks and definitions into its language's tally `s`."""
    chunks = row["chunks"]
    as_text = not any(c["symbol"] for c in chunks)
    s["files"] += 1
    s["parsed"] += row.get("language") is not None
    s["as_text"] += as_text
    s["defs_as_text"] += len(defs) * as_text
    s["all_bytes"] += [c["bytes"] for c in chunks]
    s["symbol_bytes"] += [c["bytes"] for c in chunks if c["symbol"]]
    starts = [d[1] for d in defs]
    for name, line, kind, end in defs:
        s["defs"] += 1
        if own_chunk(name, line, end, chunks, starts):
            s["own"] += 1
        else:
            s["misses"].append(f"{where}:{line} {kind} {name}")


def chunked_files(chunk_lines, tree):
    """cfs's chunks of every file under tree (`chunk_lines` rows)."""
    paths = [os.path.relpath(os.path.join(d, f), tree)
             for d, _, fs in os.walk(tree) if "/.git" not in d + "/" for f in fs]
    run = subprocess.run([chunk_lines, tree], input="\n".join(paths) + "\n",
                         capture_output=True, encoding="utf-8", check=True)
    return [json.loads(line) for line in filter(None, run.stdout.split("\n"))]


def measure(chunk_lines, trees, names_dir=None, per_tree=200):
    langs = collections.defaultdict(new_tally)
    for tree in trees:
        tags = ctags_tags(tree)
        defined = collections.defaultdict(set)
        for row in chunked_files(chunk_lines, tree):
            language = row.get("language") or language_of_unparsed(row["path"])
            if language is None or "error" in row or generated(os.path.join(tree, row["path"])):
                continue
            defs = definitions_of(language, tree, row["path"], tags)
            add_file(langs[language], f"{os.path.basename(tree)}/{row['path']}", row, defs)
            for name, *_ in defs:
                defined[name].add(row["path"])
        if names_dir:
            write_names(os.path.join(names_dir, os.path.basename(tree) + ".tsv"), defined, per_tree)
    return langs


def write_names(out, defined, most):
    """The names defined in one file only, 5 characters or more, `most` of them by hash."""
    once = [(name, next(iter(paths))) for name, paths in defined.items()
            if len(paths) == 1 and len(name) >= 5]
    once.sort(key=lambda np: hashlib.blake2b(np[0].encode()).hexdigest())
    with open(out, "w") as f:
        for name, path in sorted(once[:most]):
            f.write(f"{name}\t{path}\n")


EXTENSIONS = {".c": "c", ".cc": "cpp", ".cpp": "cpp", ".cs": "csharp", ".go": "go",
              ".java": "java", ".js": "javascript", ".ts": "typescript", ".kt": "kotlin",
              ".m": "objc", ".php": "php", ".py": "python", ".rb": "ruby", ".rs": "rust",
              ".ex": "elixir", ".erl": "erlang", ".hs": "haskell", ".jl": "julia",
              ".lua": "lua", ".ml": "ocaml", ".R": "r", ".sh": "shell", ".scala": "scala",
              ".dart": "dart", ".swift": "swift", ".zig": "zig"}


def language_of_unparsed(path):
    """The language of a file cfs chunked as text, by its extension (for the count of
    definitions it did not chunk as their own)."""
    return EXTENSIONS.get(os.path.splitext(path)[1])


def print_table(langs, misses):
    """Prints the table and a sample of `misses` misses a language; returns the report."""
    print("| language | files (without a symbol) | top-level definitions (in files without a symbol) | as their own chunk | symbol chunks, bytes p10 / median / p90 | every chunk, median |")
    print("|---|---|---|---:|---|---:|")
    report = {}
    for lang in sorted(langs):
        s = langs[lang]
        sb, ab = sorted(s["symbol_bytes"]), sorted(s["all_bytes"])
        share = s["own"] / s["defs"] if s["defs"] else 0.0
        print(f"| {lang} | {s['files']} ({s['as_text']}) | {s['defs']} ({s['defs_as_text']}) | {s['own']} ({100 * share:.1f}%) "
              f"| {percentile(sb, .1)} / {percentile(sb, .5)} / {percentile(sb, .9)} | {percentile(ab, .5)} |")
        report[lang] = {k: v for k, v in s.items() if not k.endswith("_bytes") and k != "misses"}
        report[lang] |= {"share": share, "symbol_bytes_p10_p50_p90": [percentile(sb, p) for p in (.1, .5, .9)]}
    for lang in sorted(langs):
        every = langs[lang]["misses"]
        for m in every[:: max(1, len(every) // misses)] if misses else []:
            print(f"miss {lang}: {m}")
    return report


def main():
    args = sys.argv[1:]
    misses = int(args[args.index("--misses") + 1]) if "--misses" in args else 0
    out = args[args.index("--json") + 1] if "--json" in args else None
    positional = [a for i, a in enumerate(args)
                  if not a.startswith("--")
                  and (i == 0 or args[i - 1] not in ("--misses", "--json", "--names", "--per-tree"))]
    chunk_lines, trees = positional[0], positional[1:]
    names_dir = args[args.index("--names") + 1] if "--names" in args else None
    per_tree = int(args[args.index("--per-tree") + 1]) if "--per-tree" in args else 200
    ensure_ctags()
    langs = measure(chunk_lines, trees, names_dir, per_tree)
    report = print_table(langs, misses)
    if out:
        with open(out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()

//! Ranking for code over a real store: a name finds its definition before its uses
//! (parsed symbols and names declared on the lines of code chunked as text), files named
//! after the query gain, tests and docs weigh less unless asked for, file answers and
//! role filters, diversity in chunk lists, and the same answers from the index file as
//! from memory and on any thread count.

use std::path::Path;

use cfs_ingest::{HashEmbedder, Role};
use cfs_search::{FileHit, Filter, Hit, IndexOptions, Mode, Query, Ranking, SearchIndex};
use cfs_store::{Store, SyncOptions};

use crate::support::{settings, write};

/// A small repository: a Rust trait defined once and used in many places, a Java
/// class chunked as text, its test, docs and an example about the same things.
fn repo(root: &Path) {
    write(
        root,
        "src/response/into_response.rs",
        "/// Turns a value into a response.\npub trait IntoResponse {\n    fn into_response(self) -> Response;\n}\n",
    );
    for (i, name) in ["json", "html", "redirect", "status"].iter().enumerate() {
        write(
            root,
            &format!("src/response/{name}.rs"),
            &format!(
                "use crate::IntoResponse;\n\npub struct Kind{i};\n\nimpl IntoResponse for Kind{i} {{\n    fn into_response(self) -> Response {{\n        // IntoResponse for {name}: IntoResponse IntoResponse\n        Response::new()\n    }}\n}}\n"
            ),
        );
    }
    write(
        root,
        "src/main/java/org/x/Entities.java",
        "package org.x;\n\npublic class Entities {\n    public enum EscapeMode { base, extended }\n\n    static String escape(String s, EscapeMode mode) {\n        return s;\n    }\n}\n",
    );
    write(
        root,
        "src/main/java/org/x/Document.java",
        "package org.x;\n\npublic class Document {\n    Entities.EscapeMode escapeMode = Entities.EscapeMode.base;\n    // uses Entities.EscapeMode EscapeMode EscapeMode\n    Entities.EscapeMode mode() { return escapeMode; }\n}\n",
    );
    write(
        root,
        "src/retry.rs",
        "/// Waits longer before each new attempt.\npub fn backoff_delay(attempt: u32) -> u64 {\n    100 << attempt\n}\n",
    );
    write(
        root,
        "tests/retry.rs",
        "#[test]\nfn retry_backoff_retry_backoff_waits_longer() {\n    // retry backoff retry backoff attempt delay\n    assert!(backoff_delay(2) > backoff_delay(1));\n}\n",
    );
    write(
        root,
        "docs/retry.md",
        "# Retry with backoff\n\nEach retry waits longer: the backoff delay doubles per attempt. Retry backoff retry.\n",
    );
}

fn setup(root: &Path, db: &Path) -> (Store, HashEmbedder) {
    let options = SyncOptions::default();
    let embedder = HashEmbedder::default();
    let store = Store::create(&db.join("store.redb"), settings(&options, &embedder)).unwrap();
    store.sync(root, &options, &embedder, &|_| {}).unwrap();
    (store, embedder)
}

fn files(index: &SearchIndex, e: &HashEmbedder, query: Query) -> Vec<FileHit> {
    index.search_files(&query, e).unwrap()
}

fn paths(found: &[FileHit]) -> Vec<&str> {
    found.iter().map(|f| f.path.as_str()).collect()
}

#[test]
fn a_name_finds_its_definition_before_its_uses() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    repo(tree.path());
    let (store, e) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &e, IndexOptions::exact()).unwrap();
    for mode in [Mode::Text, Mode::Hybrid] {
        let found = files(&index, &e, Query::new("IntoResponse").mode(mode));
        assert_eq!(
            found[0].path,
            "src/response/into_response.rs",
            "{mode:?}: {:?}",
            paths(&found)
        );
        let first = &found[0].chunks[0];
        assert_eq!(first.symbol.as_deref(), Some("IntoResponse"));
        assert!(
            matches!(first.parts.definition, Some((1, 5))),
            "{:?}",
            first.parts
        );
        // Without definitions the uses, which say the name more often, come first.
        let plain = Query::new("IntoResponse")
            .mode(mode)
            .ranking(Ranking::plain());
        assert_ne!(
            files(&index, &e, plain)[0].path,
            "src/response/into_response.rs"
        );
    }
    // A Java enum nested in a class, qualified by its file's class: a declared name.
    let found = files(
        &index,
        &e,
        Query::new("Entities.EscapeMode").mode(Mode::Text),
    );
    assert_eq!(
        found[0].path,
        "src/main/java/org/x/Entities.java",
        "{:?}",
        paths(&found)
    );
    assert!(matches!(found[0].chunks[0].parts.definition, Some((1, 5))));
}

#[test]
fn a_name_that_begins_with_a_dollar_is_defined_under_it() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write(
        tree.path(),
        "src/core.ts",
        "export function $constructor(name: string) {\n  return name;\n}\n",
    );
    write(
        tree.path(),
        "src/types.ts",
        "export class ZodType {\n  constructor(def: string) {\n    // constructor constructor\n    this.def = def;\n  }\n}\n",
    );
    let (store, e) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &e, IndexOptions::exact()).unwrap();
    // The query's `$` is trimmed, so both define the name; a function before a method.
    let found = files(&index, &e, Query::new("$constructor").mode(Mode::Text));
    assert_eq!(found[0].path, "src/core.ts", "{:?}", paths(&found));
    let first = &found[0].chunks[0];
    assert_eq!(first.symbol.as_deref(), Some("$constructor"));
    assert!(
        matches!(first.parts.definition, Some((1, 5))),
        "{:?}",
        first.parts
    );
}

#[test]
fn among_equal_definitions_the_file_named_after_the_name_comes_first() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let names = [
        "HonoRequest",
        "HonoResponse",
        "HonoContext",
        "HonoRouter",
        "HonoEvent",
    ];
    let mut aliases = String::new();
    for name in names {
        let stem = name.trim_start_matches("Hono").to_lowercase();
        let class = format!("export class {name} {{\n  value = 1\n}}\n");
        write(tree.path(), &format!("src/{stem}.ts"), &class);
        aliases += &format!("export type {name} = {{ value: number }}\n\n");
    }
    write(tree.path(), "src/client/types.ts", &aliases);
    let (store, e) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &e, IndexOptions::exact()).unwrap();
    let mut id_order_differs = false;
    for name in names {
        let found = index
            .search(&Query::new(name).mode(Mode::Text).k(2), &e)
            .unwrap();
        let want = format!("src/{}.ts", name.trim_start_matches("Hono").to_lowercase());
        let defs: Vec<(&str, Option<(usize, u64)>)> = found
            .iter()
            .map(|h| (h.path.as_str(), h.parts.definition))
            .collect();
        // A class and a type alias: one kind group, one level, one role.
        assert_eq!(defs[0], (want.as_str(), Some((1, 5))), "{name}: {defs:?}");
        assert_eq!(
            defs[1],
            ("src/client/types.ts", Some((2, 5))),
            "{name}: {defs:?}"
        );
        id_order_differs |= found[0].chunk_id > found[1].chunk_id;
    }
    // Chunk ids alone would have put at least one alias first.
    assert!(id_order_differs);
}

/// Functions in many files saying a few words each in turn, so that files match a
/// query in several places at many depths of each list.
fn many_files(root: &Path) {
    let vocabulary = [
        "parse", "config", "retry", "backoff", "socket", "buffer", "cache", "token", "route",
        "header", "stream", "frame", "timer", "queue", "lock", "batch",
    ];
    let mut seed = 7u64;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    for f in 0..120 {
        let mut text = String::new();
        for g in 0..1 + next(6) {
            let mut body: Vec<&str> = (0..2 + next(8)).map(|_| vocabulary[next(16)]).collect();
            // Rare words, in fewer chunks than an answer of ten files could hold.
            if f % 31 == 3 && g == 0 {
                body.push("walrus");
            }
            if f % 37 == 5 && g == 0 {
                body.push("narwhal");
            }
            text += &format!("pub fn f{g}() {{\n    // {}\n}}\n\n", body.join(" "));
        }
        write(root, &format!("src/m{f}.rs"), &text);
    }
}

#[test]
fn a_shorter_answer_is_the_start_of_a_longer_one() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    many_files(tree.path());
    let (store, e) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &e, IndexOptions::exact()).unwrap();
    // With the hash embedder's fusion weight of 0, a rare word's few text matches
    // decide whether vectors are searched at all.
    let queries = [
        "parse config",
        "retry backoff socket",
        "cache token",
        "walrus narwhal",
    ];
    for words in queries {
        for mode in [Mode::Text, Mode::Hybrid] {
            let ten = files(&index, &e, Query::new(words).mode(mode).k(10));
            assert!(ten.len() >= 7, "{words}: {}", ten.len());
            for k in 1..10 {
                let some = files(&index, &e, Query::new(words).mode(mode).k(k));
                let want = &ten[..k.min(ten.len())];
                assert_eq!(paths(&some), paths(want), "{words} {mode:?} {k}");
            }
            // Chunk answers too, up to the twelve that share one depth.
            let ids = |k: usize| -> Vec<_> {
                let q = Query::new(words).mode(mode).k(k);
                index
                    .search(&q, &e)
                    .unwrap()
                    .into_iter()
                    .map(|h| h.chunk_id)
                    .collect()
            };
            let twelve = ids(12);
            for k in 1..12 {
                assert_eq!(
                    ids(k),
                    twelve[..k.min(twelve.len())],
                    "{words} {mode:?} {k}"
                );
            }
        }
    }
}

#[test]
fn tests_and_docs_weigh_less_unless_the_query_names_them() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    repo(tree.path());
    let (store, e) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &e, IndexOptions::exact()).unwrap();
    let found = files(
        &index,
        &e,
        Query::new("retry backoff delay").mode(Mode::Text),
    );
    assert_eq!(found[0].path, "src/retry.rs", "{:?}", paths(&found));
    assert_eq!(found[0].role, Role::Source);
    let roles: Vec<(&str, Role)> = found.iter().map(|f| (f.path.as_str(), f.role)).collect();
    assert!(roles.contains(&("tests/retry.rs", Role::Test)), "{roles:?}");
    assert!(roles.contains(&("docs/retry.md", Role::Docs)), "{roles:?}");
    // Without roles the test, which repeats the words, is first.
    let no_roles = Ranking {
        roles: false,
        ..Ranking::default()
    };
    let q = Query::new("retry backoff delay")
        .mode(Mode::Text)
        .ranking(no_roles);
    assert_eq!(files(&index, &e, q)[0].path, "tests/retry.rs");
    // A query that names tests finds the test first.
    let found = files(
        &index,
        &e,
        Query::new("retry backoff delay tests").mode(Mode::Text),
    );
    assert_eq!(found[0].path, "tests/retry.rs", "{:?}", paths(&found));
    // A role filter keeps that role only, in every mode, chunks and files alike.
    for mode in [Mode::Text, Mode::Vector, Mode::Hybrid] {
        let filter = Filter {
            role: Some(Role::Docs),
            ..Filter::default()
        };
        let q = Query::new("retry backoff").mode(mode).filter(filter);
        let chunks = index.search(&q, &e).unwrap();
        assert!(
            !chunks.is_empty() && chunks.iter().all(|h| h.role == Role::Docs),
            "{mode:?}"
        );
        assert!(files(&index, &e, q).iter().all(|f| f.role == Role::Docs));
    }
}

#[test]
fn file_answers_hold_their_best_chunks_and_chunk_lists_keep_diversity() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    repo(tree.path());
    // One file of many matching functions, one long text of many matching windows.
    let many: String = (0..12)
        .map(|i| format!("pub fn shutdown_step{i}() {{ /* graceful shutdown server */ }}\n\n"))
        .collect();
    write(tree.path(), "src/serve.rs", &many);
    let long: String = (0..200)
        .map(|i| format!("Step {i} of the graceful shutdown of the server.\n\n"))
        .collect();
    write(tree.path(), "src/shutdown.txt", &long);
    let (store, e) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &e, IndexOptions::exact()).unwrap();
    let q = Query::new("graceful shutdown server").mode(Mode::Text).k(5);
    let found = files(&index, &e, q.clone());
    assert_eq!(found[0].path, "src/serve.rs", "{:?}", paths(&found));
    assert_eq!(
        found[0].chunks.len(),
        3,
        "a file shows its best three chunks"
    );
    let best = &found[0].chunks[0].parts;
    assert!(
        best.file_bonus > 0 && best.file_bonus <= best.chunk * 15 / 100,
        "{best:?}"
    );
    // In a chunk answer a file's distinct definitions keep their scores, its windows
    // (chunks of a text) are halved once per better window.
    let hits: Vec<Hit> = index.search(&q.clone().k(60), &e).unwrap();
    for h in hits.iter().filter(|h| h.path == "src/serve.rs") {
        assert_eq!(h.parts.score, h.parts.chunk, "{:?}", h.symbol);
    }
    let windows: Vec<&Hit> = hits
        .iter()
        .filter(|h| h.path == "src/shutdown.txt")
        .collect();
    assert!(windows.len() >= 3, "{}", windows.len());
    let mut by_chunk: Vec<&Hit> = windows.clone();
    by_chunk.sort_by_key(|h| std::cmp::Reverse(h.parts.chunk));
    for (w, h) in by_chunk.iter().enumerate() {
        assert_eq!(h.parts.score, h.parts.chunk >> w, "window {w}");
    }
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn the_index_file_and_any_thread_count_give_the_same_ranking() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    repo(tree.path());
    let (store, e) = setup(tree.path(), db.path());
    let memory = SearchIndex::open(&store, &e, IndexOptions::exact()).unwrap();
    let cache = db.path().join("index.cache");
    let (mapped, _) =
        SearchIndex::open_or_build_file(&store, &e, IndexOptions::exact(), &cache).unwrap();
    assert!(mapped.snapshot().n_segments() == 1 && cache.exists());
    let key = |found: Vec<FileHit>| -> Vec<(String, u64, Vec<String>)> {
        found
            .into_iter()
            .map(|f| {
                let ids = f.chunks.iter().map(|c| c.chunk_id.to_string()).collect();
                (f.path, (f.score * 2f64.powi(32)) as u64, ids)
            })
            .collect()
    };
    for text in [
        "IntoResponse",
        "Entities.EscapeMode",
        "retry backoff delay",
        "escape mode",
    ] {
        for mode in [Mode::Text, Mode::Vector, Mode::Hybrid] {
            let q = Query::new(text).mode(mode).k(20);
            let want = key(files(&memory, &e, q.clone()));
            assert_eq!(key(files(&mapped, &e, q.clone())), want, "{text} {mode:?}");
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let got = pool.install(|| key(files(&memory, &e, q.clone())));
                assert_eq!(got, want, "{text} {mode:?} on {threads} threads");
            }
        }
    }
}

/// The role of each file a text query for `words` finds, by path.
fn roles_found(index: &SearchIndex, e: &HashEmbedder, words: &str) -> Vec<(String, Role)> {
    let q = Query::new(words).mode(Mode::Text).k(20);
    let mut found: Vec<(String, Role)> = files(index, e, q)
        .into_iter()
        .map(|f| (f.path, f.role))
        .collect();
    found.sort();
    found
}

#[test]
fn a_header_beside_its_implementation_is_a_declaration_in_every_index() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = tree.path();
    let header = "/* The table in memory. */\nstruct memtable;\nint memtable_add(struct memtable *t, int key);\n";
    write(root, "db/memtable.h", header);
    write(
        root,
        "include/db.h",
        &format!("/* The public API. */\n{header}"),
    );
    let (store, e) = setup(root, db.path());
    let cache = db.path().join("index.cache");
    let (index, _) =
        SearchIndex::open_or_build_file(&store, &e, IndexOptions::exact(), &cache).unwrap();
    let words = "memtable add key";
    let source = |p: &str| (p.to_owned(), Role::Source);
    let declaration = |p: &str| (p.to_owned(), Role::Declaration);
    assert_eq!(
        roles_found(&index, &e, words),
        [source("db/memtable.h"), source("include/db.h")]
    );
    // The implementation arrives: the header beside it (only) becomes a declaration, in
    // the refreshed index, in one built afresh, and in the index file and its delta.
    let implementation = "#include \"memtable.h\"\nint memtable_add(struct memtable *t, int key) {\n    return key;\n}\n";
    write(root, "db/memtable.cc", implementation);
    store
        .sync(root, &SyncOptions::default(), &e, &|_| {})
        .unwrap();
    index.refresh(&store).unwrap();
    let want = [
        source("db/memtable.cc"),
        declaration("db/memtable.h"),
        source("include/db.h"),
    ];
    assert_eq!(roles_found(&index, &e, words), want);
    let fresh = SearchIndex::open(&store, &e, IndexOptions::exact()).unwrap();
    assert_eq!(roles_found(&fresh, &e, words), want);
    index.save_index_file(&cache).unwrap();
    let (reopened, _) =
        SearchIndex::open_or_build_file(&store, &e, IndexOptions::exact(), &cache).unwrap();
    assert_eq!(roles_found(&reopened, &e, words), want);
    // It goes again: the header is source again.
    std::fs::remove_file(root.join("db/memtable.cc")).unwrap();
    store
        .sync(root, &SyncOptions::default(), &e, &|_| {})
        .unwrap();
    reopened.refresh(&store).unwrap();
    let back = [source("db/memtable.h"), source("include/db.h")];
    assert_eq!(roles_found(&reopened, &e, words), back);
    reopened.save_index_file(&cache).unwrap();
    let (again, _) =
        SearchIndex::open_or_build_file(&store, &e, IndexOptions::exact(), &cache).unwrap();
    assert_eq!(roles_found(&again, &e, words), back);
}

#[test]
fn a_description_ranks_files_by_their_whole_text() {
    let (tree, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The description's four words spread over four small functions of one file;
    // another file says two of them, twice, in one function.
    let spread: String = ["exponential", "backoff", "jitter", "attempts"]
        .iter()
        .map(|w| format!("pub fn step_{w}() {{\n    // {w}\n}}\n\n"))
        .collect();
    write(tree.path(), "src/retry.rs", &spread);
    write(
        tree.path(),
        "src/misc.rs",
        "pub fn misc() {\n    // exponential backoff, exponential backoff\n}\n",
    );
    write(tree.path(), "src/other.rs", "pub fn other() {}\n");
    let (store, e) = setup(tree.path(), db.path());
    let index = SearchIndex::open(&store, &e, IndexOptions::exact()).unwrap();
    let text_rank = |found: &[FileHit], path: &str| {
        let file = found.iter().find(|f| f.path == path).expect(path);
        file.chunks[0].parts.evidence.text_rank
    };
    let q = Query::new("exponential backoff jitter attempts");
    let found = files(&index, &e, q.clone());
    assert_eq!(text_rank(&found, "src/retry.rs"), Some(1), "{found:?}");
    assert_eq!(text_rank(&found, "src/misc.rs"), Some(2), "{found:?}");
    assert_eq!(found[0].path, "src/retry.rs", "{:?}", paths(&found));
    // A name, or a ranking that does not weigh file texts, has no such rank.
    let name = files(&index, &e, Query::new("step_jitter"));
    assert_eq!(text_rank(&name, "src/retry.rs"), None);
    let mut ranking = Ranking::default();
    ranking.description.file_text = 0;
    let off = files(&index, &e, q.ranking(ranking));
    assert_eq!(text_rank(&off, "src/retry.rs"), None);
}

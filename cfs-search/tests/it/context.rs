//! Context within a budget of tokens: never over the budget, the text of the files'
//! own lines, touching chunks joined, the best chunk cut rather than left out, the
//! file answer's order, and the same bytes every time.

use std::collections::BTreeSet;
use std::path::Path;

use cfs_search::{
    Context, ContextFile, Filter, IndexOptions, MAX_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS, Mode,
    Query, SearchIndex, estimate_tokens,
};
use cfs_store::StoreError;

use crate::support::{corpus, setup, write};

/// A tree of the search corpus and a module of twelve small functions that all speak
/// of the configuration.
fn tree(root: &Path) {
    corpus(root);
    let functions: String = (0..12)
        .map(|i| {
            format!(
                "/// Reads configuration value number {i}.\npub fn config_value_{i}(c: &Config) -> u32 {{\n    c.value({i})\n}}\n\n"
            )
        })
        .collect();
    write(root, "src/config.rs", &functions);
    let long: String = (0..400)
        .map(|i| format!("    let configuration_step_{i} = load(configuration, {i});\n"))
        .collect();
    write(
        root,
        "src/long.rs",
        &format!("pub fn load_whole_configuration() {{\n{long}}}\n"),
    );
}

/// Checks what every context must hold to.
fn check(ctx: &Context, root: &Path) {
    assert!(
        ctx.tokens <= ctx.budget,
        "{} over {}",
        ctx.tokens,
        ctx.budget
    );
    assert!(estimate_tokens(&ctx.render()) <= ctx.tokens);
    let spans = ctx.files.iter().flat_map(|f| &f.spans);
    assert_eq!(ctx.tokens, spans.map(|s| s.tokens).sum::<u32>());
    // Each span's tokens are its own rendering's.
    for file in &ctx.files {
        for span in &file.spans {
            let alone = Context {
                files: vec![ContextFile {
                    spans: vec![span.clone()],
                    ..file.clone()
                }],
                ..ctx.clone()
            };
            assert_eq!(span.tokens, estimate_tokens(&alone.render()));
        }
    }
    let mut chunks = BTreeSet::new();
    for file in &ctx.files {
        let source = std::fs::read_to_string(root.join(&file.path)).unwrap();
        let lines: Vec<&str> = source.split_inclusive('\n').collect();
        assert!(!file.spans.is_empty());
        for pair in file.spans.windows(2) {
            // Spans do not touch; two may share a line longer than a chunk.
            let shared = pair[0].end_line == pair[1].start_line
                && lines[pair[0].end_line as usize - 1].len() > 2048;
            assert!(
                pair[0].end_line < pair[1].start_line || shared,
                "{}: {pair:?}",
                file.path
            );
        }
        for span in &file.spans {
            let range = &lines[span.start_line as usize - 1..span.end_line as usize];
            let want: String = range.concat();
            // Whole lines, but where a line is longer than a chunk (its neighbours do
            // not hold its ends), and a cut span stops early.
            let long = range.iter().any(|l| l.len() > 2048);
            match (long, span.cut) {
                (false, false) => assert_eq!(span.text, want, "{}", file.path),
                (false, true) => assert!(want.starts_with(&span.text), "{}", file.path),
                (true, _) => assert!(want.contains(&span.text), "{}", file.path),
            }
            for id in span.chunks() {
                assert!(chunks.insert(id), "chunk {id} taken twice");
            }
        }
    }
}

#[test]
fn a_context_keeps_to_its_budget_and_cites_the_files_own_lines() {
    let dir = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    tree(dir.path());
    let (store, embedder, _) = setup(dir.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    let query = Query::new("configuration");
    let files = index.search_files(&query, &embedder).unwrap();
    let mut last = 0;
    for budget in [MIN_CONTEXT_TOKENS, 100, 200, 400, 1000, 4000, 100_000] {
        let ctx = index.context(&query, &embedder, budget).unwrap();
        check(&ctx, dir.path());
        assert_eq!(ctx.files[0].path, files[0].path, "budget {budget}");
        // The file answer's order, the files a context holds in it.
        let order: Vec<usize> = ctx
            .files
            .iter()
            .map(|f| files.iter().position(|g| g.path == f.path).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        let taken: usize = ctx
            .files
            .iter()
            .flat_map(|f| &f.spans)
            .map(|s| s.chunks().count())
            .sum();
        assert!(
            taken >= last,
            "budget {budget}: {taken} chunks, {last} with less"
        );
        last = taken;
        assert_eq!(ctx, index.context(&query, &embedder, budget).unwrap());
    }
    // With room for everything, nothing is left out and every file answered is there.
    let all = index.context(&query, &embedder, 100_000).unwrap();
    assert_eq!(all.left_out, 0);
    assert_eq!(all.files.len(), files.len());
}

#[test]
fn chunks_that_touch_are_one_span_and_the_best_is_cut_to_fit() {
    let dir = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    tree(dir.path());
    let (store, embedder, _) = setup(dir.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    let ctx = index
        .context(&Query::new("config value").k(1), &embedder, 100_000)
        .unwrap();
    check(&ctx, dir.path());
    let file = &ctx.files[0];
    assert_eq!(file.path, "src/config.rs");
    assert_eq!(file.spans.len(), 1, "{:#?}", file.spans);
    assert!(file.spans[0].chunks().count() >= 12);
    let symbols = file.spans[0].symbols();
    let want: Vec<String> = (0..12).map(|i| format!("config_value_{i}")).collect();
    assert_eq!(symbols, want, "in file order");
    let small = index
        .context(&Query::new("load_whole_configuration").k(1), &embedder, 200)
        .unwrap();
    check(&small, dir.path());
    let span = &small.files[0].spans[0];
    assert_eq!(small.files[0].path, "src/long.rs");
    assert!(
        span.cut && span.start_line == 1 && span.end_line > 3,
        "{span:#?}"
    );
    assert!(small.render().contains("src/long.rs:1-"));
    assert!(
        small.tokens > 150,
        "the cut fills its budget: {}",
        small.tokens
    );
}

#[test]
fn a_line_longer_than_a_chunk_is_cut_inside_it_not_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    let line = "configuration walrus ".repeat(2000);
    write(dir.path(), "data/long.txt", &format!("{line}\n"));
    let (store, embedder, _) = setup(dir.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    for budget in [MIN_CONTEXT_TOKENS, 300, 3000] {
        let ctx = index
            .context(&Query::new("walrus").mode(Mode::Text), &embedder, budget)
            .unwrap();
        check(&ctx, dir.path());
        let span = &ctx.files[0].spans[0];
        assert!(span.start_line == 1 && span.end_line == 1, "{span:?}");
        assert!(
            !span.text.is_empty() && ctx.tokens > budget / 2,
            "{budget}: {ctx:?}"
        );
        // A budget under a chunk holds none whole: the best one is cut inside its line.
        assert_eq!(span.cut, budget < 1000, "{budget}: {span:?}");
    }
}

#[test]
fn a_fence_is_longer_than_any_run_of_backticks_in_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "docs/fences.md",
        "# Fences\n\nA walrus example:\n\n````text\n```\nwalrus\n```\n````\n",
    );
    let (store, embedder, _) = setup(dir.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    let ctx = index
        .context(&Query::new("walrus"), &embedder, 1000)
        .unwrap();
    check(&ctx, dir.path());
    let rendered = ctx.render();
    assert!(
        rendered.starts_with("docs/fences.md:1-9 [docs]\n`````\n"),
        "{rendered}"
    );
    assert!(rendered.ends_with("\n`````\n\n"), "{rendered}");
}

#[test]
fn a_budget_out_of_range_or_an_unknown_filter_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = tempfile::tempdir().unwrap();
    corpus(dir.path());
    let (store, embedder, _) = setup(dir.path(), db.path());
    let index = SearchIndex::open(&store, &embedder, IndexOptions::exact()).unwrap();
    for budget in [0, MIN_CONTEXT_TOKENS - 1, MAX_CONTEXT_TOKENS + 1] {
        let err = index.context(&Query::new("config"), &embedder, budget);
        assert!(
            matches!(err, Err(StoreError::InvalidInput(_))),
            "{budget}: {err:?}"
        );
    }
    let nothing = Query::new("zzzqqq").mode(Mode::Text);
    let empty = index.context(&nothing, &embedder, 1000).unwrap();
    assert!(empty.files.is_empty() && empty.tokens == 0 && empty.render().is_empty());
    let klingon = nothing.filter(Filter {
        language: Some("klingon".into()),
        ..Filter::default()
    });
    let err = index.context(&klingon, &embedder, 1000);
    assert!(matches!(err, Err(StoreError::InvalidInput(_))), "{err:?}");
}

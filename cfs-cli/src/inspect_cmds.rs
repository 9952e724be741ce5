//! The inspection commands, all read-only: `status`, `verify`, `log`, `show` and
//! `prove`, each answering with a typed report.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use cfs_core::{
    Canonical, ChunkId, ChunkKind, ChunkProof, DocumentId, StateRoot, hex_decode, hex_encode,
};
use cfs_store::Store;
use schemars::JsonSchema;
use serde::Serialize;

use crate::locate::{find_store, tree_of};
use crate::open::{
    Common, index_file, loaded_embedder_for, open_read, open_read_file, simd_path, text_first,
};
use crate::report::{CodeFields, Report, emit, kernels_note, print_json};

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Also show each table's rows and bytes (stored, page overhead, unused).
    #[arg(long)]
    tables: bool,
    /// Show what this PostgreSQL database holds instead of the store: its repositories
    /// and their heads, and the shared rows (a standby serves as well as the primary).
    #[arg(long, conflicts_with = "tables")]
    db: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Recompute every vector from its text (default: a sample of 64).
    #[arg(long)]
    full: bool,
    /// Verify a repository published in this database instead of the store:
    /// postgresql://user@host:port/dbname (a standby serves as well as the primary).
    #[arg(long, requires = "repo", conflicts_with = "full")]
    db: Option<String>,
    /// The repository to verify in the database.
    #[arg(long, requires = "db")]
    repo: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// Most records to show, newest first.
    #[arg(long, short = 'n', default_value_t = 20)]
    limit: usize,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// A relative path, a document id or a chunk id.
    target: String,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, clap::Args)]
pub struct ProveArgs {
    /// The chunk to prove (omit with --check).
    #[arg(required_unless_present = "check")]
    chunk_id: Option<String>,
    /// Check a proof (hex, or a file holding it) instead of making one.
    #[arg(long, value_name = "PROOF")]
    check: Option<String>,
    /// The state root to check against (default: the store's current root).
    #[arg(long, value_name = "HEX")]
    root: Option<String>,
    #[command(flatten)]
    common: Common,
}

pub fn status(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    if let Some(db) = &args.db {
        return crate::db_cmds::status_db(db, args.common.json);
    }
    let store = open_read(&args.common)?;
    let report = StatusReport::of(&store, args.tables)?;
    emit(&report, args.common.json)
}

/// What `cfs status` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusReport {
    store: String,
    tree: Option<String>,
    state_root: String,
    paths: u64,
    documents: u64,
    chunks: u64,
    embeddings: u64,
    edges: u64,
    vectors_pending: u64,
    commits: usize,
    /// The roots in meta are the last state record's.
    consistent: bool,
    last_commit_ms: Option<u64>,
    store_bytes: u64,
    chunk_log_bytes: u64,
    chunk_sizes: ChunkSizes,
    embedder: String,
    /// The code path minilm-int runs on in this process (CFS_SIMD or the CPU's best).
    simd: Option<&'static str>,
    git_head: Option<GitHead>,
    types: Vec<TypeCount>,
    /// With `--tables`: how each redb table uses the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    tables: Option<Vec<TableUse>>,
}

/// The store's chunk sizes, in bytes.
#[derive(Debug, Serialize, JsonSchema)]
struct ChunkSizes {
    target_bytes: u32,
    max_bytes: u32,
    overlap_bytes: u32,
}

/// The git commit last indexed, the state root it was indexed at, and whether the store
/// is still there.
#[derive(Debug, Serialize, JsonSchema)]
struct GitHead {
    commit: String,
    state_root: String,
    current: bool,
}

/// Documents of one MIME type, and how many a grammar chunked by symbol.
#[derive(Debug, Serialize, JsonSchema)]
struct TypeCount {
    mime_type: String,
    documents: u64,
    by_symbol: u64,
}

/// How one redb table uses the file.
#[derive(Debug, Serialize, JsonSchema)]
struct TableUse {
    name: String,
    rows: u64,
    stored_bytes: u64,
    metadata_bytes: u64,
    fragmented_bytes: u64,
    leaf_pages: u64,
    branch_pages: u64,
}

impl StatusReport {
    fn of(store: &Store, tables: bool) -> anyhow::Result<Self> {
        let read = store.begin_read()?;
        let counts = read.counts()?;
        let roots = read.table_roots()?;
        let chain = read.state_chain()?;
        let last = chain.last();
        // What status reads must agree with itself: the roots in meta are the last
        // record's.
        let consistent =
            last.is_none_or(|r| r.root == roots.state_root() && r.table_roots == roots);
        let git_head = store.git_head()?.map(|(commit, root)| GitHead {
            commit,
            state_root: root.to_hex(),
            current: root == roots.state_root(),
        });
        let types = read.document_types()?.into_iter().map(|t| TypeCount {
            mime_type: t.mime_type,
            documents: t.documents,
            by_symbol: t.by_symbol,
        });
        let tables = tables.then(|| read.table_usage()).transpose()?;
        let chunk = store.settings().chunk;
        Ok(Self {
            store: store.path().display().to_string(),
            tree: tree_of(store.path()).map(|p| p.display().to_string()),
            state_root: roots.state_root().to_hex(),
            paths: counts.paths,
            documents: counts.documents,
            chunks: counts.chunks,
            embeddings: counts.embeddings,
            edges: counts.edges,
            vectors_pending: counts.chunks.saturating_sub(counts.embeddings),
            commits: chain.len(),
            consistent,
            last_commit_ms: last.map(|r| r.timestamp_ms),
            store_bytes: store.file_size(),
            chunk_log_bytes: store.log_size(),
            chunk_sizes: ChunkSizes {
                target_bytes: chunk.target_bytes,
                max_bytes: chunk.max_bytes,
                overlap_bytes: chunk.overlap_bytes,
            },
            embedder: store.settings().model_id.clone(),
            simd: text_first(store).then(simd_path),
            git_head,
            types: types.collect(),
            tables: tables.map(|t| t.into_iter().map(TableUse::of).collect()),
        })
    }

    /// The text form's documents per type: one line, the ten most common types with how
    /// many of each were chunked by symbol.
    fn write_types(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.types.is_empty() {
            return Ok(());
        }
        let shown: Vec<String> = self
            .types
            .iter()
            .take(10)
            .map(|t| match t.by_symbol {
                0 => format!("{} {}", t.mime_type, t.documents),
                n => format!("{} {} ({n} by symbol)", t.mime_type, t.documents),
            })
            .collect();
        let more = self.types.len().saturating_sub(10);
        let tail = if more > 0 {
            format!(", {more} more")
        } else {
            String::new()
        };
        writeln!(out, "  documents by type: {}{tail}", shown.join(", "))
    }

    fn write_tables(tables: &[TableUse], out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{:<20} {:>10} {:>14} {:>14} {:>14}",
            "table", "rows", "stored bytes", "overhead", "unused"
        )?;
        for t in tables {
            writeln!(
                out,
                "{:<20} {:>10} {:>14} {:>14} {:>14}",
                t.name, t.rows, t.stored_bytes, t.metadata_bytes, t.fragmented_bytes
            )?;
        }
        Ok(())
    }
}

impl TableUse {
    fn of(t: cfs_store::TableUsage) -> Self {
        Self {
            name: t.name,
            rows: t.rows,
            stored_bytes: t.stored_bytes,
            metadata_bytes: t.metadata_bytes,
            fragmented_bytes: t.fragmented_bytes,
            leaf_pages: t.leaf_pages,
            branch_pages: t.branch_pages,
        }
    }
}

impl Report for StatusReport {
    fn ok(&self) -> bool {
        self.consistent
    }

    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "store {} ({} bytes, chunk log {} bytes)",
            self.store, self.store_bytes, self.chunk_log_bytes
        )?;
        writeln!(
            out,
            "  {} paths, {} documents, {} chunks, {} embeddings, {} edges",
            self.paths, self.documents, self.chunks, self.embeddings, self.edges
        )?;
        writeln!(
            out,
            "  {} commits; embedder {}{}",
            self.commits,
            self.embedder,
            kernels_note(self.simd)
        )?;
        writeln!(
            out,
            "  embedded {} of {} chunks",
            self.embeddings, self.chunks
        )?;
        self.write_types(out)?;
        writeln!(out, "state root {}", self.state_root)?;
        if !self.consistent {
            writeln!(
                out,
                "DAMAGED: the state root and the last state record differ; cfs verify says \
                 more, cfs repair rebuilds the store from its tree"
            )?;
        }
        if let Some(head) = &self.git_head {
            let note = if head.current {
                ""
            } else {
                " (the store changed since)"
            };
            writeln!(out, "indexed git HEAD {}{note}", head.commit)?;
        }
        match &self.tables {
            Some(tables) => Self::write_tables(tables, out),
            None => Ok(()),
        }
    }
}

pub fn verify(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    if let (Some(db), Some(repo)) = (&args.db, &args.repo) {
        return crate::db_cmds::verify_db(db, repo, args.common.json);
    }
    let file = crate::locate::find_store(args.common.store.as_deref())?;
    let started = std::time::Instant::now();
    // A store too damaged to be read through is verify's answer too: a report that
    // fails, naming why, not an error without one.
    let report = verify_file(&file, args.full, started).unwrap_or_else(|e| {
        VerifyReport::unreadable(
            format!("{e:#}; cfs repair rebuilds it from its tree"),
            started,
        )
    });
    emit(&report, args.common.json)
}

/// [`verify`] of the store at `file`; `Err` when it cannot be read through.
fn verify_file(
    file: &std::path::Path,
    full: bool,
    started: std::time::Instant,
) -> anyhow::Result<VerifyReport> {
    let store = open_read_file(file)?;
    let report = store
        .verify()
        .with_context(|| format!("verifying {}: the store is damaged", file.display()))?;
    // The vectors: recomputed from their texts when the store's model is here.
    let sample = (!full).then_some(cfs_store::DEFAULT_VECTOR_SAMPLE);
    let vectors = match loaded_embedder_for(&store) {
        Ok(embedder) => VectorsChecked::of(store.check_vectors(&*embedder, sample)?),
        Err(e) => VectorsChecked::Skipped {
            skipped: format!("{e:#}"),
        },
    };
    Ok(VerifyReport::new(&report, vectors, &store, started))
}

/// What `cfs verify` answers: the store's rows and roots, its vectors (or why they were
/// not checked), its index file (if any), and how long it took.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VerifyReport {
    ok: bool,
    stored_root: String,
    computed_root: String,
    problems: Vec<String>,
    vectors: VectorsChecked,
    /// Null without an index file.
    index_file: Option<IndexFileChecked>,
    seconds: f64,
    /// The rows recomputed, and whether they and the roots are sound, for the text form.
    #[serde(skip)]
    rows: u64,
    #[serde(skip)]
    rows_sound: bool,
    /// The index file the text form's advice names.
    #[serde(skip)]
    index_path: String,
}

/// The vectors recomputed from their texts, or why they were not.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
enum VectorsChecked {
    Checked {
        checked: usize,
        embeddings: usize,
        wrong: Vec<String>,
    },
    Skipped {
        skipped: String,
    },
}

impl VectorsChecked {
    fn of(v: cfs_store::VectorCheck) -> Self {
        Self::Checked {
            checked: v.checked,
            embeddings: v.embeddings,
            wrong: v.wrong,
        }
    }

    fn ok(&self) -> bool {
        match self {
            Self::Checked { wrong, .. } => wrong.is_empty(),
            Self::Skipped { .. } => true,
        }
    }
}

/// The index file, every section checked against its hash.
#[derive(Debug, Serialize, JsonSchema)]
struct IndexFileChecked {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

impl VerifyReport {
    fn new(
        report: &cfs_store::VerifyReport,
        vectors: VectorsChecked,
        store: &Store,
        started: std::time::Instant,
    ) -> Self {
        let path = index_file(store);
        let index = path
            .exists()
            .then(|| match cfs_search::verify_index_file(&path) {
                Ok(bytes) => IndexFileChecked {
                    ok: true,
                    bytes: Some(bytes),
                    problem: None,
                },
                Err(reason) => IndexFileChecked {
                    ok: false,
                    bytes: None,
                    problem: Some(reason),
                },
            });
        let c = &report.counts;
        Self {
            ok: report.is_ok() && vectors.ok() && index.as_ref().is_none_or(|i| i.ok),
            stored_root: report.stored_root.to_hex(),
            computed_root: report.computed_root.to_hex(),
            problems: report.problems.clone(),
            vectors,
            index_file: index,
            seconds: started.elapsed().as_secs_f64(),
            rows: c.paths + c.documents + c.chunks + c.embeddings + c.edges,
            rows_sound: report.is_ok(),
            index_path: path.display().to_string(),
        }
    }

    /// The report of a store that could not be read through (`why`): failed, without
    /// roots (empty), vectors or index file.
    fn unreadable(why: String, started: std::time::Instant) -> Self {
        Self {
            ok: false,
            stored_root: String::new(),
            computed_root: String::new(),
            problems: vec![why],
            vectors: VectorsChecked::Skipped {
                skipped: "the store could not be read".into(),
            },
            index_file: None,
            seconds: started.elapsed().as_secs_f64(),
            rows: 0,
            rows_sound: false,
            index_path: String::new(),
        }
    }

    fn write_vectors(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match &self.vectors {
            VectorsChecked::Checked {
                checked,
                embeddings,
                wrong,
            } if wrong.is_empty() => writeln!(
                out,
                "vectors: {checked} of {embeddings} recomputed from their texts, all equal"
            ),
            VectorsChecked::Checked { checked, wrong, .. } => {
                writeln!(
                    out,
                    "vectors: FAILED, {} of {checked} checked differ",
                    wrong.len()
                )?;
                for w in wrong.iter().take(20) {
                    writeln!(out, "  {w}")?;
                }
                Ok(())
            }
            VectorsChecked::Skipped { skipped } => {
                writeln!(out, "vectors: not checked: {skipped}")
            }
        }
    }
}

impl Report for VerifyReport {
    fn ok(&self) -> bool {
        self.ok
    }

    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.rows_sound {
            writeln!(
                out,
                "ok: {} rows recomputed to state root {} ({:.2} s)",
                self.rows, self.computed_root, self.seconds
            )?;
        } else {
            match self.stored_root.is_empty() {
                true => writeln!(out, "FAILED: the store could not be read")?,
                false => writeln!(
                    out,
                    "FAILED: stored root {}, computed {}",
                    self.stored_root, self.computed_root
                )?,
            }
            for p in &self.problems {
                writeln!(out, "  {p}")?;
            }
            writeln!(
                out,
                "the store is damaged: cfs repair rebuilds it from its tree (the damaged file is kept aside)"
            )?;
        }
        self.write_vectors(out)?;
        match &self.index_file {
            None => Ok(()),
            Some(IndexFileChecked {
                bytes: Some(bytes), ..
            }) => writeln!(
                out,
                "index file: {bytes} bytes, every section matches its hash"
            ),
            Some(i) => writeln!(
                out,
                "index file: FAILED, {}; it is only a cache: delete {} and the next search rebuilds it",
                i.problem.as_deref().unwrap_or_default(),
                self.index_path
            ),
        }
    }
}

pub fn log(args: &LogArgs) -> anyhow::Result<ExitCode> {
    let store = open_read(&args.common)?;
    let chain = store.begin_read()?.state_chain()?;
    let records: Vec<LogRecord> = chain
        .iter()
        .rev()
        .take(args.limit)
        .map(LogRecord::of)
        .collect();
    if args.common.json {
        print_json(&records)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for r in &records {
        r.write_text(&mut out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One state record of `cfs log`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LogRecord {
    sequence: u64,
    root: String,
    parent: String,
    timestamp_ms: u64,
    changes: Changes,
}

/// What a commit changed, table by table.
#[derive(Debug, Serialize, JsonSchema)]
struct Changes {
    paths: Change,
    documents: Change,
    chunks: Change,
    embeddings: Change,
    edges: Change,
}

/// Rows added, removed and changed in one table.
#[derive(Debug, Serialize, JsonSchema)]
struct Change {
    added: u64,
    removed: u64,
    changed: u64,
}

impl LogRecord {
    fn of(r: &cfs_core::StateRecord) -> Self {
        let t = |c: &cfs_core::TableChange| Change {
            added: c.added,
            removed: c.removed,
            changed: c.changed,
        };
        let s = &r.summary;
        Self {
            sequence: r.sequence,
            root: r.root.to_hex(),
            parent: r.parent.to_hex(),
            timestamp_ms: r.timestamp_ms,
            changes: Changes {
                paths: t(&s.paths),
                documents: t(&s.documents),
                chunks: t(&s.chunks),
                embeddings: t(&s.embeddings),
                edges: t(&s.edges),
            },
        }
    }
}

impl Report for LogRecord {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let (paths, chunks) = (&self.changes.paths, &self.changes.chunks);
        writeln!(
            out,
            "#{} {} at {} ms: paths +{} -{} ~{}, chunks +{} -{}",
            self.sequence,
            self.root,
            self.timestamp_ms,
            paths.added,
            paths.removed,
            paths.changed,
            chunks.added,
            chunks.removed
        )
    }
}

pub fn show(args: &ShowArgs) -> anyhow::Result<ExitCode> {
    let store = open_read(&args.common)?;
    let read = store.begin_read()?;
    let document = if let Ok(id) = DocumentId::parse(&args.target) {
        if let Some(doc) = read.document(&id)? {
            Some(doc)
        } else if let Some(chunk) = read.chunk(&ChunkId(id.0))? {
            read.document(&chunk.document_id)?
        } else {
            bail!("{}: no document or chunk has this id", args.target);
        }
    } else {
        let rel = args.target.trim_start_matches("./");
        let entry = read.path(rel)?.with_context(|| {
            format!("{rel}: not in the store (paths are relative to the indexed folder)")
        })?;
        read.document(&entry.document_id)?
    };
    let doc = document.context("the store names a document it does not hold: run cfs verify")?;
    let paths = read.paths_of(&doc.id)?;
    let chunks = read.chunks_of(&doc.id)?;
    emit(&ShowReport::of(&doc, &paths, &chunks), args.common.json)
}

/// What `cfs show` answers: a document, its paths and its chunks.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShowReport {
    document_id: String,
    content_hash: String,
    hierarchical_hash: String,
    leaf_hash: String,
    size_bytes: u64,
    mime_type: String,
    parser: String,
    chunker: String,
    /// `[key, value]` pairs.
    metadata: Vec<(String, String)>,
    paths: Vec<ShownPath>,
    chunks: Vec<ShownChunk>,
}

/// A path of a shown document.
#[derive(Debug, Serialize, JsonSchema)]
struct ShownPath {
    path: String,
    id: String,
    collections: Vec<String>,
    context: String,
}

/// A chunk of a shown document; the fields of its kind beside the common ones.
#[derive(Debug, Serialize, JsonSchema)]
struct ShownChunk {
    id: String,
    sequence: u32,
    kind: &'static str,
    start_line: u32,
    end_line: u32,
    byte_offset: u64,
    byte_length: u32,
    text_hash: String,
    leaf_hash: String,
    text: String,
    #[serde(flatten)]
    of_kind: KindFields,
}

/// What only some kinds of chunk have.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
enum KindFields {
    Code(CodeFields),
    Section { heading_path: Vec<String> },
    Page { page: u32 },
    Text {},
}

impl ShownChunk {
    fn of(c: &cfs_core::Chunk) -> Self {
        let of_kind = match &c.kind {
            ChunkKind::Code { .. } => {
                CodeFields::of(&c.kind).map_or(KindFields::Text {}, KindFields::Code)
            }
            ChunkKind::Section { heading_path } => KindFields::Section {
                heading_path: heading_path.clone(),
            },
            ChunkKind::Page { page } => KindFields::Page { page: *page },
            ChunkKind::Text => KindFields::Text {},
        };
        Self {
            id: c.id.to_string(),
            sequence: c.sequence,
            kind: c.kind.name(),
            start_line: c.start_line,
            end_line: c.end_line,
            byte_offset: c.byte_offset,
            byte_length: c.byte_length,
            text_hash: c.text_hash.to_hex(),
            leaf_hash: c.leaf_hash().to_hex(),
            text: c.text.clone(),
            of_kind,
        }
    }
}

impl ShowReport {
    fn of(
        doc: &cfs_core::Document,
        paths: &[cfs_core::PathEntry],
        chunks: &[cfs_core::Chunk],
    ) -> Self {
        let path = |p: &cfs_core::PathEntry| ShownPath {
            path: p.path.clone(),
            id: p.id().to_string(),
            collections: p.collections.clone(),
            context: p.context.clone(),
        };
        Self {
            document_id: doc.id.to_string(),
            content_hash: doc.content_hash.to_hex(),
            hierarchical_hash: doc.hierarchical_hash.to_hex(),
            leaf_hash: doc.leaf_hash().to_hex(),
            size_bytes: doc.size_bytes,
            mime_type: doc.profile.mime_type.clone(),
            parser: doc.profile.parser.clone(),
            chunker: doc.profile.chunker.clone(),
            metadata: doc
                .metadata
                .iter()
                .map(|m| (m.key.clone(), m.value.clone()))
                .collect(),
            paths: paths.iter().map(path).collect(),
            chunks: chunks.iter().map(ShownChunk::of).collect(),
        }
    }
}

impl Report for ShowReport {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "document {} ({}, {} bytes)",
            self.document_id, self.mime_type, self.size_bytes
        )?;
        writeln!(out, "  content hash {}", self.content_hash)?;
        writeln!(out, "  hierarchical hash {}", self.hierarchical_hash)?;
        for p in &self.paths {
            writeln!(out, "  path {}", p.path)?;
        }
        for c in &self.chunks {
            writeln!(
                out,
                "  chunk #{} {} {} lines {}-{} ({} bytes)",
                c.sequence, c.id, c.kind, c.start_line, c.end_line, c.byte_length
            )?;
        }
        Ok(())
    }
}

/// The proof `text` gives: the hex itself, or a file holding it (named in errors).
fn read_proof(text: &str) -> anyhow::Result<ChunkProof> {
    let path = Path::new(text);
    let (hex, from) = if path.is_file() {
        let hex = std::fs::read_to_string(path).with_context(|| format!("cannot read {text}"))?;
        (hex, format!("{text}: "))
    } else if path.exists() || !text.trim().bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("{text}: neither a file holding a proof nor a proof in hex");
    } else {
        (text.to_owned(), String::new())
    };
    let bytes = hex_decode(hex.trim()).with_context(|| format!("{from}the proof is not hex"))?;
    ChunkProof::decode(&bytes).with_context(|| format!("{from}the proof does not decode"))
}

pub fn prove(args: &ProveArgs) -> anyhow::Result<ExitCode> {
    if let Some(proof_text) = &args.check {
        return check_proof(args, proof_text);
    }
    let id_text = args
        .chunk_id
        .as_deref()
        .context("give a CHUNK_ID, or --check PROOF")?;
    let id = ChunkId::parse(id_text)?;
    let store = open_read(&args.common)?;
    let read = store.begin_read()?;
    let proof = read
        .prove_chunk(&id)?
        .with_context(|| format!("{id}: no such chunk"))?;
    let root = read.table_roots()?.state_root();
    proof
        .verify(&root)
        .context("the store made a proof that does not verify: run cfs verify")?;
    let answer = ProofReport {
        chunk_id: id.to_string(),
        state_root: root.to_hex(),
        proof: hex_encode(&proof.encode()),
    };
    emit(&answer, args.common.json)
}

/// `cfs prove --check PROOF`: the proof checked against `--root` or the store's root.
fn check_proof(args: &ProveArgs, proof_text: &str) -> anyhow::Result<ExitCode> {
    let proof = read_proof(proof_text)?;
    let (trusted, source) = match &args.root {
        Some(hex) => (StateRoot::from_hex(hex)?, "given"),
        None => match find_store(args.common.store.as_deref()) {
            Ok(file) => (open_read_file(&file)?.state_root()?, "the store's current"),
            Err(_) => bail!("no --root given and no store found: pass the trusted state root"),
        },
    };
    let result = proof.verify(&trusted);
    let answer = ProofChecked {
        valid: result.is_ok(),
        chunk_id: proof.chunk.id.to_string(),
        state_root: trusted.to_hex(),
        error: result.err().map(|e| e.to_string()),
        source,
    };
    emit(&answer, args.common.json)
}

/// What `cfs prove CHUNK_ID` answers: the proof, as hex (the text form is the hex alone).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProofReport {
    chunk_id: String,
    state_root: String,
    proof: String,
}

impl Report for ProofReport {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "{}", self.proof)
    }
}

/// What `cfs prove --check` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProofChecked {
    valid: bool,
    chunk_id: String,
    state_root: String,
    error: Option<String>,
    /// Where the trusted root came from, for the text form.
    #[serde(skip)]
    source: &'static str,
}

impl Report for ProofChecked {
    fn ok(&self) -> bool {
        self.valid
    }

    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match &self.error {
            None => writeln!(
                out,
                "valid: chunk {} is in state {} ({} root)",
                self.chunk_id, self.state_root, self.source
            ),
            Some(e) => writeln!(out, "INVALID: {e}"),
        }
    }
}

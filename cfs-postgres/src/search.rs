//! Search from the database: each repository's lists found in SQL from its search rows
//! (BM25 in exact integer arithmetic, definitions, vectors by pgvector re-scored by the
//! integer dot product until the list is proven exact), ranked by cfs-search's code as
//! a store's snapshot is, in one read-only snapshot of the database (a primary's or a
//! standby's); the repositories' answers merged by score (docs/format.md,
//! "PostgreSQL").

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cfs_core::{Canonical, Chunk, ChunkId, DocumentId, StateRoot};
use cfs_ingest::{Embedder, Markers};
use cfs_search::{
    Analysis, ChunkMeta, DocInfo, ExternalLists, FILE_VECTOR_CHUNKS, Found, Hit, Mode, PathInfo,
    Query, analyze, chunk_list, definition_found, lookup_terms, tokens,
};
use cfs_store::StoreError;
use postgres::Transaction;
use postgres::types::ToSql;
use uuid::Uuid;

use crate::db::{Database, sql_error};
use crate::error::{DbError, Result};
use crate::filter_sql::FilterSql;
use crate::proof::{Proof, prove};

use crate::schema;

/// Which repositories a search reads, and whether it proves its answers.
#[derive(Clone, Debug, Default)]
pub struct DbSearchOptions {
    /// Repository names (none: every repository).
    pub repos: Vec<String>,
    /// Prove each result against its repository's head ([`Proof`]).
    pub check_answers: bool,
}

/// A repository a search read: its name and the head it read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchedRepo {
    /// Its name.
    pub name: String,
    /// The state root of its head.
    pub root: StateRoot,
    /// The head's sequence.
    pub sequence: u64,
}

/// One result: a chunk of a repository.
#[derive(Clone, Debug, PartialEq)]
pub struct DbHit {
    /// The repository.
    pub repo: String,
    /// The chunk as a local search gives it (`root`: the repository's head).
    pub hit: Hit,
    /// Its proof against the head, when asked for.
    pub proof: Option<Proof>,
}

/// What a search from the database found.
#[derive(Clone, Debug, PartialEq)]
pub struct DbSearchReport {
    /// The database, as [`Database::describe`] names it.
    pub database: String,
    /// Whether it is a standby.
    pub standby: bool,
    /// The repositories read, by name.
    pub repos: Vec<SearchedRepo>,
    /// The best `query.k` chunks of all of them, best first.
    pub hits: Vec<DbHit>,
}

/// A repository's head and BM25 totals, as the snapshot read them.
struct Repo {
    id: i32,
    name: String,
    model_id: String,
    root: StateRoot,
    sequence: u64,
    chunks: u64,
    tokens: u64,
}

/// Searches the repositories `options.repos` of `db` for `query`: each repository
/// ranked as a local search of its store ranks it, the answers merged by score (ties
/// by repository name, then rank), all read in one snapshot.
pub fn search(
    db: &mut Database,
    query: &Query,
    embedder: &dyn Embedder,
    options: &DbSearchOptions,
) -> Result<DbSearchReport> {
    let (name, mut tx) = schema::read_snapshot(db)?;
    let standby: bool = tx
        .query_one("SELECT pg_is_in_recovery()", &[])
        .map_err(sql_error(&name, "ask whether it is a standby"))?
        .get(0);
    let repos = repos(&mut tx, &name, &options.repos)?;
    let filter = FilterSql::new(&query.filter)?;
    let mut all: Vec<(u64, usize, usize, DbHit)> = Vec::new();
    for (place, repo) in repos.iter().enumerate() {
        if repo.model_id != embedder.model_id() && query.mode != Mode::Text {
            return Err(DbError::Store(StoreError::ModelMismatch {
                store: format!("repository {:?}'s {}", repo.name, repo.model_id),
                embedder: embedder.model_id().to_owned(),
            }));
        }
        let mut r = RepoSearch {
            tx: &mut tx,
            name: &name,
            repo,
            filter: &filter,
            texts: HashMap::new(),
        };
        for (rank, hit) in r.search(query, embedder)?.into_iter().enumerate() {
            let proof = match options.check_answers {
                true => Some(prove(
                    &mut tx,
                    &name,
                    (repo.id, &repo.name),
                    &repo.root,
                    &hit,
                )?),
                false => None,
            };
            let score = hit.parts.score;
            let hit = DbHit {
                repo: repo.name.clone(),
                hit,
                proof,
            };
            all.push((score, place, rank, hit));
        }
    }
    all.sort_by_key(|e| (std::cmp::Reverse(e.0), e.1, e.2));
    all.truncate(query.k);
    tx.commit().map_err(sql_error(&name, "end the snapshot"))?;
    Ok(DbSearchReport {
        database: name,
        standby,
        repos: repos
            .into_iter()
            .map(|r| SearchedRepo {
                name: r.name,
                root: r.root,
                sequence: r.sequence,
            })
            .collect(),
        hits: all.into_iter().map(|e| e.3).collect(),
    })
}

/// The repositories named (every one when `names` is empty), by name; an unknown name
/// is an error listing the known ones.
fn repos(tx: &mut Transaction<'_>, name: &str, names: &[String]) -> Result<Vec<Repo>> {
    let rows = tx
        .query(
            "SELECT r.id, r.name, r.model_id, h.state_root, h.sequence, \
             coalesce(s.chunks, 0), coalesce(s.tokens, 0) \
             FROM cfs_repos r JOIN cfs_heads h ON h.repo = r.id \
             LEFT JOIN cfs_search_stats s ON s.repo = r.id ORDER BY r.name",
            &[],
        )
        .map_err(sql_error(name, "read the repositories' heads"))?;
    let mut all = Vec::with_capacity(rows.len());
    for row in rows {
        let root = crate::publish::root_of(name, "a head's state root", row.get(3))?;
        all.push(Repo {
            id: row.get(0),
            name: row.get(1),
            model_id: row.get(2),
            root: StateRoot(root),
            sequence: row.get::<_, i64>(4) as u64,
            chunks: row.get::<_, i64>(5) as u64,
            tokens: row.get::<_, i64>(6) as u64,
        });
    }
    if let Some(unknown) = names.iter().find(|n| !all.iter().any(|r| &r.name == *n)) {
        let known: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
        return Err(DbError::Config {
            what: format!(
                "{name} has no repository {unknown:?}; it has: {}",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            ),
        });
    }
    all.retain(|r| names.is_empty() || names.contains(&r.name));
    Ok(all)
}

/// One repository's search, in the snapshot's transaction.
struct RepoSearch<'a, 't> {
    tx: &'a mut Transaction<'t>,
    name: &'a str,
    repo: &'a Repo,
    filter: &'a FilterSql,
    /// The texts of the chunks resolved.
    texts: HashMap<ChunkId, String>,
}

impl RepoSearch<'_, '_> {
    /// The repository's best `query.k` chunks, as a local search gives them.
    fn search(&mut self, query: &Query, embedder: &dyn Embedder) -> Result<Vec<Hit>> {
        let analysis = analyze(&query.text);
        let depth = cfs_search::list_depth(query, false);
        let weight = cfs_search::vector_weight(query, &analysis, embedder);
        let mut lists = ExternalLists::default();
        let words_run = query.mode != Mode::Vector;
        let text = match words_run {
            true => self.text_list(query, depth, &mut lists)?,
            false => Vec::new(),
        };
        let defs = match words_run && query.ranking.definitions && !analysis.identifiers.is_empty()
        {
            true => self.definition_candidates(&analysis)?,
            false => Vec::new(),
        };
        let vector = match cfs_search::vectors_needed(query, weight, text.len()) {
            true => self.vector_list(query, embedder, depth, &mut lists)?,
            false => Vec::new(),
        };
        let ids = text.iter().map(|t| t.0).chain(vector.iter().map(|v| v.0));
        let metas = self.resolve(ids.chain(defs.iter().map(|d| d.0)))?;
        lists.text = found(text, &metas);
        lists.vector = found(vector, &metas);
        lists.definitions = definitions(&analysis, defs, &metas, depth);
        if !lists.query_vector.is_empty() {
            lists.file_vectors = self.file_vectors(&lists)?;
        }
        let files = cfs_search::rank_external(lists, query, &analysis, weight);
        let words = tokens(&query.text);
        let chunks = chunk_list(files, query.k);
        Ok(chunks
            .into_iter()
            .map(|c| {
                let text = self.texts.get(&c.meta.id).cloned().unwrap_or_default();
                cfs_search::hit_of(c, text, self.repo.root, &words)
            })
            .collect())
    }

    /// BM25 over the repository's chunks: the top `depth` passing the filter, with
    /// their word masks and the words' weights in `lists`.
    fn text_list(
        &mut self,
        query: &Query,
        depth: usize,
        lists: &mut ExternalLists,
    ) -> Result<Vec<(ChunkId, u64)>> {
        let (words, terms) = cfs_search::text_terms(query);
        lists.word_weights = vec![0; words.len()];
        let n = self.repo.chunks;
        if terms.is_empty() || n == 0 || depth == 0 {
            return Ok(Vec::new());
        }
        let names: Vec<&str> = terms.iter().map(|t| t.0.as_str()).collect();
        let dfs = self.document_frequencies(&names)?;
        let mut kept: Vec<(&str, i64, i32)> = Vec::new();
        for ((term, shift, word), df) in terms.iter().zip(dfs) {
            if df == 0 {
                continue;
            }
            let idf = cfs_search::idf(n, df);
            if !cfs_search::STOP_WORDS.contains(&words[*word].as_str()) {
                lists.word_weights[*word] = lists.word_weights[*word].max(idf);
            }
            kept.push((term, idf as i64, 1 << shift));
        }
        let rows = self.scored_rows(&kept, depth)?;
        let word_of: HashMap<&str, usize> = terms.iter().map(|t| (t.0.as_str(), t.2)).collect();
        let mut list = Vec::with_capacity(rows.len());
        for (id, score, held) in rows {
            let mask = held
                .iter()
                .filter_map(|t| word_of.get(t.as_str()))
                .filter(|&&w| w < 64)
                .fold(0u64, |m, &w| m | 1 << w);
            lists.masks.insert(id, mask);
            list.push((id, score));
        }
        Ok(list)
    }

    /// How many of the repository's chunks hold each of `terms`.
    fn document_frequencies(&mut self, terms: &[&str]) -> Result<Vec<u64>> {
        let rows = self
            .tx
            .query(
                "SELECT (SELECT count(*) FROM cfs_search s \
                 WHERE s.repo = $1 AND s.terms @> ARRAY[t]) \
                 FROM unnest($2::text[]) WITH ORDINALITY AS u(t, i) ORDER BY i",
                &[&self.repo.id, &terms],
            )
            .map_err(sql_error(self.name, "count the query's terms"))?;
        Ok(rows.iter().map(|r| r.get::<_, i64>(0) as u64).collect())
    }

    /// The top `depth` chunks by BM25 over `terms` (term, idf, divisor: 2 for a
    /// variant's half weight), score descending then chunk id, each with the terms it
    /// holds: `sum(floor(idf * tf_part / divisor) + 1)`, `tf_part` as
    /// `cfs_search::tf_part` computes it, in exact `numeric` arithmetic.
    fn scored_rows(
        &mut self,
        terms: &[(&str, i64, i32)],
        depth: usize,
    ) -> Result<Vec<(ChunkId, u64, Vec<String>)>> {
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let names: Vec<&str> = terms.iter().map(|t| t.0).collect();
        let idfs: Vec<i64> = terms.iter().map(|t| t.1).collect();
        let divisors: Vec<i32> = terms.iter().map(|t| t.2).collect();
        let (n, total) = (self.repo.chunks as i64, self.repo.tokens as i64);
        let sql = format!(
            "SELECT s.chunk, x.score::bigint, x.held FROM cfs_search s {join} \
             CROSS JOIN (SELECT $4::bigint::numeric AS total, $5::bigint::numeric AS n) k \
             CROSS JOIN LATERAL ( \
               SELECT sum(div(q.idf * div(22 * c.tf * k.total * 65536, \
                 10 * c.tf * k.total + 3 * k.total + 9 * s.length * k.n), \
                 q.divisor) + 1) AS score, array_agg(q.term) AS held \
               FROM unnest($2::text[], $3::bigint[], $6::int[]) AS q(term, idf, divisor) \
               CROSS JOIN LATERAL (SELECT s.counts[array_position(s.terms, q.term)] AS tf) c \
               WHERE c.tf IS NOT NULL) x \
             WHERE s.repo = $1 AND s.terms && $2::text[] {filter} \
             ORDER BY x.score DESC, s.chunk LIMIT $7",
            join = self.filter.join(),
            filter = self.filter.clause(8),
        );
        let depth = depth as i64;
        let mut params: Vec<&(dyn ToSql + Sync)> =
            vec![&self.repo.id, &names, &idfs, &total, &n, &divisors, &depth];
        params.extend(self.filter.params());
        let rows = self
            .tx
            .query(&sql, &params)
            .map_err(sql_error(self.name, "score the query's terms"))?;
        Ok(rows
            .iter()
            .map(|r| (chunk_id(r.get(0)), r.get::<_, i64>(1) as u64, r.get(2)))
            .collect())
    }

    /// The chunks passing the filter posted under a definition term of the query's
    /// identifiers, with the term and its value.
    fn definition_candidates(
        &mut self,
        analysis: &Analysis,
    ) -> Result<Vec<(ChunkId, String, u32)>> {
        let mut terms: Vec<String> = analysis
            .identifiers
            .iter()
            .flat_map(|i| lookup_terms(i).into_iter().map(|t| t.0))
            .collect();
        terms.sort_unstable();
        terms.dedup();
        let sql = format!(
            "SELECT s.chunk, q.term, s.counts[array_position(s.terms, q.term)] \
             FROM cfs_search s {join} CROSS JOIN unnest($2::text[]) AS q(term) \
             WHERE s.repo = $1 AND s.terms && $2::text[] AND q.term = ANY(s.terms) {filter}",
            join = self.filter.join(),
            filter = self.filter.clause(3),
        );
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&self.repo.id, &terms];
        params.extend(self.filter.params());
        let rows = self
            .tx
            .query(&sql, &params)
            .map_err(sql_error(self.name, "look up the query's definitions"))?;
        Ok(rows
            .iter()
            .map(|r| (chunk_id(r.get(0)), r.get(1), r.get::<_, i32>(2) as u32))
            .collect())
    }

    /// The `depth` chunks passing the filter whose vectors are nearest the query's by
    /// the exact integer dot product, ties by chunk id; the query's vector goes in
    /// `lists`. pgvector orders candidates in float32; the list is taken deeper until
    /// no chunk left out could reach it ([`float_error`]).
    fn vector_list(
        &mut self,
        query: &Query,
        embedder: &dyn Embedder,
        depth: usize,
        lists: &mut ExternalLists,
    ) -> Result<Vec<(ChunkId, i64)>> {
        let q = embedder
            .embed_batch(&[query.text.as_str()])
            .map_err(|e| StoreError::Embedder(format!("embedding the query: {e}")))?
            .into_iter()
            .next()
            .unwrap_or_default();
        lists.query_vector = q.clone();
        if q.iter().all(|&x| x == 0) || depth == 0 {
            return Ok(Vec::new());
        }
        let bound = float_error(&q);
        let mut fetch = depth * 2 + 50;
        loop {
            let found = self.nearest(&q, fetch)?;
            let exhausted = found.len() < fetch;
            let last_float = found.last().map_or(f64::NEG_INFINITY, |f| f.2);
            let mut scored: Vec<(i64, ChunkId)> = found
                .into_iter()
                .map(|(id, v, _)| (exact_dot(&q, &v), id))
                .collect();
            scored.sort_unstable_by_key(|&(s, id)| (std::cmp::Reverse(s), id));
            scored.truncate(depth);
            let proven = scored.len() == depth && scored[depth - 1].0 as f64 > last_float + bound;
            if exhausted || proven {
                return Ok(scored.into_iter().map(|(s, id)| (id, s)).collect());
            }
            fetch *= 4;
        }
    }

    /// The `fetch` chunks passing the filter nearest `q` by pgvector's inner product,
    /// with their vectors and that product.
    fn nearest(&mut self, q: &[i16], fetch: usize) -> Result<Vec<(ChunkId, Vec<i16>, f64)>> {
        let text = crate::content::vector_text(q);
        let sql = format!(
            "SELECT s.chunk, v.v::text, -(v.v <#> $2::text::vector) AS ip FROM cfs_search s \
             JOIN cfs_vectors v ON v.hash = s.vector {join} \
             WHERE s.repo = $1 AND vector_dims(v.v) = $4 {filter} \
             ORDER BY v.v <#> $2::text::vector LIMIT $3",
            join = self.filter.join(),
            filter = self.filter.clause(5),
        );
        let (fetch, dim) = (fetch as i64, q.len() as i32);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&self.repo.id, &text, &fetch, &dim];
        params.extend(self.filter.params());
        let rows = self
            .tx
            .query(&sql, &params)
            .map_err(sql_error(self.name, "search the vectors"))?;
        rows.iter()
            .map(|r| {
                let v: String = r.get(1);
                Ok((chunk_id(r.get(0)), vector_of(self.name, &v)?, r.get(2)))
            })
            .collect()
    }

    /// The metadata of chunks `ids` (with their documents'), their texts kept.
    fn resolve(
        &mut self,
        ids: impl Iterator<Item = ChunkId>,
    ) -> Result<HashMap<ChunkId, Arc<ChunkMeta>>> {
        let mut keys: Vec<Vec<u8>> = ids.map(|id| id.0.to_vec()).collect();
        keys.sort_unstable();
        keys.dedup();
        let rows = self
            .tx
            .query(
                "SELECT c.encoding, d.document, d.mime_type, d.paths, d.chunks, d.generated, \
                 d.minified FROM cfs_members m JOIN cfs_chunks c ON c.leaf = m.leaf \
                 JOIN cfs_search s ON s.repo = m.repo AND s.chunk = c.id \
                 JOIN cfs_search_docs d ON d.repo = s.repo AND d.document = s.document \
                 WHERE m.repo = $1 AND m.tag = $2 AND m.key = ANY($3)",
                &[
                    &self.repo.id,
                    &crate::publish::tag_of(cfs_core::Table::Chunks),
                    &keys,
                ],
            )
            .map_err(sql_error(self.name, "read the found chunks"))?;
        let mut docs: HashMap<Uuid, Arc<DocInfo>> = HashMap::new();
        let mut metas = HashMap::with_capacity(rows.len());
        for row in rows {
            let encoding: Vec<u8> = row.get(0);
            let chunk = Chunk::decode(&encoding).map_err(|e| {
                StoreError::Corrupted(format!(
                    "a chunk of {:?} does not decode: {e}",
                    self.repo.name
                ))
            })?;
            let doc = docs
                .entry(row.get(1))
                .or_insert_with(|| doc_info(&row))
                .clone();
            let meta = cfs_search::chunk_meta(&chunk, doc);
            self.texts.insert(chunk.id, chunk.text);
            metas.insert(meta.id, Arc::new(meta));
        }
        Ok(metas)
    }

    /// The sum of the vectors of the first [`FILE_VECTOR_CHUNKS`] chunks of each
    /// document of a listed chunk (float32 sums of at most 256 `i16`s are exact).
    fn file_vectors(&mut self, lists: &ExternalLists) -> Result<HashMap<DocumentId, Vec<i64>>> {
        let listed = lists
            .text
            .iter()
            .chain(&lists.definitions)
            .map(|f| &f.chunk);
        let mut docs: Vec<Uuid> = listed
            .chain(lists.vector.iter().map(|f| &f.chunk))
            .map(|c| Uuid::from_bytes(c.doc.id.0))
            .collect();
        docs.sort_unstable();
        docs.dedup();
        let first = FILE_VECTOR_CHUNKS as i32;
        let rows = self
            .tx
            .query(
                "SELECT d.document, sum(v.v)::text FROM cfs_search_docs d \
                 CROSS JOIN LATERAL unnest(d.chunks[1:$3]) AS c(id) \
                 JOIN cfs_search s ON s.repo = d.repo AND s.chunk = c.id \
                 JOIN cfs_vectors v ON v.hash = s.vector \
                 WHERE d.repo = $1 AND d.document = ANY($2) GROUP BY d.document",
                &[&self.repo.id, &docs, &first],
            )
            .map_err(sql_error(self.name, "sum the found files' vectors"))?;
        let mut out = HashMap::with_capacity(rows.len());
        for row in rows {
            let text: String = row.get(1);
            let sum = floats_of(self.name, &text)?
                .iter()
                .map(|&x| x as i64)
                .collect();
            out.insert(DocumentId(*row.get::<_, Uuid>(0).as_bytes()), sum);
        }
        Ok(out)
    }
}

/// A document's info from its search row (columns 1-6 of [`RepoSearch::resolve`]).
fn doc_info(row: &postgres::Row) -> Arc<DocInfo> {
    let id: Uuid = row.get(1);
    let paths: Vec<String> = row.get(3);
    let chunks: Vec<Uuid> = row.get(4);
    let paths = paths
        .into_iter()
        .map(|p| PathInfo {
            path: p.into(),
            collections: Vec::new(),
        })
        .collect();
    let markers = Markers {
        generated: row.get(5),
        minified: row.get(6),
    };
    Arc::new(DocInfo::new(
        DocumentId(*id.as_bytes()),
        row.get::<_, String>(2).into(),
        paths,
        chunks.into_iter().map(|c| ChunkId(*c.as_bytes())).collect(),
        markers,
    ))
}

/// A list of chunk ids as found chunks (every id was resolved).
fn found<S>(list: Vec<(ChunkId, S)>, metas: &HashMap<ChunkId, Arc<ChunkMeta>>) -> Vec<Found<S>> {
    list.into_iter()
        .filter_map(|(id, score)| {
            Some(Found {
                chunk: metas.get(&id)?.clone(),
                score,
            })
        })
        .collect()
}

/// The definition list: each candidate's best score over the identifiers and lookup
/// terms that found it, best first, then chunk id, at most `depth`.
fn definitions(
    analysis: &Analysis,
    candidates: Vec<(ChunkId, String, u32)>,
    metas: &HashMap<ChunkId, Arc<ChunkMeta>>,
    depth: usize,
) -> Vec<Found<u64>> {
    let mut best: BTreeMap<ChunkId, u64> = BTreeMap::new();
    for (id, term, value) in candidates {
        let Some(meta) = metas.get(&id) else { continue };
        for ident in &analysis.identifiers {
            for (t, own, qualified) in lookup_terms(ident) {
                if t == term {
                    let score = definition_found(meta, ident, (own, qualified), value);
                    let e = best.entry(id).or_insert(score);
                    *e = (*e).max(score);
                }
            }
        }
    }
    let mut list: Vec<(u64, ChunkId)> = best.into_iter().map(|(id, s)| (s, id)).collect();
    list.sort_unstable_by_key(|&(s, id)| (std::cmp::Reverse(s), id));
    list.truncate(depth);
    list.into_iter()
        .map(|(score, id)| Found {
            chunk: metas[&id].clone(),
            score,
        })
        .collect()
}

/// The exact dot product of two integer vectors.
fn exact_dot(a: &[i16], b: &[i16]) -> i64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i64::from(x) * i64::from(y))
        .sum()
}

/// How far pgvector's float32 inner product of `q` with any `i16` vector of its
/// dimension can be from the exact one: `gamma(n + 1) * |q| * |v|max`, with
/// `gamma(m) = m u / (1 - m u)`, `u = 2^-24`, and `|v|max = 32767 sqrt(n)` (the
/// error of a sum of `n` products rounded in float32), doubled for margin.
fn float_error(q: &[i16]) -> f64 {
    let n = q.len() as f64;
    let u = f64::powi(2.0, -24);
    let gamma = (n + 1.0) * u / (1.0 - (n + 1.0) * u);
    let qn = q
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    2.0 * gamma * qn * 32767.0 * n.sqrt()
}

/// The numbers of a pgvector text, `[1,-2,3]`.
fn floats_of(name: &str, text: &str) -> Result<Vec<f64>> {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    if inner.is_empty() {
        return Ok(Vec::new());
    }
    inner
        .split(',')
        .map(|x| {
            x.trim().parse::<f64>().map_err(|_| {
                DbError::Store(StoreError::Corrupted(format!(
                    "{name} holds a vector that is not numbers: {x:?}"
                )))
            })
        })
        .collect()
}

/// An `i16` vector from its pgvector text; a component that is not an `i16` is damage.
fn vector_of(name: &str, text: &str) -> Result<Vec<i16>> {
    floats_of(name, text)?
        .into_iter()
        .map(|x| {
            let i = x as i16;
            match f64::from(i) == x {
                true => Ok(i),
                false => Err(DbError::Store(StoreError::Corrupted(format!(
                    "{name} holds a vector component {x} that is not an i16"
                )))),
            }
        })
        .collect()
}

fn chunk_id(u: Uuid) -> ChunkId {
    ChunkId(*u.as_bytes())
}

//! Search from the database: each repository's lists found in SQL from its search rows
//! (BM25 in exact integer arithmetic, definitions, vectors by pgvector re-scored by the
//! integer dot product until the list is proven exact), ranked by cfs-search's code as
//! a store's snapshot is, in one read-only snapshot of the database (a primary's or a
//! standby's); the repositories' answers merged by score (docs/format.md,
//! "PostgreSQL").

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cfs_core::{ChunkId, DocumentId, StateRoot};
use cfs_ingest::Embedder;
use cfs_search::{
    Analysis, ChunkMeta, ExternalLists, FileText, Found, Hit, Mode, Query, QueryTerm, RankedFile,
    SEARCH_ROWS_VERSION, analyze, chunk_list, definition_found, file_text_score_of, lookup_terms,
    tokens,
};
use cfs_store::StoreError;
use postgres::Transaction;
use postgres::types::ToSql;
use uuid::Uuid;

use crate::db::{Database, sql_error};
use crate::error::{DbError, Result};
use crate::filter_sql::FilterSql;
use crate::postings::{self, Posting};
use crate::proof::{Proof, prove};
use crate::resolve;

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
pub(crate) struct Repo {
    pub(crate) id: i32,
    pub(crate) name: String,
    model_id: String,
    pub(crate) root: StateRoot,
    pub(crate) sequence: u64,
    chunks: u64,
    tokens: u64,
    /// The version of the rules its search rows were derived by.
    rows_version: i32,
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
    let standby = is_standby(&mut tx, &name)?;
    let (repos, ranked) = rank_repos(&mut tx, (&name, &options.repos), query, embedder, false)?;
    let ranked = ranked.into_iter().map(|files| chunk_list(files, query.k));
    let mut best: Vec<(u64, usize, usize, cfs_search::RankedChunk)> = Vec::new();
    for (place, chunks) in ranked.into_iter().enumerate() {
        let chunks = chunks.into_iter().enumerate();
        best.extend(chunks.map(|(rank, c)| (c.parts.score, place, rank, c)));
    }
    best.sort_by_key(|e| (std::cmp::Reverse(e.0), e.1, e.2));
    best.truncate(query.k);
    let ids: Vec<(i32, ChunkId)> = best.iter().map(|e| (repos[e.1].id, e.3.meta.id)).collect();
    let mut texts = resolve::texts(&mut tx, &name, &ids)?;
    let words = tokens(&query.text);
    let mut hits = Vec::with_capacity(best.len());
    for (_, place, _, c) in best {
        let repo = &repos[place];
        // Every answer's chunk is a member of its repository: a text not found is damage.
        let text = texts
            .remove(&(repo.id, c.meta.id))
            .ok_or_else(|| DbError::Damaged {
                database: name.clone(),
                what: format!(
                    "chunk {} of repository {:?} has a search row but no text",
                    c.meta.id, repo.name
                ),
            })?;
        let hit = cfs_search::hit_of(c, text, repo.root, &words);
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
        hits.push(DbHit {
            repo: repo.name.clone(),
            hit,
            proof,
        });
    }
    tx.commit().map_err(sql_error(&name, "end the snapshot"))?;
    Ok(DbSearchReport {
        database: name,
        standby,
        repos: repos.into_iter().map(SearchedRepo::from).collect(),
        hits,
    })
}

/// Whether the database of the snapshot `tx` is a standby.
pub(crate) fn is_standby(tx: &mut Transaction<'_>, name: &str) -> Result<bool> {
    Ok(tx
        .query_one("SELECT pg_is_in_recovery()", &[])
        .map_err(sql_error(name, "ask whether it is a standby"))?
        .get(0))
}

impl From<Repo> for SearchedRepo {
    fn from(r: Repo) -> Self {
        Self {
            name: r.name,
            root: r.root,
            sequence: r.sequence,
        }
    }
}

/// The repositories `names` (every one when empty) of the database `name`, each ranked
/// for `query` in the snapshot `tx` as a local search of its store ranks it: its
/// files, best first, from lists as deep as a chunk answer takes them or, with
/// `files`, a file answer.
pub(crate) fn rank_repos(
    tx: &mut Transaction<'_>,
    (name, names): (&str, &[String]),
    query: &Query,
    embedder: &dyn Embedder,
    files: bool,
) -> Result<(Vec<Repo>, Vec<Vec<RankedFile>>)> {
    let repos = repos(tx, name, names)?;
    let filter = FilterSql::new(&query.filter)?;
    let ids: Vec<i32> = repos.iter().map(|r| r.id).collect();
    let terms = posting_terms(query, &analyze(&query.text));
    let mut postings = postings::read(tx, name, &ids, &terms)?;
    let mut pending = Vec::with_capacity(repos.len());
    for repo in &repos {
        if repo.model_id != embedder.model_id() && query.mode != Mode::Text {
            return Err(DbError::Store(StoreError::ModelMismatch {
                store: format!("repository {:?}'s {}", repo.name, repo.model_id),
                embedder: embedder.model_id().to_owned(),
            }));
        }
        let mut r = RepoSearch {
            tx,
            name,
            repo,
            filter: &filter,
            depth: cfs_search::list_depth(query, files),
            postings: terms
                .iter()
                .filter_map(|t| Some((t.clone(), postings.remove(&(repo.id, t.clone()))?)))
                .collect(),
        };
        pending.push(r.lists(query, embedder)?);
    }
    vector_lists(tx, (name, &filter), &repos, query, embedder, &mut pending)?;
    let ids = pending.iter().flat_map(|p| p.ids().map(|id| (p.repo, id)));
    let metas = resolve::chunks(tx, name, ids.collect())?;
    let ranked = rank_all(tx, name, query, pending, &metas)?;
    Ok((repos, ranked))
}

/// The embedders of the repositories `names` (every one when empty), distinct and
/// sorted: a search ranks vectors of one.
pub fn models(db: &mut Database, names: &[String]) -> Result<Vec<String>> {
    let (name, mut tx) = schema::read_snapshot(db)?;
    let rows = tx
        .query(
            "SELECT DISTINCT model_id FROM cfs_repos \
             WHERE cardinality($1::text[]) = 0 OR name = ANY($1) ORDER BY 1",
            &[&names],
        )
        .map_err(sql_error(&name, "read the repositories' embedders"))?;
    tx.commit().map_err(sql_error(&name, "end the snapshot"))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// A repository's head and search totals from its row of [`repos`]; a negative count
/// (only damage makes one) is an error, not a wrapped-around number.
fn repo_of(name: &str, row: &postgres::Row) -> Result<Repo> {
    let repo: String = row.get(1);
    let count = |i: usize, what: &str| {
        u64::try_from(row.get::<_, i64>(i)).map_err(|_| DbError::Damaged {
            database: name.to_owned(),
            what: format!("repository {repo:?} holds a negative {what}"),
        })
    };
    Ok(Repo {
        id: row.get(0),
        model_id: row.get(2),
        root: StateRoot(crate::publish::root_of(
            name,
            "a head's state root",
            row.get(3),
        )?),
        sequence: count(4, "sequence")?,
        chunks: count(5, "chunk count")?,
        tokens: count(6, "token count")?,
        rows_version: row.get(7),
        name: repo,
    })
}

/// The repositories named (every one when `names` is empty), by name; an unknown name
/// is an error listing the known ones.
fn repos(tx: &mut Transaction<'_>, name: &str, names: &[String]) -> Result<Vec<Repo>> {
    let rows = tx
        .query(
            "SELECT r.id, r.name, r.model_id, h.state_root, h.sequence, \
             coalesce(s.chunks, 0), coalesce(s.tokens, 0), coalesce(s.rows_version, 0) \
             FROM cfs_repos r JOIN cfs_heads h ON h.repo = r.id \
             LEFT JOIN cfs_search_stats s ON s.repo = r.id ORDER BY r.name",
            &[],
        )
        .map_err(sql_error(name, "read the repositories' heads"))?;
    let known: Vec<String> = rows.iter().map(|r| r.get(1)).collect();
    if let Some(unknown) = names.iter().find(|n| !known.contains(n)) {
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
    // Only the repositories asked for are read further: damage in another's head is
    // not this search's.
    let asked = rows
        .iter()
        .filter(|r| names.is_empty() || names.contains(&r.get::<_, String>(1)));
    let all: Vec<Repo> = asked.map(|row| repo_of(name, row)).collect::<Result<_>>()?;
    if let Some(old) = all.iter().find(|r| r.rows_version != SEARCH_ROWS_VERSION) {
        return Err(DbError::Version {
            database: name.to_owned(),
            what: format!(
                "the search rows of repository {:?} were derived by other rules (rows \
                 version {}; this build ranks with version {SEARCH_ROWS_VERSION}): publish \
                 it again to write them anew",
                old.name, old.rows_version
            ),
        });
    }
    Ok(all)
}

/// One repository's search, in the snapshot's transaction.
struct RepoSearch<'a, 't> {
    tx: &'a mut Transaction<'t>,
    name: &'a str,
    repo: &'a Repo,
    filter: &'a FilterSql,
    /// The posting lists of the query's terms in the repository, by term.
    postings: HashMap<String, Vec<Posting>>,
    /// How deep each list is taken ([`cfs_search::list_depth`]).
    depth: usize,
}

/// One repository's lists, found, before their chunks are read.
struct Pending {
    repo: i32,
    /// Whether its vector list is searched.
    needs_vectors: bool,
    analysis: Analysis,
    weight: u32,
    depth: usize,
    text: Vec<(ChunkId, u64)>,
    definitions: Vec<(ChunkId, String, u32)>,
    vector: Vec<(ChunkId, i64)>,
    /// Masks, word weights and the query vector, filled as the lists were found.
    lists: ExternalLists,
    /// What its files' text scores are computed from, when the intent weighs them.
    file_text: Option<FileTextInput>,
}

/// A repository's query terms as its text list scored them, their posting lists and
/// its tokens: enough to score its candidate files' whole texts ([`file_texts`]).
struct FileTextInput {
    terms: Vec<QueryTerm>,
    postings: HashMap<String, Vec<Posting>>,
    tokens: u64,
}

impl Pending {
    /// The chunks of its lists.
    fn ids(&self) -> impl Iterator<Item = ChunkId> + '_ {
        let text = self.text.iter().map(|t| t.0);
        let vector = self.vector.iter().map(|v| v.0);
        text.chain(vector)
            .chain(self.definitions.iter().map(|d| d.0))
    }
}

/// The vector lists of the repositories of `pending` that need one: the query
/// embedded once, the nearest of every one of them read in one scan, each list then
/// proven exact (or completed) on its own.
fn vector_lists(
    tx: &mut Transaction<'_>,
    (name, filter): (&str, &FilterSql),
    repos: &[Repo],
    query: &Query,
    embedder: &dyn Embedder,
    pending: &mut [Pending],
) -> Result<()> {
    if !pending.iter().any(|p| p.needs_vectors) {
        return Ok(());
    }
    let q = embedder
        .embed_batch(&[query.text.as_str()])
        .map_err(|e| StoreError::Embedder(format!("embedding the query: {e}")))?
        .into_iter()
        .next()
        .unwrap_or_default();
    let needing: Vec<i32> = pending
        .iter()
        .filter(|p| p.needs_vectors)
        .map(|p| p.repo)
        .collect();
    // Every repository's lists are taken equally deep.
    let depth = pending.iter().map(|p| p.depth).max().unwrap_or(0);
    let fetch = depth * 2 + 50;
    let searched = !q.iter().all(|&x| x == 0) && depth > 0;
    let mut found = match searched {
        true => nearest_all(tx, name, filter, (&needing, &q, fetch))?,
        false => HashMap::new(),
    };
    for (p, repo) in pending
        .iter_mut()
        .zip(repos)
        .filter(|(p, _)| p.needs_vectors)
    {
        p.lists.query_vector = q.clone();
        if !searched {
            continue;
        }
        let mut r = RepoSearch {
            tx,
            name,
            repo,
            filter,
            postings: HashMap::new(),
            depth,
        };
        let nearest = found.remove(&repo.id).unwrap_or_default();
        p.vector = r.vector_list(&q, depth, nearest, fetch)?;
    }
    Ok(())
}

/// Each repository's files ranked, best first: its lists resolved by `metas` (by repository and chunk), the definitions scored, the file
/// vectors of every repository's candidate documents summed in one statement.
fn rank_all(
    tx: &mut Transaction<'_>,
    name: &str,
    query: &Query,
    pending: Vec<Pending>,
    metas: &HashMap<(i32, ChunkId), Arc<ChunkMeta>>,
) -> Result<Vec<Vec<RankedFile>>> {
    let mut ready: Vec<Ready> = Vec::with_capacity(pending.len());
    for p in pending {
        let mut lists = p.lists;
        let of = |id: &ChunkId| metas.get(&(p.repo, *id)).cloned();
        lists.text = found(p.text, &of);
        lists.vector = found(p.vector, &of);
        lists.definitions = definitions(&p.analysis, p.definitions, &of, p.depth);
        ready.push((p.repo, p.analysis, p.weight, lists, p.file_text));
    }
    file_texts(tx, name, &mut ready)?;
    let docs = ready
        .iter()
        .filter(|r| !r.3.query_vector.is_empty())
        .flat_map(|(repo, _, _, lists, _)| candidate_docs(lists).map(move |d| (*repo, d)));
    let dim = ready
        .iter()
        .map(|r| r.3.query_vector.len())
        .max()
        .unwrap_or(0);
    let mut sums = resolve::file_vectors(tx, name, docs.collect(), dim)?;
    Ok(ready
        .into_iter()
        .map(|(repo, analysis, weight, mut lists, _)| {
            if !lists.query_vector.is_empty() {
                let docs: Vec<DocumentId> = candidate_docs(&lists).collect();
                lists.file_vectors = docs
                    .into_iter()
                    .filter_map(|d| Some((d, sums.remove(&(repo, d))?)))
                    .collect();
            }
            cfs_search::rank_external(lists, query, &analysis, weight)
        })
        .collect())
}

/// The file text scores of the candidate files of each repository of `ready` that has
/// file text input ([`cfs_search::file_text_score_of`]): each term's counts summed over
/// a file's chunks from its posting list, the files' lengths and the repositories'
/// numbers of documents read in one statement each.
fn file_texts(tx: &mut Transaction<'_>, name: &str, ready: &mut [Ready]) -> Result<()> {
    let wanted: Vec<(i32, DocumentId)> = ready
        .iter()
        .filter(|r| r.4.is_some())
        .flat_map(|(repo, _, _, lists, _)| candidate_docs(lists).map(move |d| (*repo, d)))
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let repos: Vec<i32> = ready
        .iter()
        .filter(|r| r.4.is_some())
        .map(|r| r.0)
        .collect();
    let documents = resolve::document_counts(tx, name, repos)?;
    let lengths = resolve::file_lengths(tx, name, wanted)?;
    for (repo, _, _, lists, input) in ready.iter_mut() {
        let Some(input) = input else { continue };
        let mut docs: Vec<Arc<cfs_search::DocInfo>> = candidate_files(lists).collect();
        docs.sort_unstable_by_key(|d| d.id);
        docs.dedup_by_key(|d| d.id);
        let place: HashMap<[u8; 16], usize> = docs
            .iter()
            .enumerate()
            .flat_map(|(i, d)| d.chunks.iter().map(move |c| (c.0, i)))
            .collect();
        let mut counts = vec![vec![0u64; input.terms.len()]; docs.len()];
        for (t, term) in input.terms.iter().enumerate() {
            for p in input.postings.get(&term.term).into_iter().flatten() {
                if let Some(&i) = place.get(&p.chunk) {
                    counts[i][t] += u64::from(p.count);
                }
            }
        }
        for (doc, counts) in docs.iter().zip(&counts) {
            let file = FileText {
                documents: documents.get(repo).copied().unwrap_or(0),
                tokens: input.tokens,
                length: lengths.get(&(*repo, doc.id)).copied().unwrap_or(0),
            };
            if let Some(score) = file_text_score_of(&file, &input.terms, counts) {
                lists.file_texts.insert(doc.id, score);
            }
        }
    }
    Ok(())
}

/// A repository's lists, resolved, ready to rank: the repository, the query read, the
/// vector weight, the lists and what its file text scores come from.
type Ready = (i32, Analysis, u32, ExternalLists, Option<FileTextInput>);

/// The documents of the chunks of `lists`, as their infos (each once per chunk).
fn candidate_files(lists: &ExternalLists) -> impl Iterator<Item = Arc<cfs_search::DocInfo>> + '_ {
    let listed = lists
        .text
        .iter()
        .chain(&lists.definitions)
        .map(|f| &f.chunk);
    listed
        .chain(lists.vector.iter().map(|f| &f.chunk))
        .map(|c| Arc::clone(&c.doc))
}

/// The documents of the chunks of `lists`.
fn candidate_docs(lists: &ExternalLists) -> impl Iterator<Item = DocumentId> + '_ {
    candidate_files(lists).map(|d| d.id)
}

impl RepoSearch<'_, '_> {
    /// The repository's lists for `query`, found.
    fn lists(&mut self, query: &Query, embedder: &dyn Embedder) -> Result<Pending> {
        // The vector list is found afterwards, for every repository that needs one at
        // once (vector_lists).
        let analysis = analyze(&query.text);
        let depth = self.depth;
        let weight = cfs_search::vector_weight(query, &analysis, embedder);
        let mut lists = ExternalLists::default();
        let mut terms = Vec::new();
        let words_run = query.mode != Mode::Vector;
        let text = match words_run {
            true => self.text_list(query, depth, &mut lists, &mut terms)?,
            false => Vec::new(),
        };
        let weighs_files = query.ranking.weights(analysis.intent).file_text > 0;
        let file_text = (weighs_files && !terms.is_empty()).then(|| FileTextInput {
            terms,
            postings: std::mem::take(&mut self.postings),
            tokens: self.repo.tokens,
        });
        let look_up = words_run && query.ranking.definitions && !analysis.identifiers.is_empty();
        let definitions = match look_up {
            true => self.definition_candidates(&analysis)?,
            false => Vec::new(),
        };
        Ok(Pending {
            repo: self.repo.id,
            needs_vectors: cfs_search::vectors_needed(query, weight, text.len(), depth),
            analysis,
            weight,
            depth,
            text,
            definitions,
            vector: Vec::new(),
            lists,
            file_text,
        })
    }

    /// BM25 over the repository's chunks from its posting lists: the top `depth`
    /// passing the filter, with their word masks and the words' weights in `lists` and
    /// the terms held, as scored, in `scored`, as `cfs_search` scores a snapshot's
    /// postings.
    fn text_list(
        &mut self,
        query: &Query,
        depth: usize,
        lists: &mut ExternalLists,
        scored: &mut Vec<QueryTerm>,
    ) -> Result<Vec<(ChunkId, u64)>> {
        let (words, terms) = cfs_search::text_terms(query);
        lists.word_weights = vec![0; words.len()];
        let (n, total) = (self.repo.chunks, self.repo.tokens);
        if terms.is_empty() || n == 0 || depth == 0 {
            return Ok(Vec::new());
        }
        let mut acc: HashMap<[u8; 16], (u64, u64)> = HashMap::new();
        for (term, shift, word) in &terms {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let idf = cfs_search::idf(n, list.len() as u64);
            scored.push(QueryTerm {
                term: term.clone(),
                shift: *shift,
                idf,
            });
            if !cfs_search::STOP_WORDS.contains(&words[*word].as_str()) {
                lists.word_weights[*word] = lists.word_weights[*word].max(idf);
            }
            for p in list {
                let part = cfs_search::tf_part(p.count.into(), p.length.into(), n, total);
                let e = acc.entry(p.chunk).or_default();
                e.0 += ((idf * part) >> shift) + 1;
                if *word < 64 {
                    e.1 |= 1 << word;
                }
            }
        }
        let mut all: Vec<(u64, ChunkId, u64)> = acc
            .into_iter()
            .map(|(id, (score, mask))| (score, ChunkId(id), mask))
            .collect();
        let pass = self.passing(all.iter().map(|a| a.1))?;
        all.retain(|a| pass.as_ref().is_none_or(|p| p.contains(&a.1)));
        all.sort_unstable_by_key(|a| (std::cmp::Reverse(a.0), a.1));
        all.truncate(depth);
        for a in &all {
            lists.masks.insert(a.1, a.2);
        }
        Ok(all.into_iter().map(|a| (a.1, a.0)).collect())
    }

    /// Of `ids`, those passing the filter (`None`: no filter, every one passes).
    fn passing(
        &mut self,
        ids: impl Iterator<Item = ChunkId>,
    ) -> Result<Option<std::collections::HashSet<ChunkId>>> {
        if self.filter.is_empty() {
            return Ok(None);
        }
        let ids: Vec<Uuid> = ids.map(|c| Uuid::from_bytes(c.0)).collect();
        let sql = format!(
            "SELECT s.chunk FROM cfs_search s {join} WHERE s.repo = $1 AND s.chunk = ANY($2) \
             {filter}",
            join = self.filter.join(),
            filter = self.filter.clause(3),
        );
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&self.repo.id, &ids];
        params.extend(self.filter.params());
        let rows = self
            .tx
            .query(&sql, &params)
            .map_err(sql_error(self.name, "filter the found chunks"))?;
        Ok(Some(rows.iter().map(|r| chunk_id(r.get(0))).collect()))
    }

    /// The chunks passing the filter posted under a definition term of the query's
    /// identifiers, with the term and its value.
    fn definition_candidates(
        &mut self,
        analysis: &Analysis,
    ) -> Result<Vec<(ChunkId, String, u32)>> {
        let mut found = Vec::new();
        for term in definition_terms(analysis) {
            let list = self.postings.get(&term).into_iter().flatten();
            found.extend(list.map(|p| (ChunkId(p.chunk), term.clone(), p.count)));
        }
        let pass = self.passing(found.iter().map(|f| f.0))?;
        found.retain(|f| pass.as_ref().is_none_or(|p| p.contains(&f.0)));
        Ok(found)
    }

    /// The `depth` chunks passing the filter whose vectors are nearest `q` by the exact
    /// integer dot product, ties by chunk id, from the `fetch` nearest by pgvector's
    /// float32 product (`found`, [`nearest_all`]): when those do not prove the list
    /// (the depth-th exact score is not above the last one's float product plus
    /// [`float_error`]), every chunk that could reach it is read.
    fn vector_list(
        &mut self,
        q: &[i16],
        depth: usize,
        mut found: Vec<Near>,
        fetch: usize,
    ) -> Result<Vec<(ChunkId, i64)>> {
        let bound = float_error(q);
        let best = |found: &[Near]| {
            let mut scored: Vec<(i64, ChunkId)> = found
                .iter()
                .map(|(id, v, _)| (exact_dot(q, v), *id))
                .collect();
            scored.sort_unstable_by_key(|&(s, id)| (std::cmp::Reverse(s), id));
            scored.dedup_by_key(|e| e.1);
            scored.truncate(depth);
            scored
        };
        let mut scored = best(&found);
        let last_float = found.iter().map(|f| f.2).fold(f64::INFINITY, f64::min);
        let exhausted = found.len() < fetch;
        let proven = scored.len() == depth && scored[depth - 1].0 as f64 > last_float + bound;
        if !exhausted && !proven {
            // Every chunk of the true list scores at least the depth-th found, so its
            // float product is at least that minus the bound: those are all read.
            let floor = scored[depth - 1].0 as f64 - bound;
            found.extend(self.nearest(q, floor)?);
            scored = best(&found);
        }
        Ok(scored.into_iter().map(|(s, id)| (id, s)).collect())
    }

    /// The chunks passing the filter whose float product with `q` is at least `floor`,
    /// with their vectors and that product.
    fn nearest(&mut self, q: &[i16], floor: f64) -> Result<Vec<Near>> {
        let text = crate::content::vector_text(q);
        let sql = format!(
            "SELECT s.chunk, vector_send(s.v), -(s.v <#> $2::text::vector) AS ip \
             FROM cfs_search s {join} \
             WHERE s.repo = $1 AND vector_dims(s.v) = $3 \
             AND -(s.v <#> $2::text::vector) >= $4 {filter}",
            join = self.filter.join(),
            filter = self.filter.clause(5),
        );
        let dim = q.len() as i32;
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&self.repo.id, &text, &dim, &floor];
        params.extend(self.filter.params());
        let rows = self
            .tx
            .query(&sql, &params)
            .map_err(sql_error(self.name, "search the vectors"))?;
        rows.iter()
            .map(|r| {
                Ok((
                    chunk_id(r.get(0)),
                    vector_of(self.name, r.get(1))?,
                    r.get(2),
                ))
            })
            .collect()
    }
}

/// A chunk near the query: its id, vector and float32 inner product with the query.
type Near = (ChunkId, Vec<i16>, f64);

/// The `fetch` chunks of each of `repos` passing the filter nearest `q` by pgvector's
/// float32 inner product, with their vectors and that product, in one scan.
fn nearest_all(
    tx: &mut Transaction<'_>,
    name: &str,
    filter: &FilterSql,
    (repos, q, fetch): (&[i32], &[i16], usize),
) -> Result<HashMap<i32, Vec<Near>>> {
    let text = crate::content::vector_text(q);
    let sql = format!(
        "SELECT x.repo, x.chunk, vector_send(t.v), x.ip FROM ( \
           SELECT repo, chunk, ip, \
             row_number() OVER (PARTITION BY repo ORDER BY ip DESC) AS r FROM ( \
               SELECT s.repo, s.chunk, -(s.v <#> $2::text::vector) AS ip \
               FROM cfs_search s {join} \
               WHERE s.repo = ANY($1) AND vector_dims(s.v) = $3 {filter}) y) x \
         JOIN cfs_search t ON t.repo = x.repo AND t.chunk = x.chunk \
         WHERE x.r <= $4",
        join = filter.join(),
        filter = filter.clause(5),
    );
    let (dim, fetch) = (q.len() as i32, fetch as i64);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&repos, &text, &dim, &fetch];
    params.extend(filter.params());
    let rows = tx
        .query(&sql, &params)
        .map_err(sql_error(name, "search the vectors"))?;
    let mut out: HashMap<i32, Vec<_>> = HashMap::new();
    for r in rows {
        let found = (chunk_id(r.get(1)), vector_of(name, r.get(2))?, r.get(3));
        out.entry(r.get(0)).or_default().push(found);
    }
    Ok(out)
}

/// A list of chunk ids as found chunks (every id was resolved).
fn found<S>(
    list: Vec<(ChunkId, S)>,
    meta: &dyn Fn(&ChunkId) -> Option<Arc<ChunkMeta>>,
) -> Vec<Found<S>> {
    list.into_iter()
        .filter_map(|(id, score)| {
            Some(Found {
                chunk: meta(&id)?,
                score,
            })
        })
        .collect()
}

/// The terms the query's identifiers are looked up by, sorted.
fn definition_terms(analysis: &Analysis) -> Vec<String> {
    let mut terms: Vec<String> = analysis
        .identifiers
        .iter()
        .flat_map(|i| lookup_terms(i).into_iter().map(|t| t.0))
        .collect();
    terms.sort_unstable();
    terms.dedup();
    terms
}

/// The terms whose posting lists `query` reads: its text terms, and its identifiers'
/// definition terms.
fn posting_terms(query: &Query, analysis: &Analysis) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    if query.mode != Mode::Vector {
        terms.extend(cfs_search::text_terms(query).1.into_iter().map(|t| t.0));
        if query.ranking.definitions {
            terms.extend(definition_terms(analysis));
        }
    }
    terms.sort_unstable();
    terms.dedup();
    terms
}

/// The definition list: each candidate's best score over the identifiers and lookup
/// terms that found it, best first, then chunk id, at most `depth`.
fn definitions(
    analysis: &Analysis,
    candidates: Vec<(ChunkId, String, u32)>,
    meta_of: &dyn Fn(&ChunkId) -> Option<Arc<ChunkMeta>>,
    depth: usize,
) -> Vec<Found<u64>> {
    let mut best: BTreeMap<ChunkId, (u64, Arc<ChunkMeta>)> = BTreeMap::new();
    for (id, term, value) in candidates {
        let Some(meta) = meta_of(&id) else { continue };
        for ident in &analysis.identifiers {
            for (t, own, qualified) in lookup_terms(ident) {
                if t == term {
                    let score = definition_found(&meta.view(), ident, (own, qualified), value);
                    let e = best.entry(id).or_insert((score, Arc::clone(&meta)));
                    e.0 = e.0.max(score);
                }
            }
        }
    }
    let mut list: Vec<(u64, ChunkId, Arc<ChunkMeta>)> =
        best.into_iter().map(|(id, (s, m))| (s, id, m)).collect();
    list.sort_unstable_by_key(|e| (std::cmp::Reverse(e.0), e.1));
    list.truncate(depth);
    list.into_iter()
        .map(|(score, _, chunk)| Found { chunk, score })
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

/// An `i16` vector from pgvector's binary form (`vector_send`: the dimension and an
/// unused word as `i16`, then each component as a big-endian `f32`); a component that
/// is not an `i16` is damage.
fn vector_of(name: &str, bytes: &[u8]) -> Result<Vec<i16>> {
    let damaged = |what: String| DbError::Store(StoreError::Corrupted(format!("{name}: {what}")));
    let body = bytes.get(4..).filter(|b| b.len() % 4 == 0);
    let body = body.ok_or_else(|| damaged("a vector's binary form is cut short".into()))?;
    body.chunks_exact(4)
        .map(|b| {
            let x = f32::from_be_bytes(b.try_into().expect("4 bytes"));
            let i = x as i16;
            match f32::from(i) == x {
                true => Ok(i),
                false => Err(damaged(format!("a vector component {x} is not an i16"))),
            }
        })
        .collect()
}

fn chunk_id(u: Uuid) -> ChunkId {
    ChunkId(*u.as_bytes())
}

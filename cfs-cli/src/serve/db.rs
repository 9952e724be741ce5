//! `cfs serve --mcp --db URL`: the repositories published in a database served to
//! coding agents. `search` ranks them as `cfs search --db` does (each answer read in
//! one snapshot of the database, naming each result's repository and head); `status`
//! lists the repositories and their heads. One connection, used by one tool call at a
//! time; the server holds no copy of the rows, so it answers from whatever the
//! database (a primary or a standby) holds now.

use std::sync::{Arc, Mutex};

use cfs_ingest::Embedder;
use cfs_postgres::{Database, DbSearchOptions};
use cfs_search::{Filter, Query};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{Json, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::answers::query_options;
use super::tools::{blocking, text_and_cited};
use crate::context_cmd::ContextFileJson;

/// What the server holds: the connection, the repositories' embedder, the
/// repositories served (none: every one).
pub struct DbServed {
    pub db: Mutex<Database>,
    pub embedder: Box<dyn Embedder>,
    pub repos: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DbSearchParams {
    /// What to look for: words, an identifier, a question in plain language.
    pub query: String,
    /// Number of results across the repositories, 1 to 100 (default 10).
    pub k: Option<u32>,
    /// Only these repositories (default: every one served).
    pub repos: Option<Vec<String>>,
    /// "hybrid" (default: text and vectors fused), "text" (BM25) or "vector".
    pub mode: Option<String>,
    /// Only chunks of files whose path starts with this.
    pub path: Option<String>,
    /// Only code chunks of this language (rust, python, go, typescript, ...).
    pub lang: Option<String>,
    /// Only chunks of this kind: text, section, code or page.
    pub kind: Option<String>,
    /// Only files of this role: source, declaration, config, docs, example, test,
    /// generated or vendored.
    pub role: Option<String>,
    /// Prove each result against its repository's head (its rows re-hashed up to the
    /// head's state root) before answering.
    pub check_answers: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DbSearchAnswer {
    /// Whether the database answered as a standby.
    pub standby: bool,
    /// The repositories searched, each with the state root of the head read.
    pub heads: Vec<Head>,
    /// Chunks of all of them, best first.
    pub results: Vec<DbFound>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Head {
    pub repo: String,
    pub root: String,
}

impl From<cfs_postgres::SearchedRepo> for Head {
    fn from(r: cfs_postgres::SearchedRepo) -> Self {
        Self {
            repo: r.name,
            root: r.root.to_hex(),
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DbFound {
    /// The repository.
    pub repo: String,
    /// The file (relative to the repository's tree).
    pub path: String,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, inclusive.
    pub end_line: u32,
    /// text, section, code or page.
    pub kind: String,
    /// The code symbol, `parent::name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// Its file's role.
    pub role: String,
    /// The ranking score.
    pub score: f64,
    /// The chunk's whole text.
    pub text: String,
    /// Whether it was proved against its repository's head.
    pub proved: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DbStatusAnswer {
    /// The repositories published, each with its head.
    pub repos: Vec<RepoLine>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RepoLine {
    pub repo: String,
    pub sequence: u64,
    pub root: Option<String>,
    pub published: String,
    pub embedder: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DbContextParams {
    /// What the context is for: a question, a description of behaviour, a name.
    pub query: String,
    /// The most tokens the context may take, 64 to 262144 (default 4000; estimated
    /// from its bytes as `cfs context` does).
    pub tokens: Option<u32>,
    /// Files drawn from, across the repositories, 1 to 100 (default 10).
    pub k: Option<u32>,
    /// Only these repositories (default: every one served).
    pub repos: Option<Vec<String>>,
    /// "hybrid" (default), "text" or "vector".
    pub mode: Option<String>,
    /// Only files whose path starts with this.
    pub path: Option<String>,
    /// Only code chunks of this language.
    pub lang: Option<String>,
    /// Only chunks of this kind: text, section, code or page.
    pub kind: Option<String>,
    /// Only files of this role (as search takes it).
    pub role: Option<String>,
}

/// What the `context` tool answers besides its text block (the context as Markdown,
/// each span cited `[REPO] PATH:LINES`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct DbContextAnswer {
    /// Whether the database answered as a standby.
    pub standby: bool,
    /// The repositories read, each with the state root of the head read.
    pub heads: Vec<Head>,
    pub budget: u32,
    /// The estimated tokens of the text block: at most `budget`.
    pub tokens: u32,
    /// Ranked chunks that did not fit.
    pub left_out: usize,
    /// The files in the answer's order, each naming its repository, with its spans'
    /// lines, chunks, symbols and tokens.
    pub files: Vec<ContextFileJson>,
}

/// The query `params` ask.
fn query_of(params: &DbSearchParams) -> Result<Query, String> {
    let (k, mode, role) = query_options(params.k, params.mode.as_deref(), params.role.as_deref())?;
    Ok(Query::new(params.query.clone())
        .k(k)
        .mode(mode)
        .filter(Filter {
            path_prefix: params.path.clone(),
            language: params.lang.clone(),
            kind: params.kind.clone(),
            role,
            ..Filter::default()
        }))
}

/// The repositories a request names (`None`: every one served), checked.
fn repos_asked(served: &DbServed, asked: Option<Vec<String>>) -> Result<Vec<String>, String> {
    if asked.as_ref().is_some_and(Vec::is_empty) {
        // An empty list must not read as "every repository" (the database's default).
        return Err(
            "repos names no repository: name one, or leave repos out for every \
                    one served here"
                .into(),
        );
    }
    let repos = asked.unwrap_or_else(|| served.repos.clone());
    if let Some(r) = repos
        .iter()
        .find(|r| !served.repos.is_empty() && !served.repos.contains(r))
    {
        return Err(format!("repository {r:?} is not served here"));
    }
    Ok(repos)
}

/// Runs `params` on the database.
fn search_answer(served: &DbServed, params: DbSearchParams) -> Result<DbSearchAnswer, String> {
    let query = query_of(&params)?;
    let options = DbSearchOptions {
        repos: repos_asked(served, params.repos)?,
        check_answers: params.check_answers.unwrap_or(false),
    };
    let mut db = served.db.lock().unwrap_or_else(|e| e.into_inner());
    let report = cfs_postgres::search(&mut db, &query, &*served.embedder, &options)
        .map_err(|e| e.to_string())?;
    Ok(DbSearchAnswer {
        standby: report.standby,
        heads: report.repos.into_iter().map(Head::from).collect(),
        results: report
            .hits
            .into_iter()
            .map(|h| DbFound {
                repo: h.repo,
                path: h.hit.path,
                start_line: h.hit.start_line,
                end_line: h.hit.end_line,
                kind: h.hit.kind,
                symbol: h.hit.symbol,
                role: h.hit.role.name().to_owned(),
                score: h.hit.score,
                text: h.hit.text,
                proved: h.proof.is_some(),
            })
            .collect(),
    })
}

/// Runs a context request on the database: the answer, and the context as Markdown.
fn context_answer(
    served: &DbServed,
    params: DbContextParams,
) -> Result<(DbContextAnswer, String), String> {
    let tokens = params.tokens.unwrap_or(4000);
    let asked = DbSearchParams {
        query: params.query,
        k: params.k,
        repos: None,
        mode: params.mode,
        path: params.path,
        lang: params.lang,
        kind: params.kind,
        role: params.role,
        check_answers: None,
    };
    let query = query_of(&asked)?;
    let repos = repos_asked(served, params.repos)?;
    let mut db = served.db.lock().unwrap_or_else(|e| e.into_inner());
    let found = cfs_postgres::context(&mut db, &query, &*served.embedder, &repos, tokens)
        .map_err(|e| e.to_string())?;
    let text = found.packed.render();
    Ok((
        DbContextAnswer {
            standby: found.standby,
            heads: found.repos.into_iter().map(Head::from).collect(),
            budget: found.budget,
            tokens: found.packed.tokens,
            left_out: found.packed.left_out,
            files: found
                .packed
                .files
                .iter()
                .map(|f| ContextFileJson::of(f).cited())
                .collect(),
        },
        text,
    ))
}

/// The repositories served and their heads.
fn status_answer(served: &DbServed) -> Result<DbStatusAnswer, String> {
    let mut db = served.db.lock().unwrap_or_else(|e| e.into_inner());
    let status = cfs_postgres::status(&mut db).map_err(|e| e.to_string())?;
    let repos = status
        .repos
        .into_iter()
        .filter(|r| served.repos.is_empty() || served.repos.contains(&r.name))
        .map(|r| RepoLine {
            repo: r.name,
            sequence: r.sequence,
            root: r.state_root.map(|s| s.to_hex()),
            published: r.published,
            embedder: r.model_id,
        })
        .collect();
    Ok(DbStatusAnswer { repos })
}

/// The MCP server of a database's repositories.
#[derive(Clone)]
pub struct DbServer {
    served: Arc<DbServed>,
    tool_router: ToolRouter<Self>,
}

#[tool_router(router = tool_router)]
impl DbServer {
    pub fn new(served: Arc<DbServed>) -> Self {
        Self {
            served,
            tool_router: Self::tool_router(),
        }
    }

    /// Search the repositories published in the database for where code is: a bare
    /// name finds its definition first; words find the code that implements them (BM25,
    /// vectors and definitions fused, each repository ranked as its own store ranks
    /// it). Each result names its repository, file and line range, with its text.
    #[tool(name = "search")]
    async fn search(
        &self,
        Parameters(params): Parameters<DbSearchParams>,
    ) -> Result<Json<DbSearchAnswer>, String> {
        let served = Arc::clone(&self.served);
        blocking(move || search_answer(&served, params))
            .await
            .map(Json)
    }

    /// Context for a question within a budget of tokens, from every repository served:
    /// the text of the best files' best chunks (every file's best before any file's
    /// second), joined where they touch, as Markdown with each span cited
    /// [REPO] PATH:LINES (the text block; the structured answer lists the spans without
    /// their text, and the heads read).
    #[tool(name = "context")]
    async fn context(
        &self,
        Parameters(params): Parameters<DbContextParams>,
    ) -> Result<CallToolResult, String> {
        let served = Arc::clone(&self.served);
        let (answer, text) = blocking(move || context_answer(&served, params)).await?;
        text_and_cited(text, &answer)
    }

    /// The repositories served, each with its head: sequence, state root, when it was
    /// published, and its embedder.
    #[tool(name = "status")]
    async fn status(&self) -> Result<Json<DbStatusAnswer>, String> {
        let served = Arc::clone(&self.served);
        blocking(move || status_answer(&served)).await.map(Json)
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "cfs",
    instructions = "Search the repositories published in a cfs database. search returns chunks naming repository, path, lines and text; context returns the best files' text within a budget of tokens; status lists the repositories and their heads; every answer names the state roots it came from."
)]
impl ServerHandler for DbServer {}

impl super::Tools for DbServer {
    fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.tool_router.list_all()
    }
}

//! The server's tools as the Model Context Protocol sees them: names, JSON schemas
//! (from the parameter and answer types), and structured results. Each tool runs its
//! work on a blocking thread over one snapshot; a failure is a tool error whose message
//! says what was wrong.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{Json, ServerHandler, tool, tool_handler, tool_router};

use super::admin::{self, RefreshAnswer, RefreshParams, StatusAnswer};
use super::answers::{
    ChunkAnswer, ChunkParams, CollectionsAnswer, ContextParams, FileAnswer, FileParams,
    SearchAnswer, SearchParams, chunk_answer, collections_answer, context_answer, file_answer,
    search_answer,
};
use super::served::Served;

/// The MCP server of one store.
#[derive(Clone)]
pub struct CfsServer {
    served: Arc<Served>,
    tool_router: ToolRouter<Self>,
}

/// A context tool's result: the Markdown as the text block (what a model reads), and
/// the answer citing it, without repeating it, as structured content.
pub(super) fn text_and_cited(
    text: String,
    cited: &impl serde::Serialize,
) -> Result<CallToolResult, String> {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(serde_json::to_value(cited).map_err(|e| e.to_string())?);
    Ok(result)
}

/// Runs `work` on a blocking thread (store reads and syncs block).
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(format!("the request failed inside the server: {e}")))
}

#[tool_router(router = tool_router)]
impl CfsServer {
    pub fn new(served: Arc<Served>) -> Self {
        Self {
            served,
            tool_router: Self::tool_router(),
        }
    }

    /// Search the indexed files for where code is: a bare name finds its definition
    /// first; words find the files that implement them (BM25, vectors and definitions
    /// fused; tests, docs and vendored files weigh less unless asked for). files: true
    /// answers with files and their best chunks. Each result cites a file and line
    /// range; get_chunk gives the whole text.
    #[tool(name = "search")]
    async fn search(
        &self,
        Parameters(params): Parameters<SearchParams>,
    ) -> Result<Json<SearchAnswer>, String> {
        let served = Arc::clone(&self.served);
        blocking(move || {
            let (live, snap) = served.snapshot()?;
            search_answer(&snap, &*live.embedder, params)
        })
        .await
        .map(Json)
    }

    /// Context for a question within a budget of tokens: the text of the best files'
    /// best chunks (every file's best before any file's second), joined where they
    /// touch, as Markdown with each span citing its path and lines (the text block;
    /// the structured answer lists the spans without their text). Use it instead of
    /// search plus get_chunk when the text itself is wanted.
    #[tool(name = "context")]
    async fn context(
        &self,
        Parameters(params): Parameters<ContextParams>,
    ) -> Result<CallToolResult, String> {
        let served = Arc::clone(&self.served);
        let report = blocking(move || {
            let (live, snap) = served.snapshot()?;
            context_answer(&snap, &*live.embedder, params)
        })
        .await?;
        let (cited, text) = report.split_text();
        text_and_cited(text, &cited)
    }

    /// One chunk by id: its text, file, line range, symbol, and the ids of the chunks
    /// before and after it in its file.
    #[tool(name = "get_chunk")]
    async fn get_chunk(
        &self,
        Parameters(params): Parameters<ChunkParams>,
    ) -> Result<Json<ChunkAnswer>, String> {
        let served = Arc::clone(&self.served);
        blocking(move || chunk_answer(&served.snapshot()?.1, &params))
            .await
            .map(Json)
    }

    /// One file by path: its chunks in order, with their line ranges and texts.
    #[tool(name = "get_file")]
    async fn get_file(
        &self,
        Parameters(params): Parameters<FileParams>,
    ) -> Result<Json<FileAnswer>, String> {
        let served = Arc::clone(&self.served);
        blocking(move || file_answer(&served.snapshot()?.1, &params))
            .await
            .map(Json)
    }

    /// The store served: its state root, counts, last commit, embedder, and whether it
    /// is watched. Answers even when the store is gone or replaced (state says which).
    #[tool(name = "status")]
    async fn status(&self) -> Result<Json<StatusAnswer>, String> {
        let served = Arc::clone(&self.served);
        blocking(move || Ok(admin::status(&served))).await.map(Json)
    }

    /// Sync exactly the named files or folders into the store now (deleted ones are
    /// removed); later answers see the new state.
    #[tool(name = "refresh")]
    async fn refresh(
        &self,
        Parameters(params): Parameters<RefreshParams>,
    ) -> Result<Json<RefreshAnswer>, String> {
        let served = Arc::clone(&self.served);
        blocking(move || admin::refresh(&served, &params).map_err(|e| format!("{e:#}")))
            .await
            .map(Json)
    }

    /// The collections of the indexed tree (from .cfs/collections.yaml), with their
    /// descriptions and how many files and chunks each holds; search takes one as a
    /// filter.
    #[tool(name = "collections")]
    async fn collections(&self) -> Result<Json<CollectionsAnswer>, String> {
        let served = Arc::clone(&self.served);
        blocking(move || {
            let declared = declared_collections(&served)?;
            Ok(collections_answer(&served.snapshot()?.1, &declared))
        })
        .await
        .map(Json)
    }
}

/// Names and descriptions of the collections the tree's registry declares.
fn declared_collections(served: &Served) -> Result<Vec<(String, String)>, String> {
    let Some(tree) = &served.tree else {
        return Ok(Vec::new());
    };
    let file = tree.join(crate::locate::STORE_DIR).join("collections.yaml");
    let registry = cfs_ingest::Registry::load(&file).map_err(|e| e.to_string())?;
    Ok(registry
        .collections()
        .iter()
        .map(|c| (c.name.clone(), c.description.clone()))
        .collect())
}

#[tool_handler(
    router = self.tool_router,
    name = "cfs",
    instructions = "Search and read the files of one indexed folder. search returns chunks citing path and lines; context returns the best files' text within a budget of tokens; get_chunk and get_file return text; every answer names the state root it came from."
)]
impl ServerHandler for CfsServer {}

impl super::Tools for CfsServer {
    fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.tool_router.list_all()
    }
}

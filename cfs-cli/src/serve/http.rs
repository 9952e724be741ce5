//! MCP over HTTP: the protocol's Streamable HTTP transport at `http://ADDR/mcp`, on a
//! loopback address only. Each client session gets a server of its own over the same
//! served store. A request whose `Host` is not a loopback name, or that carries an
//! `Origin` (a web page's request), is refused, so a page in a browser cannot reach the
//! store through DNS rebinding; any other path is 404.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, bail};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tower_service::Service;

/// The one path the server answers.
pub const PATH: &str = "/mcp";

/// Checks that `addr` is a loopback address: the server has no authentication.
pub fn check_loopback(addr: SocketAddr) -> anyhow::Result<()> {
    if addr.ip().is_loopback() {
        return Ok(());
    }
    bail!(
        "cfs serves MCP over HTTP on a loopback address only (127.0.0.1 or [::1]), not \
         {addr}: it has no authentication; put an authenticating proxy in front to reach \
         it from elsewhere"
    )
}

/// Serves the servers `make` makes, a session each, at `http://addr/mcp` until Ctrl-C.
pub async fn serve<S>(
    make: impl Fn() -> S + Send + Sync + 'static,
    addr: SocketAddr,
) -> anyhow::Result<()>
where
    S: rmcp::ServerHandler + Send + 'static,
{
    // The library's defaults accept the Host names localhost, 127.0.0.1 and ::1 only.
    let config = StreamableHttpServerConfig::default().enforce_origin_validation();
    let cancel = config.cancellation_token.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().context("the listening address")?;
    eprintln!("cfs serve: MCP over HTTP at http://{local}{PATH}");
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = tokio::signal::ctrl_c() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // Out of descriptors, a connection reset before it was taken: the next
            // connection may well be served.
            Err(e) => {
                eprintln!("cfs serve: a connection could not be accepted: {e}");
                continue;
            }
        };
        let mcp = mcp.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| route(mcp.clone(), req));
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = connection.await {
                eprintln!("cfs serve: a connection ended with an error: {e}");
            }
        });
    }
    cancel.cancel();
    Ok(())
}

/// The MCP service's answer at [`PATH`], 404 elsewhere.
async fn route<S>(
    mcp: StreamableHttpService<S, LocalSessionManager>,
    req: Request<Incoming>,
) -> Result<Response<BoxBody<Bytes, Infallible>>, Infallible>
where
    S: rmcp::ServerHandler + Send + 'static,
{
    if req.uri().path() == PATH {
        let mut mcp = mcp;
        return mcp.call(req).await;
    }
    let body = Full::new(Bytes::from_static(b"cfs serves MCP at /mcp\n")).boxed();
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::NOT_FOUND;
    Ok(response)
}

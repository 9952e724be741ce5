//! MCP over HTTP: the protocol's Streamable HTTP transport at `http://ADDR/mcp`, on a
//! loopback address only. Each client session gets a server of its own over the same
//! served store. A request whose `Host` is not a loopback name, or that carries an
//! `Origin` (a web page's request), is refused, so a page in a browser cannot reach the
//! store through DNS rebinding; any other path is 404.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
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

/// Serves the servers `make` makes, a session each, at `http://addr/mcp` until Ctrl-C
/// (a second Ctrl-C ends the process at once, whatever it is finishing).
pub async fn serve<S>(
    make: impl Fn() -> S + Send + Sync + 'static,
    addr: SocketAddr,
) -> anyhow::Result<()>
where
    S: rmcp::ServerHandler + Send + 'static,
{
    // The library's defaults accept the Host names localhost, 127.0.0.1 and ::1; the
    // address listened on is added, so that 127.0.0.2 answers at its own address.
    let hosts = [
        "localhost".to_owned(),
        "127.0.0.1".into(),
        "::1".into(),
        addr.ip().to_string(),
    ];
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .enforce_origin_validation();
    let cancel = config.cancellation_token.clone();
    let stop = cancel.clone();
    stop_on_ctrl_c(move || stop.cancel())?;
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
        // Cancellation is a state, not an event: a new future each turn misses nothing.
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = cancel.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // Out of descriptors, say: the connection waits in the backlog, so pause
            // rather than spin on it.
            Err(e) => {
                eprintln!("cfs serve: a connection could not be accepted: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let mcp = mcp.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| route(mcp.clone(), req));
            // With a timer, a client that does not send its headers within 30 s is let go.
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .serve_connection(TokioIo::new(stream), service);
            // A client that goes away mid-request is not worth a line.
            let _ = connection.await;
        });
    }
    Ok(())
}

/// The first Ctrl-C calls `stop` (the server stops taking connections and ends its
/// sessions; a sync under way finishes); the second ends the process at once, with
/// 130. On a thread of its own, so it is heard while the runtime shuts down too.
fn stop_on_ctrl_c(stop: impl Fn() + Send + 'static) -> anyhow::Result<()> {
    let presses = AtomicUsize::new(0);
    ctrlc::set_handler(move || {
        if presses.fetch_add(1, Ordering::SeqCst) == 0 {
            eprintln!("cfs serve: stopping (Ctrl-C again to stop at once)");
            stop();
        } else {
            std::process::exit(130);
        }
    })
    .context("cannot take Ctrl-C")
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
        let ends_session = req.method() == Method::DELETE;
        let mut mcp = mcp;
        let mut response = mcp.call(req).await?;
        // The library accepts a session's end with 202; the official clients expect the
        // 200 or 204 of a DELETE done (and warn otherwise). The session is ended either way.
        if ends_session && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
            *response.body_mut() = Full::new(Bytes::new()).boxed();
        }
        return Ok(response);
    }
    let body = Full::new(Bytes::from_static(b"cfs serves MCP at /mcp\n")).boxed();
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::NOT_FOUND;
    Ok(response)
}

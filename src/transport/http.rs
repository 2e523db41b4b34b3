//! Strict JSON-RPC and the transport rules of streamable HTTP, as axum middleware in front of
//! rmcp's `StreamableHttpService`.
//!
//! Where rmcp (3.11) falls short, and what this layer does instead:
//! - `Origin` is not checked unless configured (`allowed_origins` is empty by default), while
//!   the MCP transport specification says servers MUST validate it: a request whose `Origin` is
//!   not a loopback origin gets 403;
//! - a POST body that is not JSON, or is a batch, is answered 415 with plain text
//!   (`expect_json` in `server_side_http.rs`): here it gets 400 with a JSON-RPC error body
//!   (-32700 or -32600, `"id": null`), like every refusal of this layer;
//! - params that do not fit a known method, and a second `initialize` inside a session, are
//!   refused as on stdio (see [`super::jsonrpc`]);
//! - `DELETE` of a session that does not exist (any more) answers 202: here 404, as the
//!   specification says for a session id the server does not know.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ErrorCode;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

use super::jsonrpc::{self, ErrorFrame, Verdict};

/// The header naming the MCP session of a request.
const SESSION_HEADER: &str = "mcp-session-id";

/// What the middleware needs: the session manager the service uses, and the body limit.
pub struct Guard<M> {
    sessions: Arc<M>,
    max_body: usize,
}

impl<M> Clone for Guard<M> {
    fn clone(&self) -> Self {
        Guard {
            sessions: self.sessions.clone(),
            max_body: self.max_body,
        }
    }
}

/// Puts the strict layer in front of `router`, which serves MCP with `sessions`; POST bodies
/// are read up to `max_body` bytes (the limit the service itself applies).
pub fn strict<M: SessionManager>(
    router: axum::Router,
    sessions: Arc<M>,
    max_body: usize,
) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(
        Guard { sessions, max_body },
        guard::<M>,
    ))
}

/// A JSON-RPC error as an HTTP response.
fn refusal(status: StatusCode, frame: ErrorFrame) -> Response {
    tracing::debug!(%status, code = frame.error.code.0, message = %frame.error.message, "refused an HTTP request");
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        frame.to_json(),
    )
        .into_response()
}

/// An error answering a request in band (HTTP 200, as rmcp answers a request's JSON-RPC error)
/// when its id is known, or refusing the message (HTTP 400) when it is not.
fn answer(frame: ErrorFrame) -> Response {
    let status = if frame.id.is_some() {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    refusal(status, frame)
}

/// Whether `origin` is one a local client sends: http or https on a loopback host, any port.
/// Any other web page (and `Origin: null`) is foreign: the browser is acting for a site that has
/// no business driving a local analysis server.
fn origin_is_local(origin: &str) -> bool {
    let Ok(uri) = origin.parse::<Uri>() else {
        return false;
    };
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    let host = uri.host().unwrap_or("").trim_matches(['[', ']']);
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    scheme_ok && loopback && uri.path_and_query().is_none_or(|p| p.as_str() == "/")
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
        })
}

fn session_id(headers: &HeaderMap) -> Option<SessionId> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.to_owned().into())
}

async fn has_session<M: SessionManager>(sessions: &M, id: &SessionId) -> bool {
    sessions.has_session(id).await.unwrap_or(false)
}

async fn guard<M: SessionManager>(
    State(guard): State<Guard<M>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let text = String::from_utf8_lossy(origin.as_bytes()).into_owned();
        if !origin_is_local(&text) {
            return refusal(
                StatusCode::FORBIDDEN,
                ErrorFrame::new(
                    None,
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "Forbidden: Origin {text:?} is not a local origin; rea serves local clients only"
                    ),
                ),
            );
        }
    }
    match *request.method() {
        Method::POST if is_json(request.headers()) => post(guard, request, next).await,
        Method::DELETE => match session_id(request.headers()) {
            Some(id) if !has_session(&*guard.sessions, &id).await => refusal(
                StatusCode::NOT_FOUND,
                ErrorFrame::new(
                    None,
                    ErrorCode::INVALID_REQUEST,
                    format!("Not Found: no session {id}"),
                ),
            ),
            _ => next.run(request).await,
        },
        _ => next.run(request).await,
    }
}

async fn post<M: SessionManager>(guard: Guard<M>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, guard.max_body).await {
        Ok(bytes) => bytes,
        Err(e) => {
            return refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                ErrorFrame::new(
                    None,
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "Invalid Request: the body could not be read within {} bytes: {e}",
                        guard.max_body
                    ),
                ),
            );
        }
    };
    match jsonrpc::check(&bytes) {
        Verdict::Refuse(frame) => answer(frame),
        Verdict::Ignore(why) => answer(ErrorFrame::new(
            None,
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        )),
        Verdict::Pass(message) => {
            if jsonrpc::is_initialize(&message)
                && let Some(id) = session_id(&parts.headers)
                && has_session(&*guard.sessions, &id).await
            {
                return answer(ErrorFrame::new(
                    jsonrpc::request_id(&message),
                    ErrorCode::INVALID_REQUEST,
                    "Invalid Request: this session is already initialized",
                ));
            }
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::origin_is_local;

    #[test]
    fn only_loopback_origins_are_local() {
        for origin in [
            "http://localhost",
            "http://localhost:6274",
            "https://127.0.0.1:8443",
            "http://127.0.0.2:80",
            "http://[::1]:3000",
            "HTTP://LOCALHOST:1",
        ] {
            assert!(origin_is_local(origin), "{origin}");
        }
        for origin in [
            "null",
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "file://",
            "chrome-extension://abc",
            "http://10.0.0.1:8765",
            "",
        ] {
            assert!(!origin_is_local(origin), "{origin}");
        }
    }
}

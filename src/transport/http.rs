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
//!   specification says for a session id the server does not know; the `DELETE` that ends a
//!   session answers 204 (rmcp says 202, on which the Python SDK warns);
//! - nothing authenticates a caller: here every request carries `Authorization: Bearer <token>`
//!   (401 with `WWW-Authenticate: Bearer` otherwise), compared in constant time against the
//!   configured tokens, and the token's [`Principal`] goes with the request to the handler (in
//!   the extensions of the `http::request::Parts` rmcp hands it). An MCP session belongs to the
//!   principal whose `initialize` started it: named by another, it answers 404 as a session
//!   that does not exist, byte for byte.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ErrorCode;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::jsonrpc::{self, ErrorFrame, Verdict};
use crate::settings::Principal;

/// The header naming the MCP session of a request.
const SESSION_HEADER: &str = "mcp-session-id";

/// Who may call, by bearer token.
#[derive(Debug)]
pub enum Auth {
    /// `[http] auth = "none"`: every request is the local principal.
    Off,
    /// The SHA-256 of each accepted token, with its principal. Digests are compared, so the
    /// comparison takes the same time whatever the length of the token sent.
    Bearer(Vec<([u8; 32], Principal)>),
}

impl Auth {
    /// Accepts exactly `tokens`, each as its principal.
    pub fn bearer(tokens: &[(Principal, String)]) -> Auth {
        Auth::Bearer(
            tokens
                .iter()
                .map(|(principal, token)| {
                    (Sha256::digest(token.as_bytes()).into(), principal.clone())
                })
                .collect(),
        )
    }

    /// The principal of a request with these headers, or the 401 that refuses it.
    fn principal(&self, headers: &HeaderMap) -> Result<Principal, Unauthorized> {
        let tokens = match self {
            Auth::Off => return Ok(Principal::local()),
            Auth::Bearer(tokens) => tokens,
        };
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let sent = match (values.next(), values.next()) {
            (None, _) => {
                return Err(Unauthorized::new(
                    None,
                    "Unauthorized: send the header `Authorization: Bearer <token>` (a token of [http] tokens in rea.toml, or the one in the token file rea named when it started)",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(Unauthorized::new(
                    Some("invalid_request"),
                    "Unauthorized: send one Authorization header, not several",
                ));
            }
            (Some(value), None) => value.as_bytes(),
        };
        let token = sent
            .split_at_checked(7)
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case(b"bearer "))
            .map(|(_, token)| token);
        let Some(token) = token else {
            return Err(Unauthorized::new(
                Some("invalid_request"),
                "Unauthorized: the Authorization header is not `Bearer <token>`",
            ));
        };
        let digest: [u8; 32] = Sha256::digest(token).into();
        // Every token is compared, matched or not, each in constant time.
        let mut found = None;
        for (accepted, principal) in tokens {
            if bool::from(accepted.ct_eq(&digest)) {
                found = Some(principal);
            }
        }
        found.cloned().ok_or_else(|| {
            Unauthorized::new(
                Some("invalid_token"),
                "Unauthorized: this bearer token is not one this server accepts",
            )
        })
    }
}

/// Why a request is not let in: the `error` of RFC 6750 (none when it sent no credentials) and
/// the message for the caller.
#[derive(Debug)]
struct Unauthorized {
    error: Option<&'static str>,
    message: &'static str,
}

impl Unauthorized {
    fn new(error: Option<&'static str>, message: &'static str) -> Unauthorized {
        Unauthorized { error, message }
    }

    /// The 401 refusal, with the `WWW-Authenticate` challenge.
    fn response(&self) -> Response {
        unauthorized(self.error, self.message)
    }
}

/// The 401 refusal, with the `WWW-Authenticate` challenge of RFC 6750 (and its `error` when the
/// request sent credentials that do not do).
fn unauthorized(error: Option<&str>, message: &str) -> Response {
    let challenge = match error {
        None => "Bearer realm=\"rea\"".to_owned(),
        Some(error) => format!("Bearer realm=\"rea\", error=\"{error}\""),
    };
    let mut response = refusal(
        StatusCode::UNAUTHORIZED,
        ErrorFrame::new(None, ErrorCode::INVALID_REQUEST, message),
    );
    if let Ok(value) = header::HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// What the middleware needs: the session manager the service uses, the body limit, who may
/// call, and whose each MCP session is.
pub struct Guard<M> {
    sessions: Arc<M>,
    max_body: usize,
    auth: Arc<Auth>,
    /// The principal of each MCP session this layer saw started, by session id. Entries of
    /// sessions that ended are dropped when the next session starts.
    owners: Arc<Mutex<HashMap<String, Principal>>>,
}

impl<M> Clone for Guard<M> {
    fn clone(&self) -> Self {
        Guard {
            sessions: self.sessions.clone(),
            max_body: self.max_body,
            auth: self.auth.clone(),
            owners: self.owners.clone(),
        }
    }
}

/// Puts the strict layer in front of `router`, which serves MCP with `sessions`; POST bodies
/// are read up to `max_body` bytes (the limit the service itself applies); callers are
/// authenticated by `auth`.
pub fn strict<M: SessionManager>(
    router: axum::Router,
    sessions: Arc<M>,
    max_body: usize,
    auth: Auth,
) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(
        Guard {
            sessions,
            max_body,
            auth: Arc::new(auth),
            owners: Arc::default(),
        },
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

/// The 404 of an MCP session that does not exist, or is not the caller's: the same answer.
fn no_session(id: &SessionId) -> Response {
    refusal(
        StatusCode::NOT_FOUND,
        ErrorFrame::new(
            None,
            ErrorCode::INVALID_REQUEST,
            format!("Not Found: no session {id}"),
        ),
    )
}

impl<M: SessionManager> Guard<M> {
    /// Whether the MCP session `id` is live and `principal`'s.
    async fn owns(&self, principal: &Principal, id: &SessionId) -> bool {
        let owner = self
            .owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&**id)
            .cloned();
        owner.as_ref() == Some(principal) && has_session(&*self.sessions, id).await
    }

    /// Notes that `principal` started the MCP session `id`, and forgets sessions that ended.
    async fn started(&self, principal: Principal, id: String) {
        let known: Vec<String> = self
            .owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect();
        let mut ended = vec![];
        for old in known {
            if !has_session(&*self.sessions, &old.clone().into()).await {
                ended.push(old);
            }
        }
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        for old in ended {
            owners.remove(&old);
        }
        owners.insert(id, principal);
    }
}

async fn guard<M: SessionManager>(
    State(guard): State<Guard<M>>,
    mut request: Request,
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
    let principal = match guard.auth.principal(request.headers()) {
        Ok(principal) => principal,
        Err(refused) => return refused.response(),
    };
    // An MCP session named by anyone but the principal that started it does not exist for
    // them: the answer is the one of an unknown id, and nothing reaches the session.
    if let Some(id) = session_id(request.headers())
        && !guard.owns(&principal, &id).await
    {
        return no_session(&id);
    }
    request.extensions_mut().insert(principal.clone());
    match *request.method() {
        Method::POST if is_json(request.headers()) => post(guard, principal, request, next).await,
        Method::DELETE => {
            // rmcp answers a session's DELETE 202 Accepted, but the session is gone when it
            // answers: 204 says so, and clients (the Python SDK) warn on anything but 200/204.
            let mut response = next.run(request).await;
            if response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::NO_CONTENT;
                *response.body_mut() = Body::empty();
            }
            response
        }
        _ => next.run(request).await,
    }
}

/// Why an `--http` address cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    /// Not `host:port`, or the host does not resolve.
    #[error(
        "{text:?} is not an address rea can serve at (host:port, for example 127.0.0.1:8765 or localhost:8765): {reason}"
    )]
    Unresolved {
        /// The text given.
        text: String,
        /// What the resolver said.
        reason: String,
    },
    /// One of the addresses the name resolves to is not loopback.
    #[error(
        "--http serves on loopback only (127.0.0.1, ::1 or a name resolving only to them), and {text} resolves to {address}"
    )]
    NotLoopback {
        /// The text given.
        text: String,
        /// The first address of it that is not loopback.
        address: std::net::SocketAddr,
    },
}

/// The loopback address `text` names: an IP literal with its port, or a host name every address
/// of which is loopback (`localhost:8765`). A name that also resolves elsewhere is refused: rea
/// must never listen beyond this machine. IPv4 is preferred, since every client reaches it.
pub fn loopback_address(text: &str) -> Result<std::net::SocketAddr, AddressError> {
    use std::net::ToSocketAddrs;
    let resolved: Vec<std::net::SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| AddressError::Unresolved {
            text: text.to_owned(),
            reason: e.to_string(),
        })?
        .collect();
    if let Some(address) = resolved.iter().find(|a| !a.ip().is_loopback()) {
        return Err(AddressError::NotLoopback {
            text: text.to_owned(),
            address: *address,
        });
    }
    resolved
        .iter()
        .find(|a| a.is_ipv4())
        .or(resolved.first())
        .copied()
        .ok_or_else(|| AddressError::Unresolved {
            text: text.to_owned(),
            reason: "it resolves to no address".into(),
        })
}

async fn post<M: SessionManager>(
    guard: Guard<M>,
    principal: Principal,
    request: Request,
    next: Next,
) -> Response {
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
            let initialize = jsonrpc::is_initialize(&message);
            let named = session_id(&parts.headers);
            if initialize && named.is_some() {
                // The session is the caller's (checked above), and started already.
                return answer(ErrorFrame::new(
                    jsonrpc::request_id(&message),
                    ErrorCode::INVALID_REQUEST,
                    "Invalid Request: this session is already initialized",
                ));
            }
            let response = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            if initialize
                && let Some(id) = response
                    .headers()
                    .get(SESSION_HEADER)
                    .and_then(|v| v.to_str().ok())
            {
                guard.started(principal, id.to_owned()).await;
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{loopback_address, origin_is_local};

    #[test]
    fn host_names_resolving_to_loopback_are_served_regression_29() {
        assert_eq!(
            loopback_address("localhost:8765").unwrap().to_string(),
            "127.0.0.1:8765"
        );
        assert_eq!(
            loopback_address("127.0.0.1:0").unwrap().to_string(),
            "127.0.0.1:0"
        );
        assert_eq!(loopback_address("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert_eq!(
            loopback_address("0.0.0.0:8765").unwrap_err().to_string(),
            "--http serves on loopback only (127.0.0.1, ::1 or a name resolving only to them), and 0.0.0.0:8765 resolves to 0.0.0.0:8765"
        );
        assert!(loopback_address("localhost").is_err());
    }

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

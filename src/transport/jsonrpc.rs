//! What a strict JSON-RPC 2.0 peer makes of one incoming message, before rmcp sees it: a message
//! rmcp may have, or the error frame the client gets instead.
//!
//! rmcp (3.11) falls short of JSON-RPC 2.0 here in ways a client can see:
//! - its stdio transport ignores input that is not JSON (`async_rw.rs`, rust-sdk issue 938)
//!   instead of answering -32700;
//! - its error frames for unreadable requests omit `id` (`JsonRpcError.id` is skipped when
//!   `None`) where JSON-RPC 2.0 section 5 requires `"id": null`;
//! - `ClientRequest` is an untagged enum that ends in `CustomRequest`, so a known method whose
//!   params do not fit (`tools/call` with `"name": 5`) becomes a custom request and is answered
//!   -32601 (method not found) instead of -32602 (invalid params);
//! - list requests (`tools/list`, `prompts/list`, ...) read their params as a flattened
//!   `Option`, so params that do not fit (`"cursor": 5`) are silently taken as none;
//! - a second `initialize` on a live connection reaches the handler again and renegotiates.
//!
//! [`check`] decides all of that once, for both transports.

#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CancelTaskMethod, CancelTaskRequest,
    ClientJsonRpcMessage, ClientRequest, CompleteRequest, CompleteRequestMethod, ConstString,
    DiscoverRequest, DiscoverRequestMethod, ErrorCode, ErrorData, GetPromptRequest,
    GetPromptRequestMethod, GetSkillRequest, GetSkillRequestMethod, GetTaskMethod, GetTaskRequest,
    InitializeRequest, InitializeResultMethod, ListPromptsRequest, ListPromptsRequestMethod,
    ListResourceTemplatesRequest, ListResourceTemplatesRequestMethod, ListResourcesRequest,
    ListResourcesRequestMethod, ListSkillsRequest, ListSkillsRequestMethod, ListToolsRequest,
    ListToolsRequestMethod, PaginatedRequestParams, PingRequest, PingRequestMethod,
    ReadResourceDirectoryRequest, ReadResourceDirectoryRequestMethod, ReadResourceRequest,
    ReadResourceRequestMethod, RequestId, SetLevelRequest, SetLevelRequestMethod, SubscribeRequest,
    SubscribeRequestMethod, SubscriptionsListenRequest, SubscriptionsListenRequestMethod,
    UnsubscribeRequest, UnsubscribeRequestMethod, UpdateTaskMethod, UpdateTaskRequest,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An error frame as JSON-RPC 2.0 writes it: `id` is always present, `null` when the request's
/// id could not be read.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorFrame {
    jsonrpc: &'static str,
    /// The id of the request refused, or `None` (written `null`) when it could not be read.
    pub id: Option<RequestId>,
    /// Code and message.
    pub error: ErrorData,
}

impl ErrorFrame {
    /// An error answering the request `id` (`None`: the id could not be read).
    pub fn new(id: Option<RequestId>, code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorFrame {
            jsonrpc: "2.0",
            id,
            error: ErrorData::new(code, message.into(), None),
        }
    }

    /// The frame as one line of JSON, without the newline.
    pub fn to_json(&self) -> Vec<u8> {
        // An ErrorFrame holds only strings and integers: serializing it cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// What to do with one incoming message.
#[derive(Debug)]
pub enum Verdict {
    /// A message rmcp can have as it is.
    Pass(Box<ClientJsonRpcMessage>),
    /// Answer this error; the message goes no further.
    Refuse(ErrorFrame),
    /// A response or notification that cannot be used and, being no request, gets no answer.
    Ignore(String),
}

/// Whether a request's params fit its method.
type ParamsCheck = fn(&Value) -> Result<(), serde_json::Error>;

/// The methods rmcp's `ClientRequest` knows, each with the check its params must pass.
/// A request for one of these that rmcp would file as a custom request has bad params. Methods
/// rmcp marks deprecated (logging, resource subscriptions) are still methods it knows.
#[allow(deprecated)]
const KNOWN_METHODS: &[(&str, ParamsCheck)] = &[
    (PingRequestMethod::VALUE, fits::<PingRequest>),
    (InitializeResultMethod::VALUE, fits::<InitializeRequest>),
    (DiscoverRequestMethod::VALUE, fits::<DiscoverRequest>),
    (CompleteRequestMethod::VALUE, fits::<CompleteRequest>),
    (SetLevelRequestMethod::VALUE, fits::<SetLevelRequest>),
    (GetPromptRequestMethod::VALUE, fits::<GetPromptRequest>),
    (ListPromptsRequestMethod::VALUE, paged::<ListPromptsRequest>),
    (
        ListResourcesRequestMethod::VALUE,
        paged::<ListResourcesRequest>,
    ),
    (
        ListResourceTemplatesRequestMethod::VALUE,
        paged::<ListResourceTemplatesRequest>,
    ),
    (
        ReadResourceRequestMethod::VALUE,
        fits::<ReadResourceRequest>,
    ),
    (
        SubscriptionsListenRequestMethod::VALUE,
        fits::<SubscriptionsListenRequest>,
    ),
    (SubscribeRequestMethod::VALUE, fits::<SubscribeRequest>),
    (UnsubscribeRequestMethod::VALUE, fits::<UnsubscribeRequest>),
    (CallToolRequestMethod::VALUE, fits::<CallToolRequest>),
    (ListToolsRequestMethod::VALUE, paged::<ListToolsRequest>),
    (GetTaskMethod::VALUE, fits::<GetTaskRequest>),
    (UpdateTaskMethod::VALUE, fits::<UpdateTaskRequest>),
    (CancelTaskMethod::VALUE, fits::<CancelTaskRequest>),
    (ListSkillsRequestMethod::VALUE, paged::<ListSkillsRequest>),
    (GetSkillRequestMethod::VALUE, fits::<GetSkillRequest>),
    (
        ReadResourceDirectoryRequestMethod::VALUE,
        fits::<ReadResourceDirectoryRequest>,
    ),
];

fn fits<T: DeserializeOwned>(message: &Value) -> Result<(), serde_json::Error> {
    T::deserialize(message).map(|_| ())
}

/// [`fits`] for list requests, whose params rmcp reads as a flattened `Option`: serde turns
/// params that do not fit into `None` there, so a malformed cursor would be served as no cursor.
/// The params themselves must fit.
fn paged<T: DeserializeOwned>(message: &Value) -> Result<(), serde_json::Error> {
    fits::<T>(message)?;
    match message.get("params") {
        None | Some(Value::Null) => Ok(()),
        Some(params) => PaginatedRequestParams::deserialize(params).map(|_| ()),
    }
}

/// The method name of the `initialize` request.
pub const INITIALIZE: &str = InitializeResultMethod::VALUE;

/// Whether `message` is an `initialize` request.
pub fn is_initialize(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::InitializeRequest(_)))
}

/// The id of a request, when `message` is one.
pub fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        ClientJsonRpcMessage::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

fn invalid_request(message: impl Into<String>) -> Verdict {
    Verdict::Refuse(ErrorFrame::new(
        None,
        ErrorCode::INVALID_REQUEST,
        format!("Invalid Request: {}", message.into()),
    ))
}

/// Judges one message (a line of stdio, or a POST body) as a strict JSON-RPC 2.0 server would.
pub fn check(bytes: &[u8]) -> Verdict {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(e) => {
            return Verdict::Refuse(ErrorFrame::new(
                None,
                ErrorCode::PARSE_ERROR,
                format!("Parse error: {e}"),
            ));
        }
    };
    let object = match &value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return invalid_request(
                "batches are not supported (MCP 2025-06-18 removed them); send one message at a time",
            );
        }
        _ => return invalid_request("a message is a JSON object"),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid_request("\"jsonrpc\" must be \"2.0\"");
    }
    let id = match object.get("id") {
        None => None,
        Some(Value::String(s)) => Some(RequestId::String(s.as_str().into())),
        Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64().map(RequestId::Number),
        Some(_) => return invalid_request("\"id\" must be a string or an integer"),
    };
    let method = match object.get("method") {
        None => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(_) => return invalid_request("\"method\" must be a string"),
    };
    let answers = object.contains_key("result") || object.contains_key("error");
    let has_result = object.contains_key("result");
    match (method, id) {
        (Some(method), Some(id)) => check_request(&value, &method, id),
        (Some(method), None) => match serde_json::from_value::<ClientJsonRpcMessage>(value) {
            Ok(message) => Verdict::Pass(Box::new(message)),
            Err(e) => Verdict::Ignore(format!("notification {method:?} does not fit: {e}")),
        },
        (None, id) => {
            if !answers {
                return invalid_request("a request needs \"method\"");
            }
            if id.is_none() && has_result {
                return Verdict::Ignore("a response without an id".into());
            }
            match serde_json::from_value::<ClientJsonRpcMessage>(value) {
                Ok(message) => Verdict::Pass(Box::new(message)),
                Err(e) => Verdict::Ignore(format!("a response that does not fit: {e}")),
            }
        }
    }
}

fn check_request(value: &Value, method: &str, id: RequestId) -> Verdict {
    let known = KNOWN_METHODS.iter().find(|(name, _)| *name == method);
    if let Some((_, fits)) = known
        && let Err(e) = fits(value)
    {
        return Verdict::Refuse(ErrorFrame::new(
            Some(id),
            ErrorCode::INVALID_PARAMS,
            format!("Invalid params for {method}: {e}"),
        ));
    }
    match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        Ok(message) => Verdict::Pass(Box::new(message)),
        // rmcp takes any unknown method as a custom request; one it cannot even hold as that
        // (params that are neither an object nor absent) is still a method it does not have.
        Err(_) if known.is_none() => Verdict::Refuse(ErrorFrame::new(
            Some(id),
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
        Err(e) => Verdict::Refuse(ErrorFrame::new(
            Some(id),
            ErrorCode::INVALID_PARAMS,
            format!("Invalid params for {method}: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(input: &str) -> (Option<RequestId>, i32) {
        match check(input.as_bytes()) {
            Verdict::Refuse(frame) => (frame.id, frame.error.code.0),
            other => panic!("{input} was not refused: {other:?}"),
        }
    }

    #[test]
    fn unreadable_messages_are_refused_with_a_null_id() {
        for (input, code) in [
            ("{\"jsonrpc\":\"2.0\",", -32700),
            ("not json", -32700),
            ("[]", -32600),
            (
                "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
                -32600,
            ),
            ("42", -32600),
            ("{\"foo\":\"bar\"}", -32600),
            ("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -32600),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
                -32600,
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
                -32600,
            ),
            ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", -32600),
            ("{\"jsonrpc\":\"2.0\",\"id\":1}", -32600),
        ] {
            assert_eq!(refusal(input), (None, code), "{input}");
        }
    }

    #[test]
    fn bad_params_of_known_methods_are_invalid_params() {
        for input in [
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":[1,2]}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":5}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{}}"#,
        ] {
            assert_eq!(
                refusal(input),
                (Some(RequestId::Number(3)), -32602),
                "{input}"
            );
        }
    }

    #[test]
    fn good_messages_pass() {
        for input in [
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"doctor","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
            // Unknown methods go on to rmcp, which answers -32601 itself.
            r#"{"jsonrpc":"2.0","id":1,"method":"no/such/method","params":{}}"#,
        ] {
            assert!(
                matches!(check(input.as_bytes()), Verdict::Pass(_)),
                "{input}"
            );
        }
    }

    #[test]
    fn error_frames_write_a_null_id() {
        let frame = ErrorFrame::new(None, ErrorCode::PARSE_ERROR, "Parse error: x");
        assert_eq!(
            String::from_utf8(frame.to_json()).unwrap(),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: x"}}"#
        );
    }
}

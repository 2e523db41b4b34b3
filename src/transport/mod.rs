//! rea's transport edge: strict JSON-RPC 2.0 in front of rmcp on both transports. The stdio
//! transport ([`stdio`]) and the HTTP middleware ([`http`]) share one judgment of each incoming
//! message ([`jsonrpc`]); rmcp serves only what passes it. Each module names where rmcp itself
//! deviates from JSON-RPC 2.0 or the MCP transport specification.

pub mod http;
pub mod jsonrpc;
pub mod stdio;

use rmcp::ErrorData;
use rmcp::model::PaginatedRequestParams;

/// Refuses a list request that carries a cursor: rea answers every list in one page and never
/// hands out a cursor, so any cursor a client sends is one rea did not issue.
pub fn refuse_cursor(request: Option<&PaginatedRequestParams>) -> Result<(), ErrorData> {
    match request.and_then(|r| r.cursor.as_deref()) {
        None => Ok(()),
        Some(cursor) => Err(ErrorData::invalid_params(
            format!(
                "unknown cursor {cursor:?}: this server lists everything in one page and issues no cursors"
            ),
            None,
        )),
    }
}

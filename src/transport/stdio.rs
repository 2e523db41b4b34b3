//! Strict JSON-RPC over newline-delimited stdio: an rmcp [`Transport`] that reads each line,
//! answers what a strict peer must refuse (see [`super::jsonrpc`]) and hands rmcp only messages
//! it can serve. One writer task owns the output, so rmcp's frames and the refusals written here
//! never interleave, and none is lost when the connection closes.

use std::io;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::jsonrpc::{self, ErrorFrame, Verdict};

/// Longest line accepted, as rmcp's own stdio transport: a peer that never sends a newline
/// cannot grow the buffer without bound.
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// A frame for the writer task, and where to report that it was written.
type Outgoing = (Vec<u8>, Option<oneshot::Sender<io::Result<()>>>);

/// rmcp's server side of a newline-delimited JSON-RPC stream, made strict.
pub struct StrictStdio<R> {
    reader: BufReader<R>,
    /// The line being read. It lives here, not in `receive`, because rmcp polls `receive` inside
    /// a `select!` and drops it whenever another branch is ready: the bytes read so far stay.
    line: Vec<u8>,
    /// Set while the rest of an oversized line is skipped.
    discarding: bool,
    /// Frames to the writer task; `None` once closed.
    out: Option<mpsc::UnboundedSender<Outgoing>>,
    writer: Option<tokio::task::JoinHandle<()>>,
    /// Whether an `initialize` request has been handed on: a second one is refused.
    initialized: bool,
}

/// rea's stdio transport: strict JSON-RPC over the process's stdin and stdout.
pub fn stdio() -> StrictStdio<tokio::io::Stdin> {
    StrictStdio::new(tokio::io::stdin(), tokio::io::stdout())
}

impl<R: AsyncRead + Unpin + Send> StrictStdio<R> {
    /// A transport reading `read` and writing `write`. Must be called inside a Tokio runtime (it
    /// starts the writer task).
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(read: R, write: W) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        StrictStdio {
            reader: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            out: Some(tx),
            writer: Some(tokio::spawn(write_frames(rx, write))),
            initialized: false,
        }
    }

    /// Queues a frame; the writer task writes frames in the order they were queued.
    fn queue(&self, frame: Vec<u8>, done: Option<oneshot::Sender<io::Result<()>>>) -> bool {
        self.out
            .as_ref()
            .is_some_and(|out| out.send((frame, done)).is_ok())
    }

    fn refuse(&self, frame: ErrorFrame) {
        tracing::debug!(code = frame.error.code.0, message = %frame.error.message, "refused an incoming message");
        self.queue(frame.to_json(), None);
    }

    /// Reads one line into `self.line` (with its newline). Cancel-safe: bytes move from the
    /// reader's buffer to `self.line` with no await in between. `None` at the end of input.
    async fn read_line(&mut self) -> io::Result<Option<LineRead>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(None);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let step = if self.discarding {
                // The tail of a line already refused.
                self.discarding = newline.is_none();
                None
            } else if self.line.len() + take > MAX_LINE {
                self.line.clear();
                self.discarding = newline.is_none();
                Some(LineRead::Oversized)
            } else {
                self.line.extend_from_slice(&available[..take]);
                newline.map(|_| LineRead::Line)
            };
            self.reader.consume(take);
            if step.is_some() {
                return Ok(step);
            }
        }
    }
}

enum LineRead {
    /// A whole line is in `line`.
    Line,
    /// A line longer than [`MAX_LINE`] was dropped.
    Oversized,
}

async fn write_frames<W: AsyncWrite + Unpin>(
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    mut write: W,
) {
    while let Some((mut frame, done)) = rx.recv().await {
        frame.push(b'\n');
        let result = match write.write_all(&frame).await {
            Ok(()) => write.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = &result {
            tracing::debug!(error = %e, "writing a frame to stdout failed");
        }
        if let Some(done) = done {
            let _ = done.send(result);
        }
    }
    let _ = write.shutdown().await;
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for StrictStdio<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Queued now, so frames go out in the order rmcp sent them, however their futures run.
        let (done, written) = oneshot::channel();
        let queued = match serde_json::to_vec(&item) {
            Ok(frame) => self
                .queue(frame, Some(done))
                .then_some(())
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "transport closed")),
            Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e)),
        };
        async move {
            queued?;
            written
                .await
                .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::BrokenPipe, "writer gone")))
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            match self.read_line().await {
                Ok(Some(LineRead::Line)) => {}
                Ok(Some(LineRead::Oversized)) => {
                    self.refuse(ErrorFrame::new(
                        None,
                        ErrorCode::INVALID_REQUEST,
                        format!("Invalid Request: a message is at most {MAX_LINE} bytes"),
                    ));
                    continue;
                }
                Ok(None) => return None,
                Err(e) => {
                    tracing::error!(error = %e, "reading stdin failed");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match jsonrpc::check(text) {
                Verdict::Pass(message) if jsonrpc::is_initialize(&message) && self.initialized => {
                    self.refuse(ErrorFrame::new(
                        jsonrpc::request_id(&message),
                        ErrorCode::INVALID_REQUEST,
                        "Invalid Request: the connection is already initialized",
                    ));
                }
                Verdict::Pass(message) => {
                    self.initialized |= jsonrpc::is_initialize(&message);
                    return Some(*message);
                }
                Verdict::Refuse(frame) => self.refuse(frame),
                Verdict::Ignore(why) => tracing::debug!(%why, "ignored an incoming message"),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Dropping the sender ends the writer task once it has written what was queued.
        self.out = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncBufReadExt;

    /// Feeds `input` to a transport and returns what it handed on and what it wrote.
    async fn run(input: &str) -> (Vec<ClientJsonRpcMessage>, Vec<serde_json::Value>) {
        let (out_write, out_read) = tokio::io::duplex(1 << 16);
        let mut transport =
            StrictStdio::new(std::io::Cursor::new(input.as_bytes().to_vec()), out_write);
        let mut passed = vec![];
        while let Some(m) = transport.receive().await {
            passed.push(m);
        }
        transport.close().await.unwrap();
        let mut lines = BufReader::new(out_read).lines();
        let mut written = vec![];
        while let Some(line) = lines.next_line().await.unwrap() {
            written.push(serde_json::from_str(&line).unwrap());
        }
        (passed, written)
    }

    #[tokio::test]
    async fn refusals_are_written_and_good_lines_handed_on() {
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let input = format!(
            "{init}\r\n\n   \nnot json\n{}\n{}\n",
            init.replace("\"id\":1", "\"id\":2"),
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#
        );
        let (passed, written) = run(&input).await;
        assert_eq!(passed.len(), 2, "{passed:?}");
        assert!(jsonrpc::is_initialize(&passed[0]));
        assert_eq!(
            written,
            vec![
                serde_json::json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: expected ident at line 1 column 2"}}),
                serde_json::json!({"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid Request: the connection is already initialized"}}),
            ]
        );
    }

    #[tokio::test]
    async fn an_oversized_line_is_refused_and_the_next_one_read() {
        let input = format!(
            "{}\n{}\n",
            "x".repeat(MAX_LINE + 10),
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#
        );
        let (passed, written) = run(&input).await;
        assert_eq!(passed.len(), 1);
        assert_eq!(written.len(), 1);
        assert_eq!(written[0]["error"]["code"], -32600);
        assert_eq!(written[0]["id"], serde_json::Value::Null);
    }
}

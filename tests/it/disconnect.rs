//! A client that goes away in the middle of a call (issue 8, load): the server finishes or drops
//! the call, ends every task that served the connection, and leaves the session resumable.

use std::time::Duration;

use rea::server::{ReaServer, Shared};
use rea::session::{self, Session};
use rea::settings::Settings;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, NumberOrString, ProgressToken, RequestMetaObject};
use serde_json::json;

use crate::common::{Client, fixture};

/// Upper bound for the server to wind down; reaching it is the failure this test looks for.
const GIVE_UP: Duration = Duration::from_secs(120);

/// A binary whose procedure inventory takes a while to read, so the call is still running when
/// the client leaves: gdb where it is installed (CI installs it), else a two-slice fixture.
fn slow_binary() -> std::path::PathBuf {
    let gdb = std::path::Path::new("/usr/bin/gdb");
    if gdb.is_file() {
        gdb.to_owned()
    } else {
        fixture("fsevents/package/fsevents.node")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_call_leaves_no_worker_behind() {
    let state = tempfile::tempdir().unwrap();
    let shared = Shared::new(Settings {
        state_dir: state.path().to_owned(),
        config_dir: None,
        allowed_roots: rea::fsroot::Roots::none(),
    });
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = tokio::spawn({
        let server = ReaServer::new(shared.clone());
        async move {
            let running = server.serve(server_io).await.expect("server handshake");
            running.waiting().await.expect("server loop")
        }
    });
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let client = Client { changes: tx }.serve(client_io).await.unwrap();
    assert!(shared.connections() >= 1);

    let mut params = CallToolRequestParams::new("open_binary").with_arguments(
        json!({ "path": slow_binary() })
            .as_object()
            .cloned()
            .unwrap(),
    );
    params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::Number(1),
    )));
    let peer = client.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool(params).await });
    // The first progress notification comes before the first document is read: the call is
    // running on the server when the client goes.
    let first = tokio::time::timeout(GIVE_UP, events.recv()).await.unwrap();
    assert_eq!(first, Some("progress"));
    client.cancel().await.unwrap();
    assert!(
        call.await.unwrap().is_err(),
        "the call cannot be answered once its client is gone"
    );

    tokio::time::timeout(GIVE_UP, server)
        .await
        .expect("the server's connection loop did not end")
        .unwrap();
    tokio::time::timeout(GIVE_UP, shared.all_connections_gone())
        .await
        .expect("a handler or task of the gone connection is still alive");
    assert_eq!(shared.connections(), 0);
    assert_eq!(
        shared.changes.receiver_count(),
        0,
        "a task still listens for catalog changes for a client that is gone"
    );

    // Whatever the call got to, nothing holds the session once its work has ended: the inventory
    // read on a blocking thread (bounded by the analysis deadline) may still be finishing when
    // the connection's tasks are gone, so the lock is waited for, within GIVE_UP, then the
    // session resumes with a sound database. A leaked session never lets go and fails here.
    let waited = std::time::Instant::now();
    while session::list(state.path()).unwrap().iter().any(|i| i.live) {
        assert!(
            waited.elapsed() < GIVE_UP,
            "a session is still held {GIVE_UP:?} after its client went"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for info in session::list(state.path()).unwrap() {
        assert!(!info.live, "{} is still held", info.id);
        let resumed = Session::resume(state.path(), &info.id).unwrap();
        assert_eq!(resumed.store().integrity_check().unwrap(), "ok");
    }
}

//! Fuzzes RFC 8785 canonical JSON and Evidence ids on any JSON document (`serde_json` parses the
//! input first). Canonical text must parse back and canonicalize to itself; a record built around
//! the document must keep its id through a JSON round trip and through the session ledger
//! (recorded, read back, id recomputed), which is what `rea evidence verify` relies on. A
//! record's canonical JSON, which rea writes itself, must equal serde_jcs's byte for byte.
#![no_main]

use std::sync::{Arc, Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use rea::evidence::{Authority, Confidence, EvidenceRecord, ProviderStamp, canonical_json};
use rea::store::Store;
use serde_json::Value;

/// Records per ledger before it is replaced by an empty one, so the database stays small.
const RECORDS_PER_STORE: u32 = 2_000;

struct Ledger {
    store: Arc<Store>,
    generation: u32,
    records: u32,
}

fn ledger() -> &'static Mutex<Ledger> {
    static LEDGER: OnceLock<Mutex<Ledger>> = OnceLock::new();
    LEDGER.get_or_init(|| Mutex::new(open_ledger(0)))
}

fn open_ledger(generation: u32) -> Ledger {
    let dir = rea_fuzz::fresh_dir(&format!("ledger-{generation}"));
    let store = Store::open(&dir.join("session.db")).expect("open a session database");
    Ledger {
        store,
        generation,
        records: 0,
    }
}

fn record_around(value: &Value) -> EvidenceRecord {
    EvidenceRecord {
        subject: None,
        provider: ProviderStamp::builtin(),
        operation: "fuzz".into(),
        parameters: value.clone(),
        result: value.clone(),
        confidence: Confidence::Observed,
        authority: Authority::ShippedArtifact,
        limitations: vec![],
        locations: vec![],
        links: vec![],
    }
}

fn check_record(record: &EvidenceRecord) {
    // rea writes a record's canonical JSON itself; ids already in ledgers came from serde_jcs.
    let own = record.canonical_json().expect("a record has canonical JSON");
    let reference = serde_jcs::to_string(record).expect("serde_jcs canonicalizes a record");
    assert_eq!(own, reference, "rea's canonical JSON differs from serde_jcs");
    let id = record
        .id()
        .unwrap_or_else(|e| panic!("a record around parsed JSON has no id: {e}"));
    assert!(id.as_str().starts_with("ev_") && id.as_str().len() == 67);
    let text = serde_json::to_string(record).expect("a record serializes");
    let back: EvidenceRecord = serde_json::from_str(&text).expect("a record parses back");
    assert_eq!(back.id().ok().as_ref(), Some(&id), "id changed through a JSON round trip: {text}");

    let mut ledger = ledger().lock().unwrap();
    if ledger.records >= RECORDS_PER_STORE {
        ledger.store.close();
        let old = ledger.generation;
        *ledger = open_ledger(old + 1);
        let _ = std::fs::remove_dir_all(rea_fuzz::scratch().join(format!("ledger-{old}")));
    }
    ledger.records += 1;
    let outcome = match ledger.store.record_blocking(record.clone()) {
        Ok(outcome) => outcome,
        // Links to Evidence the ledger does not hold are refused, as they should be.
        Err(_) if !record.links.is_empty() => return,
        Err(e) => panic!("the ledger refused a record whose id computes: {e}"),
    };
    assert_eq!(outcome.id, id);
    let stored = ledger
        .store
        .evidence(&id)
        .expect("read back")
        .expect("a recorded id is in the ledger");
    assert_eq!(
        stored.record.id().ok().as_ref(),
        Some(&id),
        "the stored record no longer hashes to its id"
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let canonical = canonical_json(&value)
        .unwrap_or_else(|e| panic!("parsed JSON has no canonical form: {e}"));
    let reparsed: Value = serde_json::from_str(&canonical)
        .unwrap_or_else(|e| panic!("canonical JSON {canonical:?} does not parse: {e}"));
    let again = canonical_json(&reparsed).expect("canonical JSON canonicalizes again");
    assert_eq!(again, canonical, "canonical JSON is not a fixed point");
    check_record(&record_around(&value));
    // The document may itself be a record (the shape the ledger stores).
    if let Ok(record) = serde_json::from_value::<EvidenceRecord>(value) {
        check_record(&record);
    }
});

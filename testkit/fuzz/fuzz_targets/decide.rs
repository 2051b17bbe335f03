//! Any bytes that decode to an intent, decided against an empty account: decide never panics,
//! a commit exists exactly when the outcome is `committed`, its head hash is the hash of its
//! content and chains from the empty head, its commit_seq is 1, and a rejection has a code.
#![no_main]

use kledger_processors::{Limits, RecordMeta, decide_owned, ids};
use kledger_schemas::avro::{KnownSchemas, decode};
use kledger_schemas::{Intent, Outcome};
use libfuzzer_sys::fuzz_target;

/// The released schemas, parsed once.
static LOOKUP: std::sync::LazyLock<KnownSchemas> = std::sync::LazyLock::new(KnownSchemas::released);

fuzz_target!(|data: &[u8]| {
    let (time, bytes) = match data.split_first_chunk::<8>() {
        Some((t, rest)) => (i64::from_le_bytes(*t), rest),
        None => return,
    };
    let Ok(intent) = decode::<Intent>(bytes, &*LOOKUP) else {
        return;
    };
    let meta = RecordMeta {
        timestamp: time,
        partition: 0,
        offset: 0,
    };
    let d = decide_owned(&Default::default(), intent, &meta, &Limits::default());
    assert_eq!(d.commits.len() == 1, d.receipt.outcome == Outcome::Committed);
    if let Some(mut c) = d.into_commit() {
        assert_eq!(c.commit_seq, 1);
        assert_eq!(c.prev_hash, "0".repeat(64));
        let h = c.head_hash.clone();
        assert_eq!(ids::head_hash(&mut c), h);
    }
    if d.receipt.outcome == Outcome::Rejected {
        assert!(d.receipt.code.is_some());
    }
});

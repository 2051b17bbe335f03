//! Any bytes through the codec: decoding never panics, and whatever decodes re-encodes to
//! bytes that decode and re-encode to the same bytes (compared as bytes: a NaN is not equal to
//! itself as a value, and the codec keeps a double's bits).
#![no_main]

use kledger_schemas::avro::{KnownSchemas, decode, encode_single_object};
use kledger_schemas::{Commit, Intent, Receipt};
use libfuzzer_sys::fuzz_target;

/// The released schemas, parsed once.
static LOOKUP: std::sync::LazyLock<KnownSchemas> = std::sync::LazyLock::new(KnownSchemas::released);

fuzz_target!(|data: &[u8]| {
    let lookup = &*LOOKUP;
    if let Ok(i) = decode::<Intent>(data, lookup) {
        let once = encode_single_object(&i);
        let again: Intent = decode(&once, lookup).expect("re-encoded intent decodes");
        assert_eq!(encode_single_object(&again), once);
    }
    if let Ok(c) = decode::<Commit>(data, lookup) {
        let once = encode_single_object(&c);
        let again: Commit = decode(&once, lookup).expect("re-encoded commit decodes");
        assert_eq!(encode_single_object(&again), once);
    }
    if let Ok(r) = decode::<Receipt>(data, lookup) {
        let once = encode_single_object(&r);
        let again: Receipt = decode(&once, lookup).expect("re-encoded receipt decodes");
        assert_eq!(encode_single_object(&again), once);
    }
});

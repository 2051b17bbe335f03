//! The reliability harness's short profile, with this build's `kledger` binary: a crash loop
//! (20k intents over 200 accounts, SIGKILL 5 times at random points; the outbox oracle and the
//! state digest) and the bad-input corpus interleaved with a valid stream. The long profile:
//! `scripts/dev.sh harness long`.

use std::path::Path;

#[test]
fn the_short_harness_profile_holds() {
    // The harness's own Kafka reads (the oracles') report what stalls them: shown on failure.
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "error,kledger_topology::kafka::reader=warn,kledger_topology::pipeline::keys=info",
        ))
        .try_init();
    let summary = kledger_testkit::harness::run(
        &kledger_testkit::harness::SHORT,
        Path::new(env!("CARGO_BIN_EXE_kledger")),
    )
    .unwrap();
    eprintln!("{summary}");
    assert!(summary.ok(), "{summary}");
}

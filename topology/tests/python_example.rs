//! The Python extractor example (`examples/python/extractor.py`, confluent-kafka + fastavro)
//! against a broker and a `kledger run` process: it publishes intents encoded from the `.avsc`
//! files, reads the receipts and goes through the replan loop (committed, replan
//! slot_occupied, the re-planned amend committed, a retry answered duplicate).
//!
//! The interpreter is `$EXAMPLES_PYTHON` (scripts/dev.sh points it at a virtualenv with
//! `examples/python/requirements.txt` installed), else `python3`. A missing interpreter or
//! package fails the test: CI installs them.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

#[test]
fn the_python_extractor_goes_through_the_replan_loop() {
    let broker = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&broker.bootstrap, dir.path(), 4, "g-python");
    c.kafka.topic_prefix = "py".into();
    create_topics(&broker, &c);
    let bin = Path::new(env!("CARGO_BIN_EXE_kledger"));
    let child = spawn_processor(bin, &c, dir.path(), "kledger");

    let python = std::env::var("EXAMPLES_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python/extractor.py");
    let out = Command::new(&python)
        .arg(&script)
        .args(["--bootstrap", &broker.bootstrap, "--prefix", "py"])
        .args(["--run-id", "ci", "--timeout", "60", "--check"])
        .output()
        .unwrap_or_else(|e| panic!("run {python}: {e} (scripts/dev.sh test installs it)"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{python} extractor.py failed (pip install -r examples/python/requirements.txt?)\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let steps: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let outcomes: Vec<&str> = steps
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["committed", "replan", "committed", "duplicate"]);

    // The ledger agrees: two commits for the account, the second an amend superseding the
    // first row.
    let commits: Vec<_> = commits(&broker.bootstrap, &c)
        .into_iter()
        .map(|(_, commit)| commit)
        .filter(|commit| commit.account_id == "t_pyexample/user/u_ci")
        .collect();
    assert_eq!(commits.len(), 2);
    assert_eq!(commits[1].commit_seq, 2);
    assert_eq!(commits[1].prev_hash, commits[0].head_hash);
    let first_row = &commits[0].ops[0].row.memory_id;
    assert!(
        commits[1]
            .ops
            .iter()
            .any(|o| &o.row.memory_id == first_row && o.row.superseded_by.is_some()),
        "the amend supersedes the Lisbon row"
    );
    stop(child);
}

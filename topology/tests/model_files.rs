//! The local model's files as `kledger` checks them at start (`vectors.embedder.kind =
//! "local"`, the default): a missing file, or one that is not the pinned one, stops `kledger
//! run` before anything starts, with exit status 2 (a bad configuration) and one line naming the
//! file's path and the SHA-256 it must have. The model is the one the test command installs
//! (`scripts/dev.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;

use kledger_topology::kafka::embedded::free_port;
use kledger_topology::vector::model::DEFAULT_SHA256;

fn installed() -> PathBuf {
    std::env::var_os("KLEDGER_VECTORS__EMBEDDER__MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                .join(".cache/kledger/models/all-minilm-l6-v2")
        })
}

/// `kledger run` with the model in `model_dir`: its exit status and standard error.
fn run(dir: &Path, model_dir: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kledger"))
        .arg("run")
        .env(
            "KLEDGER_EMBEDDED__LISTEN",
            format!("127.0.0.1:{}", free_port().unwrap()),
        )
        .env("KLEDGER_HTTP__LISTEN", "")
        .env("KLEDGER_VECTORS__EMBEDDER__MODEL_DIR", model_dir)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A copy of the installed model in `to` (hard links where the file system allows).
fn copy_model(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for (name, _) in DEFAULT_SHA256 {
        let from = installed().join(name);
        if std::fs::hard_link(&from, to.join(name)).is_err() {
            std::fs::copy(&from, to.join(name)).unwrap();
        }
    }
}

#[test]
fn a_missing_or_changed_model_file_stops_kledger_at_start_naming_path_and_hash() {
    let dir = tempfile::tempdir().unwrap();
    // Missing: the path of the first file it needs and its expected hash.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (status, err) = run(dir.path(), &empty);
    let weights = empty.join("model.safetensors");
    assert_eq!(status, Some(2), "{err}");
    assert!(err.contains(&weights.display().to_string()), "{err}");
    assert!(err.contains(DEFAULT_SHA256[0].1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!dir.path().join("data").exists(), "nothing started");
    // Changed: the vocabulary of another model (one token more).
    let changed = dir.path().join("changed");
    copy_model(&changed);
    let vocab = changed.join("vocab.txt");
    let mut text = std::fs::read_to_string(&vocab).unwrap();
    std::fs::remove_file(&vocab).unwrap();
    text.push_str("kledger\n");
    std::fs::write(&vocab, text).unwrap();
    let (status, err) = run(dir.path(), &changed);
    assert_eq!(status, Some(2), "{err}");
    assert!(err.contains(&vocab.display().to_string()), "{err}");
    assert!(err.contains(DEFAULT_SHA256[1].1), "{err}");
    assert!(err.contains("has SHA-256"), "{err}");
}

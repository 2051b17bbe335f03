//! The vendored crates are their crates.io releases plus the diffs kept in `vendor/patches/`,
//! nothing more: each release's files are listed there with their SHA-256
//! (`<crate>-<version>.sha256`, read off the release), and undoing the diff
//! (`<crate>-<version>.diff`, applied with `patch -R`) to a copy of the vendored tree must give
//! exactly those files. A change made in `vendor/` without its diff, or a diff that no longer
//! matches the tree, fails here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// Files kledger adds beside a release: its notes on the patch.
const ADDED: &[&str] = &["KLEDGER-PATCH.md"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let digest = Sha256::digest(std::fs::read(&path).unwrap());
                out.insert(rel, kledger_processors::ids::to_hex(&digest));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// The vendored `dir` is release `release` plus `vendor/patches/<release>.diff`.
fn is_release_plus_diff(dir: &str, release: &str) {
    let patches = repo().join("vendor/patches");
    let release_sums: BTreeMap<String, String> =
        std::fs::read_to_string(patches.join(format!("{release}.sha256")))
            .unwrap()
            .lines()
            .map(|l| {
                let (sum, path) = l.split_once("  ").expect("sha256sum line");
                (path.to_owned(), sum.to_owned())
            })
            .collect();
    let scratch = tempfile::tempdir().unwrap();
    let tree = scratch.path().join("tree");
    copy_tree(&repo().join("vendor").join(dir), &tree);
    let undone = Command::new("patch")
        .args([
            "-R",
            "-E",
            "-p1",
            "--quiet",
            "--no-backup-if-mismatch",
            "-i",
        ])
        .arg(patches.join(format!("{release}.diff")))
        .current_dir(&tree)
        .status()
        .expect("run patch (Debian's `patch`)");
    assert!(undone.success(), "{release}.diff does not undo cleanly");
    let mut got = files(&tree);
    for added in ADDED {
        assert!(got.remove(*added).is_some(), "{dir}/{added} is missing");
    }
    let missing: Vec<_> = release_sums
        .keys()
        .filter(|k| !got.contains_key(*k))
        .collect();
    let extra: Vec<_> = got
        .keys()
        .filter(|k| !release_sums.contains_key(*k))
        .collect();
    let changed: Vec<_> = release_sums
        .iter()
        .filter(|(k, sum)| got.get(*k).is_some_and(|g| g != *sum))
        .map(|(k, _)| k)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty() && changed.is_empty(),
        "vendor/{dir} is not {release} plus its diff: missing {missing:?}, extra {extra:?}, \
         changed without the diff {changed:?}"
    );
}

#[test]
fn tansu_storage_is_its_release_plus_the_kept_diff() {
    is_release_plus_diff("tansu-storage", "tansu-storage-0.6.0");
}

#[test]
fn qdrant_edge_is_its_release_plus_the_kept_diff() {
    is_release_plus_diff("qdrant-edge", "qdrant-edge-0.7.0");
}

#[test]
fn tansu_broker_is_its_release_plus_the_kept_diff() {
    is_release_plus_diff("tansu-broker", "tansu-broker-0.6.0");
}

#[test]
fn tansu_auth_is_its_release_plus_the_kept_diff() {
    is_release_plus_diff("tansu-auth", "tansu-auth-0.6.0");
}

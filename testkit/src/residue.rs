//! Residue scans: which files under a directory still hold some bytes (the erasure tests'
//! check that purged text left every file kledger keeps).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aho_corasick::AhoCorasick;

/// Every file under `root` (recursively) whose bytes contain `needle`.
pub fn files_containing(root: &Path, needle: &[u8]) -> Vec<PathBuf> {
    scan(root, &[needle]).remove(&0).unwrap_or_default()
}

/// For each of `needles` (by index) that some file under `root` holds, those files. Reads
/// each file once and searches it for every needle in one pass.
pub fn scan(root: &Path, needles: &[&[u8]]) -> BTreeMap<usize, Vec<PathBuf>> {
    let finder = AhoCorasick::new(needles).expect("needles");
    let mut hits: BTreeMap<usize, Vec<PathBuf>> = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let mut found: Vec<usize> = finder
                .find_overlapping_iter(&bytes)
                .map(|m| m.pattern().as_usize())
                .collect();
            found.sort_unstable();
            found.dedup();
            for i in found {
                hits.entry(i).or_default().push(path.clone());
            }
        }
    }
    for files in hits.values_mut() {
        files.sort();
    }
    hits
}

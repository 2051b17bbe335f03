//! The layers hold: crates depend one way, and no crate's modules import each other in a
//! circle.
//!
//! - **Crates.** Each workspace crate has a rank; a crate's normal and build dependencies on
//!   other workspace crates must have a lower rank (dev-dependencies may point up: a crate's
//!   tests use the test kit). A new crate must be given a rank here.
//! - **Modules.** Within a crate, the modules at each depth (`kafka`, then `kafka::reader`, …)
//!   form a graph by the paths their code names (`crate::…`, `super::…`, with each module's
//!   unit tests left out); an edge to an ancestor or a descendant does not count (a parent
//!   holds what its children share, and composes them). The graph must have no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Workspace crates by rank: a crate may depend only on crates of a lower rank.
const RANKS: &[(&str, u32)] = &[
    ("kledger-schemas", 0),
    ("kledger-processors", 1),
    ("kledger-retrieval", 1),
    ("kledger-state", 2),
    ("kledger-runtime", 3),
    ("kledger-kafka", 4),
    ("kledger-vectors", 4),
    ("kledger-pipeline", 5),
    ("kledger-serve", 6),
    ("kledger-topology", 7),
    ("kledger-testkit", 8),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The workspace members (directories) as the root manifest lists them.
fn members() -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("members");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// A manifest's package name and its workspace dependencies in `[dependencies]` and
/// `[build-dependencies]`.
fn crate_deps(dir: &str) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
    let (mut name, mut deps, mut section) = (String::new(), Vec::new(), String::new());
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_owned();
            continue;
        }
        if section == "[package]" && line.starts_with("name") {
            name = line.split('"').nth(1).unwrap_or_default().to_owned();
        }
        if (section == "[dependencies]" || section == "[build-dependencies]")
            && line.starts_with("kledger-")
        {
            deps.push(line.split(['.', ' ', '=']).next().unwrap().to_owned());
        }
    }
    (name, deps)
}

#[test]
fn workspace_crates_depend_on_lower_layers_only() {
    let rank: BTreeMap<&str, u32> = RANKS.iter().copied().collect();
    let mut upward = Vec::new();
    for dir in members() {
        let (name, deps) = crate_deps(&dir);
        let own = *rank
            .get(name.as_str())
            .unwrap_or_else(|| panic!("{name} has no rank in tests/layers.rs"));
        for d in deps {
            let theirs = *rank
                .get(d.as_str())
                .unwrap_or_else(|| panic!("{d} has no rank in tests/layers.rs"));
            if theirs >= own {
                upward.push(format!("{name} (rank {own}) -> {d} (rank {theirs})"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "dependencies that do not point down: {upward:#?}"
    );
}

/// A source file's module path (`a::b`), empty for the crate root.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") || parts == ["lib"] || parts == ["main"] {
        parts.pop();
    }
    if parts.len() == 1 && parts[0] == "main" {
        parts.clear();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            // A binary target's own tree (src/bin) is a crate of its own.
            if p.file_name().is_some_and(|n| n != "bin") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file that counts: its unit tests and comment lines left out.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths `code` names, from the point of view of module `at` (`dir`: whether the
/// file is a directory module, whose `super` is its parent).
fn named_paths(code: &str, at: &[String], dir: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let starts = (i == 0 || !(ident(bytes[i - 1]) || bytes[i - 1] == b':'))
            && (bytes[i..].starts_with(b"crate::") || bytes[i..].starts_with(b"super::"));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < bytes.len() && (ident(bytes[j]) || bytes[j] == b':') {
            j += 1;
        }
        let segs: Vec<&str> = code[i..j].split("::").filter(|s| !s.is_empty()).collect();
        let mut path: Vec<String> = Vec::new();
        let mut rest = segs.as_slice();
        if rest.first() == Some(&"crate") {
            rest = &rest[1..];
        } else {
            // A file module's `super` is the directory it is in; a directory module's is the
            // directory above.
            path = at.to_vec();
            if !dir {
                path.pop();
            }
            let ups = rest.iter().take_while(|s| **s == "super").count();
            rest = &rest[ups..];
            for _ in 1..ups {
                path.pop();
            }
            if dir {
                path.pop();
            }
        }
        path.extend(
            rest.iter()
                .take_while(|s| s.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
                .map(|s| (*s).to_owned()),
        );
        out.push(path);
        i = j;
    }
    out
}

/// The cycles (as strongly connected sets of more than one module) of `edges`.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Reachability by search from each node is enough at these sizes.
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(n) = todo.pop() {
            for m in edges.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let nodes: BTreeSet<&String> = edges.keys().chain(edges.values().flatten()).collect();
    let reachable: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for n in &nodes {
        let set: Vec<String> = nodes
            .iter()
            .filter(|m| reachable[*n].contains(**m) && reachable[**m].contains(*n))
            .map(|m| (*m).clone())
            .collect();
        if set.len() > 1 && !out.contains(&set) {
            out.push(set);
        }
    }
    out
}

/// A crate's module cycles at every depth.
fn module_cycles(src: &Path) -> Vec<(usize, Vec<String>)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let exists = |m: &[String]| {
        let p = m.iter().fold(src.to_owned(), |p, s| p.join(s));
        p.with_extension("rs").is_file() || p.is_dir()
    };
    let mut refs: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for f in &files {
        let at = module_of(src, f);
        let dir = f.file_name().is_some_and(|n| n == "mod.rs");
        let text = std::fs::read_to_string(f).unwrap();
        for mut to in named_paths(&code(&text), &at, dir) {
            // The module a path names: its longest prefix that is a module of the crate.
            while !to.is_empty() && !exists(&to) {
                to.pop();
            }
            if !to.is_empty() {
                refs.push((at.clone(), to));
            }
        }
    }
    let mut found = Vec::new();
    for depth in 1..=4 {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in &refs {
            let (a, b) = (&from[..from.len().min(depth)], &to[..to.len().min(depth)]);
            // An ancestor or a descendant (the crate root included) does not count.
            if a.is_empty() || b.is_empty() || a.starts_with(b) || b.starts_with(a) {
                continue;
            }
            edges.entry(a.join("::")).or_default().insert(b.join("::"));
        }
        for c in cycles(&edges) {
            if !found.iter().any(|(_, f)| *f == c) {
                found.push((depth, c));
            }
        }
    }
    found
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut all = Vec::new();
    for dir in members() {
        let src = root().join(&dir).join("src");
        for (depth, c) in module_cycles(&src) {
            all.push(format!("{dir} (depth {depth}): {}", c.join(" <-> ")));
        }
    }
    assert!(all.is_empty(), "modules that import each other: {all:#?}");
}

#[test]
fn the_cycle_check_finds_a_cycle_and_ignores_parents() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a; mod b; mod c;\n").unwrap();
    // a -> b through a file of a's, b -> a through `super::`, c -> a and a's parent (lib).
    std::fs::write(
        src.join("a/mod.rs"),
        "mod inner; pub fn f() { crate::c::g(); }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/inner.rs"),
        "fn h() { crate::b::x(); super::f(); }\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "use super::a::f;\n// crate::c::g()\n").unwrap();
    std::fs::write(
        src.join("c.rs"),
        "pub fn g() {}\n#[cfg(test)]\nmod tests { fn t() { crate::b::x(); } }\n",
    )
    .unwrap();
    let found = module_cycles(src);
    assert_eq!(found, vec![(1, vec!["a".to_owned(), "b".to_owned()])]);
    std::fs::write(src.join("b.rs"), "pub fn x() {}\n").unwrap();
    assert!(module_cycles(src).is_empty());
}

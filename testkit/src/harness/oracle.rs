//! The outbox oracle: what the outbox holds against what an uninterrupted offline run commits.

use std::collections::{BTreeMap, BTreeSet};

use kledger_processors::ids;
use kledger_schemas::Commit;

/// What the oracle found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Commits an uninterrupted run makes.
    pub expected: usize,
    /// Distinct commits in the outbox.
    pub commits: usize,
    /// Byte-identical repeats (an old owner's writes; the fold ignores them).
    pub repeats: usize,
    /// Expected commits missing from the outbox (or present with other content).
    pub lost: usize,
    /// Commits beyond the expected ones: an action committed twice, or a commit no
    /// uninterrupted run makes.
    pub duplicated: usize,
    /// The same (account, seq) with different content.
    pub forks: usize,
    /// Accounts whose commit_seq is not 1, 2, 3, … in the outbox.
    pub gaps: usize,
    /// Commits whose prev_hash is not the previous head hash, or whose head hash is not the
    /// hash of their content.
    pub chain_breaks: usize,
    /// The first few lost commits, each as `account#seq: field (expected → outbox)…`, so a
    /// failure shows what differs.
    pub lost_sample: Vec<String>,
}

/// How many lost commits [`Findings::lost_sample`] describes.
pub const LOST_SAMPLE_MAX: usize = 3;

impl Findings {
    /// Whether every invariant holds.
    pub fn ok(&self) -> bool {
        self.lost == 0
            && self.duplicated == 0
            && self.forks == 0
            && self.gaps == 0
            && self.chain_breaks == 0
            && self.commits == self.expected
    }
}

/// Checks the outbox `got` (partition, commit) against `want` (an uninterrupted run's commits).
pub fn check(got: &[(i32, Commit)], want: &[Commit]) -> Findings {
    // Commits compare by what they decided, not by the data keys that sealed them (rules v4).
    let got: Vec<(i32, Commit)> = got
        .iter()
        .map(|(p, c)| (*p, crate::kafka::comparable(c)))
        .collect();
    let want: Vec<Commit> = want.iter().map(crate::kafka::comparable).collect();
    let (got, want) = (got.as_slice(), want.as_slice());
    let mut f = Findings {
        expected: want.len(),
        ..Findings::default()
    };
    let mut unique: BTreeMap<(String, i64), &Commit> = BTreeMap::new();
    for (_, c) in got {
        match unique.get(&(c.account_id.clone(), c.commit_seq)) {
            Some(first) if *first == c => f.repeats += 1,
            Some(_) => f.forks += 1,
            None => {
                unique.insert((c.account_id.clone(), c.commit_seq), c);
            }
        }
    }
    f.commits = unique.len();
    let expected: BTreeMap<(String, i64), &Commit> = want
        .iter()
        .map(|c| ((c.account_id.clone(), c.commit_seq), c))
        .collect();
    for (k, w) in &expected {
        let have = unique.get(k);
        if have != Some(w) {
            f.lost += 1;
            if f.lost_sample.len() < LOST_SAMPLE_MAX {
                f.lost_sample.push(describe_lost(w, have.copied()));
            }
        }
    }
    let mut actions: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (k, c) in &unique {
        if !expected.contains_key(k) || !actions.insert((&c.account_id, &c.action_id)) {
            f.duplicated += 1;
        }
    }
    let mut prev: BTreeMap<&str, (i64, String)> = BTreeMap::new();
    let mut gapped: BTreeSet<&str> = BTreeSet::new();
    for ((account, seq), c) in &unique {
        let (last_seq, last_hash) = prev
            .get(account.as_str())
            .cloned()
            .unwrap_or((0, "0".repeat(64)));
        if *seq != last_seq + 1 {
            gapped.insert(account);
        }
        let mut copy = (*c).clone();
        if c.prev_hash != last_hash || ids::head_hash(&mut copy) != c.head_hash {
            f.chain_breaks += 1;
        }
        prev.insert(account, (*seq, c.head_hash.clone()));
    }
    f.gaps = gapped.len();
    f
}

fn describe_lost(want: &Commit, have: Option<&Commit>) -> String {
    let head = format!("{}#{}", want.account_id, want.commit_seq);
    match have {
        None => format!("{head}: missing from the outbox"),
        Some(got) => {
            let fields: Vec<String> = kledger_topology::pipeline::replay::field_diff(want, got)
                .into_iter()
                .map(|(path, w, g)| format!("{path} ({w} → {g})"))
                .collect();
            format!("{head}: {}", fields.join(", "))
        }
    }
}

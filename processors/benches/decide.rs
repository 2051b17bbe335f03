//! Bench: decode → decide → encode for one-op and four-op intents against a warm state of 10k
//! accounts, on one core. Prints the median rate of 15 samples and its ratio to the goal
//! (400k one-op intents/s, issue 25; the earlier goal was 300k).
//!
//! Run: `cargo bench -p kledger-processors --bench decide` (`-- 1` for one-op intents only,
//! `-- 1 v4` for those under rules v4 only)

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use kledger_processors::{AccountState, Head, Limits, RecordMeta, Rules, decide, decide_owned};
use kledger_schemas::avro::{NoRegistry, decode, encode_single_object};
use kledger_schemas::{Intent, Op, Status};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ACCOUNTS: usize = 10_000;
const GOAL_PER_S: f64 = 400_000.0;
const SAMPLES: usize = 15;
const T0: i64 = 1_767_600_000_000;

fn template() -> Intent {
    serde_json::from_str(include_str!("../../examples/intent.json")).expect("example intent")
}

fn account(i: usize) -> String {
    format!("t_acme/user/u_{i}")
}

fn intent_for(i: usize, action: &str, head: i64, ops: usize) -> Intent {
    let mut it = template();
    it.tenant.owner_id = format!("u_{i}");
    it.account_id = account(i);
    it.action_id = action.to_owned();
    it.planned_against.head_seq = head;
    let Op::Assert(base) = it.ops[0].clone() else {
        unreachable!("the example asserts")
    };
    it.ops = (0..ops)
        .map(|k| {
            let mut a = base.clone();
            a.slot = None;
            a.content = format!("Observation {k} about account {i}: prefers window seats");
            Op::Assert(a)
        })
        .collect();
    it
}

/// Folds a commit into a state value (what the runner's store would load next time).
fn fold(state: &mut AccountState, d: &kledger_processors::Decision) {
    let Some(c) = d.commit() else { return };
    state.head = Head {
        seq: c.commit_seq,
        hash: c.head_hash.clone(),
        generation: c.generation,
        intent_offset: c.intent_offset,
    };
    for op in &c.ops {
        if let (Status::Active, Some(slot)) = (op.row.status, &op.row.slot) {
            state.slots.insert(slot.clone(), op.row.memory_id.clone());
        }
        state.rows.insert(op.row.memory_id.clone(), op.row.clone());
    }
}

fn warm() -> BTreeMap<String, AccountState> {
    let mut states = BTreeMap::new();
    for i in 0..ACCOUNTS {
        let mut s = AccountState::default();
        for n in 0..3 {
            let it = intent_for(i, &format!("warm-{n}"), s.head.seq, 1);
            let d = decide(
                &s,
                &it,
                &RecordMeta {
                    timestamp: T0 + n,
                    partition: 0,
                    offset: n,
                },
                &Limits::default(),
            );
            fold(&mut s, &d);
        }
        // Keep what decide reads for a fresh assert: the head (rows are not needed).
        s.rows.clear();
        states.insert(account(i), s);
    }
    states
}

// Not inlined: profilers count instructions inside it (`--toggle-collect='decide::sample'`).
#[inline(never)]
fn sample(states: &BTreeMap<String, AccountState>, inputs: &[Vec<u8>], limits: &Limits) -> f64 {
    let start = Instant::now();
    for (n, bytes) in inputs.iter().enumerate() {
        let intent: Intent = decode(bytes, &NoRegistry).expect("decodes");
        let state = &states[&intent.account_id];
        let d = decide_owned(
            state,
            intent,
            &RecordMeta {
                timestamp: T0 + 10_000 + n as i64,
                partition: 3,
                offset: n as i64,
            },
            limits,
        );
        // The payloads the processor hands to its producer: the sealed commit record, the receipt.
        let receipt = encode_single_object(&d.receipt);
        black_box((&d.records, &receipt));
    }
    inputs.len() as f64 / start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let states = warm();
    // `-- 1` or `-- 4` runs one size only, `-- v4` or `-- v3` one version of the rules (for a
    // profiler); without them, every run.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let only: Option<usize> = args.iter().find_map(|a| a.parse().ok());
    let only_rules = args.iter().find(|a| a.starts_with('v'));
    let v3 = Limits {
        rules: Rules::V3,
        ..Limits::default()
    };
    // Rules v4 (the default) keys every id and hash and marks each row with its content's MAC;
    // the runner encrypts and encodes those commits afterwards (not timed here). Rules v3
    // hashes with plain SHA-256 and encodes the commit record here.
    let runs = [
        (1usize, Limits::default(), "v4"),
        (4, Limits::default(), "v4"),
        (1, v3, "v3"),
    ];
    for (ops, limits, rules) in runs.into_iter().filter(|(n, _, rules)| {
        only.is_none_or(|o| o == *n) && only_rules.is_none_or(|r| r == rules)
    }) {
        let inputs: Vec<Vec<u8>> = (0..ACCOUNTS)
            .map(|i| encode_single_object(&intent_for(i, &format!("bench-{ops}-{i}"), 3, ops)))
            .collect();
        let rates: Vec<f64> = (0..SAMPLES)
            .map(|_| sample(&states, &inputs, &limits))
            .collect();
        let m = median(rates);
        println!(
            "decode→decide→encode, {ops}-op intents, rules {rules}, warm state of {ACCOUNTS} accounts: median {:.0} intents/s ({:.2} µs/intent); ratio to goal {:.0}/s: {:.2}",
            m,
            1e6 / m,
            GOAL_PER_S,
            m / GOAL_PER_S
        );
    }
}

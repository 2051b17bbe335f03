//! Property: random streams through `decide` (the real path: decide + state over the store)
//! and through the reference model agree on every outcome and every resulting row.

use std::collections::BTreeMap;

use kledger_schemas::Outcome;
use kledger_testkit::{GenConfig, Generator, Ledger, Model};
use proptest::prelude::*;

fn run(cfg: GenConfig, n: usize) -> BTreeMap<Outcome, usize> {
    let mut ledger = Ledger::new(6);
    let mut model = Model::new();
    let mut outcomes = BTreeMap::new();
    for (i, r) in Generator::new(cfg.clone()).take(n).enumerate() {
        let d = ledger.apply(&r);
        let m = model.apply(&r.intent, r.timestamp);
        let ctx = || format!("seed {} record {i}: {:?}", cfg.seed, r.intent.action_id);
        assert_eq!(
            d.receipt.outcome,
            m.outcome,
            "{} receipt {:?}",
            ctx(),
            d.receipt
        );
        assert_eq!(d.receipt.code, m.code, "{}", ctx());
        assert_eq!(d.receipt.commit_seq, m.commit_seq, "{}", ctx());
        let rows: Vec<_> = d
            .commit
            .iter()
            .flat_map(|c| c.ops.iter().map(|o| o.row.clone()))
            .collect();
        assert_eq!(rows, m.rows, "{}", ctx());
        *outcomes.entry(d.receipt.outcome).or_insert(0) += 1;
    }
    for account in model.accounts() {
        let mut want = model.rows(account).to_vec();
        want.sort_by(|a, b| a.memory_id.cmp(&b.memory_id));
        assert_eq!(ledger.rows(account), want, "final rows of {account}");
    }
    outcomes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn decide_agrees_with_the_reference_model(
        seed in any::<u64>(),
        accounts in 1usize..12,
        stale_pct in 0u32..40,
        retry_pct in 0u32..15,
        invalid_pct in 0u32..15,
        purge_pct in 0u32..6,
        conflict_pct in 0u32..30,
        strict_pct in 0u32..30,
    ) {
        let cfg = GenConfig { seed, accounts, stale_pct, retry_pct, invalid_pct, purge_pct, conflict_pct, strict_pct, ..GenConfig::default() };
        run(cfg, 300);
    }
}

/// The default mix exercises every outcome (so the property above is not vacuous).
#[test]
fn default_stream_has_every_outcome() {
    let outcomes = run(
        GenConfig {
            seed: 7,
            accounts: 8,
            ..GenConfig::default()
        },
        3_000,
    );
    for o in Outcome::ALL {
        assert!(
            outcomes.get(o).copied().unwrap_or(0) > 0,
            "no {o} in {outcomes:?}"
        );
    }
}

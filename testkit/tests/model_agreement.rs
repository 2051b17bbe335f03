//! Property: random streams through `decide` (the real path: decide + state over the store)
//! and through the reference model agree on every outcome and every resulting row.

use std::collections::BTreeMap;

use kledger_processors::Limits;
use kledger_schemas::Outcome;
use kledger_testkit::{GenConfig, Generator, Ledger, Model, unsealed};
use proptest::prelude::*;

fn run(cfg: GenConfig, n: usize) -> BTreeMap<Outcome, usize> {
    run_within(cfg, n, Limits::default()).0
}

/// Runs both and returns the outcomes and how many decisions were split into several commits.
fn run_within(cfg: GenConfig, n: usize, limits: Limits) -> (BTreeMap<Outcome, usize>, usize) {
    let mut split = 0;
    let mut ledger = Ledger::with_limits(6, limits);
    let mut model = Model::with_limits(limits);
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
            .commits
            .iter()
            .flat_map(|c| c.ops.iter().map(|o| unsealed(&o.row)))
            .collect();
        assert_eq!(rows, m.rows, "{}", ctx());
        *outcomes.entry(d.receipt.outcome).or_insert(0) += 1;
        split += usize::from(d.commits.len() > 1);
    }
    for account in model.accounts() {
        let mut want = model.rows(account).to_vec();
        want.sort_by(|a, b| a.memory_id.cmp(&b.memory_id));
        let got: Vec<_> = ledger.rows(account).iter().map(unsealed).collect();
        assert_eq!(got, want, "final rows of {account}");
    }
    (outcomes, split)
}

/// The small-budget property is not vacuous: purges split.
#[test]
fn a_small_budget_splits_purges() {
    let cfg = GenConfig {
        seed: 11,
        accounts: 2,
        purge_pct: 4,
        ..GenConfig::default()
    };
    let (outcomes, split) = run_within(
        cfg,
        1_500,
        Limits {
            record_bytes_max: 3 << 10,
            ..Limits::default()
        },
    );
    assert!(split > 0, "no purge was split: {outcomes:?}");
    assert!(outcomes.get(&Outcome::Committed).copied().unwrap_or(0) > 100);
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
        source_pct in 0u32..20,
    ) {
        let cfg = GenConfig { seed, accounts, stale_pct, retry_pct, invalid_pct, purge_pct, conflict_pct, strict_pct, source_pct, ..GenConfig::default() };
        run(cfg, 300);
    }

    /// With a record budget of a few KiB, purges split into several commits (and intents whose
    /// commit is over the budget are rejected): the model cuts where the rule says.
    #[test]
    fn decide_agrees_with_the_reference_model_on_a_small_budget(
        seed in any::<u64>(),
        accounts in 1usize..4,
        purge_pct in 2u32..10,
        budget_kib in 2usize..12,
    ) {
        let cfg = GenConfig { seed, accounts, purge_pct, source_pct: 10, ..GenConfig::default() };
        run_within(cfg, 300, Limits { record_bytes_max: budget_kib << 10, ..Limits::default() });
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

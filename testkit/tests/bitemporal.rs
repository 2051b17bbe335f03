//! Bitemporal reads, golden: a scripted history (a move, a correction of a past fact recorded
//! late, a fact that takes effect in the future, a closed playbook, a purged fact, a third
//! party's fact) goes through the real decide and the view and vector sinks; then at every
//! point of a grid of effective times (`as_of`) and record times (`known_at`) the read API's
//! profile, playbook index, timelines (with history), read_playbook and search_knowledge answer
//! exactly what the simple model in `kledger_testkit::bitemporal` says.

use std::collections::{BTreeMap, BTreeSet};

use kledger_processors::access::Principal;
use kledger_processors::render;
use kledger_schemas::*;
use kledger_testkit::bitemporal::Model;
use kledger_testkit::build::{
    amend, close, document, fact, intent, plan, purge, slotted, third_party,
};
use kledger_testkit::ledger::Ledger;
use kledger_topology::config::Config;
use kledger_topology::serve::api::read::{ProfileParams, profile_answer, read_playbook};
use kledger_topology::serve::api::search::{SearchRequest, search_knowledge};
use kledger_topology::serve::api::timeline::{ItemStatus, TimelineParams, entity_timeline};

const A: &str = "t_acme/user/u_bitemporal";
const T0: i64 = 1_767_225_600_000;
const DAY: i64 = 86_400_000;
const PARTITIONS: i32 = 4;

struct Script {
    ledger: Ledger,
    seq: i64,
}

impl Script {
    /// Decides `ops` recorded at `at` (each target planned), and returns the new rows' ids.
    fn write(
        &mut self,
        at: i64,
        action: &str,
        reason: WriteReason,
        ops: Vec<Op>,
        targets: &[&Row],
    ) -> Vec<String> {
        let mut i = intent(A, action, reason, self.seq, ops);
        for t in targets {
            plan(&mut i, t);
        }
        let d = self.ledger.apply(&IntentRecord {
            timestamp: at,
            partition: None,
            offset: None,
            intent: i,
        });
        assert_eq!(d.outcome(), Outcome::Committed, "{action}: {:?}", d.receipt);
        self.seq = d.receipt.commit_seq.unwrap_or(self.seq);
        d.receipt.memory_ids.clone()
    }

    fn row(&self, id: &str) -> Row {
        self.ledger.row(A, id).expect("row")
    }
}

fn starting(op: AssertOp, valid_from: i64) -> AssertOp {
    AssertOp {
        valid_from: Some(valid_from),
        ..op
    }
}

#[test]
#[allow(clippy::too_many_lines)] // the script, then the grid, read top to bottom
fn every_read_answers_as_the_model_at_every_effective_and_record_time() {
    let w = WriteReason::DirectUserStatement;
    let mut s = Script {
        ledger: Ledger::new(PARTITIONS),
        seq: 0,
    };
    let lisbon = s.write(
        T0,
        "a1",
        w,
        vec![Op::Assert(starting(
            slotted("home_city", "Lives in Lisbon"),
            T0,
        ))],
        &[],
    )[0]
    .clone();
    let age30 = s.write(
        T0 + 10 * DAY,
        "a2",
        w,
        vec![Op::Assert(starting(
            slotted("age_years", "Is 30 years old"),
            T0,
        ))],
        &[],
    )[0]
    .clone();
    let meds = s.write(
        T0 + 15 * DAY,
        "a3",
        w,
        vec![Op::Assert(fact("Takes iron tablets every morning"))],
        &[],
    )[0]
    .clone();
    let routine = s.write(
        T0 + 20 * DAY,
        "a4",
        WriteReason::RecurringWorkflow,
        vec![Op::Assert(document(
            "Morning routine checklist",
            "Stretch, coffee, read the news",
        ))],
        &[],
    )[0]
    .clone();
    let sister = s.write(
        T0 + 30 * DAY,
        "a5",
        w,
        vec![Op::Assert(third_party(
            "person_ana",
            "Sister Ana lives in Braga",
        ))],
        &[],
    )[0]
    .clone();
    // The move: Porto from day 40, recorded on day 40.
    let old = s.row(&lisbon);
    let porto = s.write(
        T0 + 40 * DAY,
        "a6",
        w,
        vec![amend(
            &[&old],
            starting(slotted("home_city", "Lives in Porto"), T0 + 40 * DAY),
        )],
        &[&old],
    )[0]
    .clone();
    // A fact that takes effect in the future: a new job from day 80, recorded on day 50.
    let acme = s.write(
        T0 + 50 * DAY,
        "a7",
        w,
        vec![Op::Assert(starting(
            slotted("employer", "Works at Acme"),
            T0 + 80 * DAY,
        ))],
        &[],
    )[0]
    .clone();
    // A correction of a past fact recorded late: the age was 31 all along (recorded day 60).
    let old = s.row(&age30);
    let age31 = s.write(
        T0 + 60 * DAY,
        "a8",
        w,
        vec![amend(
            &[&old],
            starting(slotted("age_years", "Is 31 years old"), T0),
        )],
        &[&old],
    )[0]
    .clone();
    // The playbook is closed on day 70.
    let old = s.row(&routine);
    s.write(
        T0 + 70 * DAY,
        "a9",
        WriteReason::RecurringWorkflow,
        vec![close(&old, "no longer used")],
        &[&old],
    );
    // The medication is purged on day 100: no read at any time shows it again.
    let old = s.row(&meds);
    s.write(
        T0 + 100 * DAY,
        "a10",
        w,
        vec![purge(&old, "erasure request")],
        &[&old],
    );

    // The sinks fold the whole outbox.
    let dir = tempfile::tempdir().unwrap();
    let (views, g) =
        kledger_testkit::offline::projections(dir.path(), &s.ledger.commits, PARTITIONS).unwrap();
    let embedder = g.embedder.clone();
    let positioned = kledger_testkit::kafka::positioned(&s.ledger.commits, |c| c.intent_partition);
    let read: Vec<(i32, i64)> = positioned.iter().map(|c| (c.partition, c.offset)).collect();
    kledger_topology::pipeline::project::views::fold(&views, &positioned, read.iter().copied())
        .unwrap();
    kledger_topology::pipeline::project::vectors::project(
        &g,
        embedder.as_ref(),
        &positioned,
        read.into_iter(),
    )
    .unwrap();
    let api =
        kledger_testkit::offline::api(dir.path(), Config::default(), PARTITIONS, views, Some(g))
            .unwrap();
    let owner = Principal {
        tenant_id: "t_acme".into(),
        team_id: None,
        agent_id: None,
        roles: Vec::new(),
        owner_kind: OwnerKind::User,
        owner_id: "u_bitemporal".into(),
    };
    let model = Model::of(&s.ledger.commits);

    let as_ofs = [-1, 5, 12, 25, 45, 65, 75, 85, 200].map(|d| T0 + d * DAY);
    let known_ats = [
        None,
        Some(T0 - 1),
        Some(T0),
        Some(T0 + 12 * DAY),
        Some(T0 + 45 * DAY),
        Some(T0 + 55 * DAY),
        Some(T0 + 65 * DAY),
        Some(T0 + 75 * DAY),
        Some(T0 + 150 * DAY),
    ];
    let mut checked = 0;
    let mut shown: BTreeSet<String> = BTreeSet::new();
    for as_of in as_ofs {
        for known_at in known_ats {
            let at = format!(
                "as_of day {}, known_at {:?}",
                (as_of - T0) / DAY,
                known_at.map(|k| (k - T0) / DAY)
            );
            let want = model.rows(as_of, known_at);
            let q = ProfileParams {
                as_of: Some(as_of),
                known_at,
                ..ProfileParams::default()
            };
            // Profile and playbook index.
            let got = profile_answer(&api, &owner, &q).unwrap();
            assert_eq!(
                got.profile,
                render::profile(want.values(), as_of),
                "profile at {at}"
            );
            assert_eq!(
                got.playbook_index,
                render::playbook_index(want.values(), as_of),
                "playbook index at {at}"
            );
            // Timelines with history: the same rows, with the same status.
            for entity in ["user", "person_ana"] {
                let t = entity_timeline(
                    &api,
                    &owner,
                    entity,
                    &TimelineParams {
                        account: None,
                        sources: None,
                        limit: Some(40),
                        history: true,
                        audit: true,
                        as_of: Some(as_of),
                        known_at,
                        min_commit_seq: None,
                        wait_ms: None,
                    },
                )
                .unwrap();
                let got: BTreeMap<String, ItemStatus> = t
                    .items
                    .iter()
                    .map(|i| (i.memory_id.clone(), i.status))
                    .collect();
                let expected: BTreeMap<String, ItemStatus> = want
                    .values()
                    .filter(|r| match entity {
                        "user" => r.subject.scope == SubjectScope::PrimaryUser,
                        e => r.subject.entity_id.as_deref() == Some(e),
                    })
                    .map(|r| (r.memory_id.clone(), ItemStatus::of(r, as_of)))
                    .collect();
                assert_eq!(got, expected, "{entity}'s timeline at {at}");
                shown.extend(got.into_keys());
            }
            // read_playbook: available exactly when the model has it as a current playbook.
            let book = read_playbook(&api, &owner, &routine, &q);
            let expected = want
                .get(&routine)
                .is_some_and(|r| render::is_playbook(r, as_of));
            assert_eq!(book.is_ok(), expected, "read_playbook at {at}: {book:?}");
            // search_knowledge: every row current then is a candidate of this small ledger, and
            // nothing else is answered.
            let found = search_knowledge(
                &api,
                &owner,
                SearchRequest {
                    query: "Lives in Porto Lisbon Braga age years old works Acme iron tablets morning routine".into(),
                    limit: Some(20),
                    kinds: Vec::new(),
                    account: None,
                    as_of: Some(as_of),
                    known_at,
                    min_commit_seq: None,
                    wait_ms: None,
                },
            )
            .unwrap();
            let got: BTreeSet<String> = found.results.iter().map(|h| h.memory_id.clone()).collect();
            let expected: BTreeSet<String> = want
                .values()
                .filter(|r| r.is_current(as_of))
                .map(|r| r.memory_id.clone())
                .collect();
            assert_eq!(got, expected, "search at {at}");
            checked += 1;
        }
    }
    assert_eq!(checked, as_ofs.len() * known_ats.len());
    // The grid saw every row but the purged one, and the purged one nowhere.
    for id in [&lisbon, &age30, &routine, &sister, &porto, &acme, &age31] {
        assert!(shown.contains(id), "{id} never shown");
    }
    assert!(!shown.contains(&meds), "the purged row was shown");
    // Spot checks of what the grid means.
    let profile = |as_of: i64, known_at: Option<i64>| {
        profile_answer(
            &api,
            &owner,
            &ProfileParams {
                as_of: Some(as_of),
                known_at,
                ..ProfileParams::default()
            },
        )
        .unwrap()
        .profile
    };
    assert!(
        profile(T0 + 25 * DAY, None).contains("Lives in Lisbon"),
        "Lisbon was in effect on day 25"
    );
    assert!(profile(T0 + 45 * DAY, None).contains("Lives in Porto"));
    assert!(
        profile(T0 + 25 * DAY, Some(T0 + 55 * DAY)).contains("Is 30 years old"),
        "before the correction was recorded"
    );
    assert!(
        profile(T0 + 25 * DAY, None).contains("Is 31 years old"),
        "after it"
    );
    assert!(
        !profile(T0 + 75 * DAY, None).contains("Acme")
            && profile(T0 + 85 * DAY, None).contains("Acme")
    );
}

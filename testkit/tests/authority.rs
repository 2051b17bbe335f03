//! Authority at retrieval: rows that conflict (the same subject and slot) come back resolved by
//! the one authority table, the same way every time — through the read API's own answers.
//!
//! - A calendar and a chat message disagree about where Ana works: search ranks the calendar's
//!   first and marks the chat's `contested_by` it; so does her timeline.
//! - An approved decision and an inferred fact disagree about her employer: the approved one
//!   wins.
//! - A winner the reader may not read contests nothing for that reader.
//! - The profile renders the winner only.

use kledger_processors::access::Principal;
use kledger_processors::render;
use kledger_schemas::*;
use kledger_testkit::build::{intent, principal, slotted, third_party};
use kledger_testkit::ledger::Ledger;
use kledger_topology::config::Config;
use kledger_topology::serve::api::search::{SearchRequest, search_knowledge};
use kledger_topology::serve::api::timeline::{TimelineParams, entity_timeline};

const A: &str = "t_acme/user/u_owner";
const T0: i64 = 1_767_225_600_000;
const PARTITIONS: i32 = 4;

/// A fact about Ana: `(slot, content, source_type)`.
fn about_ana(
    ledger: &mut Ledger,
    at: i64,
    action: &str,
    (slot, content, source_type): (&str, &str, &str),
    class: AssertionClass,
    visibility: Visibility,
) -> String {
    let op = AssertOp {
        slot: Some(slot.into()),
        assertion_class: class,
        visibility,
        ..third_party("person:ana", content)
    };
    let mut i = intent(
        A,
        action,
        WriteReason::AgentReusableConclusion,
        0,
        vec![Op::Assert(op)],
    );
    i.source.source_type = source_type.into();
    let d = ledger.apply(&IntentRecord {
        timestamp: at,
        partition: None,
        offset: None,
        intent: i,
    });
    assert_eq!(d.outcome(), Outcome::Committed, "{action}: {:?}", d.receipt);
    d.receipt.memory_ids[0].clone()
}

struct World {
    api: kledger_topology::serve::api::Api,
    calendar: String,
    chat: String,
    approved: String,
    inferred: String,
    _dir: tempfile::TempDir,
}

fn world() -> World {
    let mut l = Ledger::new(PARTITIONS);
    let (c, p) = (AssertionClass::Confirmed, Visibility::Public);
    // The chat message is the newer record: authority, not recency, decides.
    let calendar = about_ana(
        &mut l,
        T0,
        "cal",
        ("work_city", "Ana works in Porto", "calendar"),
        c,
        p,
    );
    let chat = about_ana(
        &mut l,
        T0 + 1,
        "chat",
        ("work_city", "Ana works in Braga", "chat_message"),
        c,
        p,
    );
    let inferred = about_ana(
        &mut l,
        T0 + 3,
        "inf",
        ("employer", "Ana is employed by Initech", "model_inference"),
        AssertionClass::Inferred,
        p,
    );
    // The approved decision is private: another reader never learns of it.
    let approved = about_ana(
        &mut l,
        T0 + 2,
        "appr",
        ("employer", "Ana is employed by Acme", "approved_decision"),
        c,
        Visibility::Private,
    );
    let dir = tempfile::tempdir().unwrap();
    let api =
        kledger_testkit::offline::served(dir.path(), &l.commits, PARTITIONS, Config::default())
            .unwrap();
    World {
        api,
        calendar,
        chat,
        approved,
        inferred,
        _dir: dir,
    }
}

/// Search results as (memory id, contested_by).
fn search(w: &World, p: &Principal, query: &str) -> Vec<(String, Option<String>)> {
    let req = SearchRequest {
        query: query.into(),
        limit: Some(10),
        kinds: Vec::new(),
        account: Some(A.into()),
        as_of: None,
        known_at: None,
        min_commit_seq: None,
        wait_ms: None,
    };
    search_knowledge(&w.api, p, req)
        .unwrap()
        .results
        .into_iter()
        .map(|h| (h.memory_id, h.contested_by))
        .collect()
}

fn timeline(w: &World, p: &Principal) -> Vec<(String, Option<String>)> {
    let q = TimelineParams {
        account: Some(A.into()),
        limit: Some(40),
        ..TimelineParams::default()
    };
    entity_timeline(&w.api, p, "person:ana", &q)
        .unwrap()
        .items
        .into_iter()
        .map(|i| (i.memory_id, i.contested_by))
        .collect()
}

#[test]
fn a_calendar_outranks_a_chat_message_and_an_approved_decision_an_inferred_fact() {
    let w = world();
    let owner = principal("u_owner", &[]);
    let first = search(
        &w,
        &owner,
        "where does Ana work, which city, which employer",
    );
    for _ in 0..3 {
        assert_eq!(
            search(
                &w,
                &owner,
                "where does Ana work, which city, which employer"
            ),
            first,
            "the same rows, the same order"
        );
    }
    let pos = |id: &str| first.iter().position(|(m, _)| m == id);
    let (cal, chat) = (pos(&w.calendar).unwrap(), pos(&w.chat).unwrap());
    assert!(cal < chat, "the calendar ranks first: {first:?}");
    assert_eq!(first[chat].1.as_deref(), Some(w.calendar.as_str()));
    assert_eq!(first[cal].1, None);
    let (appr, inf) = (pos(&w.approved).unwrap(), pos(&w.inferred).unwrap());
    assert!(appr < inf, "the approved decision ranks first: {first:?}");
    assert_eq!(first[inf].1.as_deref(), Some(w.approved.as_str()));
    // The timeline keeps time order and marks the losers alike.
    let t = timeline(&w, &owner);
    let by = |id: &str| t.iter().find(|(m, _)| m == id).map(|(_, b)| b.clone());
    assert_eq!(by(&w.chat), Some(Some(w.calendar.clone())));
    assert_eq!(by(&w.inferred), Some(Some(w.approved.clone())));
    assert_eq!(by(&w.calendar), Some(None));
}

#[test]
fn a_winner_the_reader_may_not_read_contests_nothing() {
    let w = world();
    let mate = principal("u_mate", &[]);
    // The approved decision is private: the teammate sees the inferred fact uncontested.
    let found = search(&w, &mate, "which employer does Ana have");
    assert!(found.iter().all(|(m, _)| *m != w.approved), "{found:?}");
    let inf = found
        .iter()
        .find(|(m, _)| *m == w.inferred)
        .expect("the inferred fact");
    assert_eq!(inf.1, None, "no trace of the private winner");
    let t = timeline(&w, &mate);
    assert!(
        t.iter()
            .all(|(m, b)| *m != w.approved && b.as_deref() != Some(w.approved.as_str())),
        "{t:?}"
    );
    // The public conflict still resolves for it.
    assert!(
        t.contains(&(w.chat.clone(), Some(w.calendar.clone()))),
        "{t:?}"
    );
}

#[test]
fn the_profile_renders_the_winner_only() {
    let mut l = Ledger::new(PARTITIONS);
    let d = l.apply(&IntentRecord {
        timestamp: T0,
        partition: None,
        offset: None,
        intent: intent(
            A,
            "city",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(slotted("home_city", "Lives in Lisbon"))],
        ),
    });
    let lisbon = l.row(A, &d.receipt.memory_ids[0]).unwrap();
    // A second primary-user row of the slot cannot be written (the slot is held), but a row
    // of a legacy import or another rules version may hold it too: the profile shows one.
    let mut porto = lisbon.clone();
    porto.memory_id = "mem_01KDZZZZZZZZZZZZZZZZZZZZZZ".into();
    porto.content = "Lives in Porto".into();
    porto.authority = lisbon.authority - 100;
    let profile = render::profile([&porto, &lisbon], T0 + 1);
    assert_eq!(profile, "- home_city: Lives in Lisbon");
    assert_eq!(render::profile([&lisbon, &porto], T0 + 1), profile);
}

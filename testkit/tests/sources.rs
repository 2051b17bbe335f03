//! Source documents (people, conversations, calendar, screen) and the entity timeline over the
//! sources an agent names: decided like intents, folded into the sources store, joined to
//! people by exact ids and aliases, and erased with the entity or the account they belong to.

use kledger_processors::access::Principal;
use kledger_processors::sources::intent_for;
use kledger_processors::{Decision, Limits, Rules};
use kledger_schemas::*;
use kledger_state::ViewStore;
use kledger_testkit::build::{close, document, intent, plan, third_party, trigger};
use kledger_testkit::ledger::Ledger;
use kledger_topology::config::Config;
use kledger_topology::serve::api::Api;
use kledger_topology::serve::api::timeline::{TimelineAnswer, TimelineParams, entity_timeline};

const A: &str = "t_acme/user/u_maria";
const B: &str = "t_acme/user/u_bruno";
const T0: i64 = 1_767_225_600_000;
const HOUR: i64 = 3_600_000;
const PARTITIONS: i32 = 4;

/// Text that no answer may hold: what the exclusions keep back.
const SECRETS: [&str; 8] = [
    "TRANSCRIPT-SECRET",
    "NOTES-SECRET",
    "person:kim",
    "OCR-SECRET",
    "Ana Lima",
    "ana@example.com",
    "BODY-SECRET",
    "COND-SECRET",
];

struct World {
    ledger: Ledger,
    t: i64,
}

impl World {
    fn new() -> Self {
        Self {
            ledger: Ledger::new(PARTITIONS),
            t: T0 + 1_000 * HOUR,
        }
    }

    fn decide(&mut self, intent: Intent) -> Decision {
        self.t += 1_000;
        self.ledger.apply(&IntentRecord {
            timestamp: self.t,
            partition: None,
            offset: None,
            intent,
        })
    }

    /// Puts `doc` into `account` (private), committed.
    fn put(&mut self, account: &str, doc: SourceDoc) -> Decision {
        let d = self.decide(put_intent(account, doc));
        assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
        d
    }

    /// Commits `ops` in `account` for `reason`.
    fn write(
        &mut self,
        account: &str,
        action: &str,
        reason: WriteReason,
        ops: Vec<Op>,
    ) -> Decision {
        let d = self.decide(intent(account, action, reason, 0, ops));
        assert_eq!(d.outcome(), Outcome::Committed, "{action}: {:?}", d.receipt);
        d
    }

    /// The read API over the whole outbox, its sources store folded up to `sources_upto`
    /// commits (all: `None`).
    fn serve(&self, dir: &std::path::Path, config: Config, sources_upto: Option<usize>) -> Api {
        self.serve_with(dir, config, sources_upto, false)
    }

    /// [`World::serve`], with the vector index (the hashing embedder) when `vectors`.
    fn serve_with(
        &self,
        dir: &std::path::Path,
        config: Config,
        sources_upto: Option<usize>,
        vectors: bool,
    ) -> Api {
        let commits = &self.ledger.commits;
        let (views, g) =
            kledger_testkit::offline::projections(dir, commits, PARTITIONS).expect("projections");
        fold(&views, commits);
        let g = vectors.then(|| {
            let positioned = kledger_testkit::kafka::positioned(commits, |c| c.intent_partition);
            let read: Vec<(i32, i64)> =
                positioned.iter().map(|c| (c.partition, c.offset)).collect();
            let embedder = g.embedder.clone();
            kledger_topology::pipeline::project::vectors::project(
                &g,
                embedder.as_ref(),
                &positioned,
                read.into_iter(),
            )
            .expect("vectors");
            g
        });
        let sources =
            kledger_testkit::offline::sources(dir, commits, PARTITIONS).expect("sources store");
        fold(&sources, &commits[..sources_upto.unwrap_or(commits.len())]);
        let api = kledger_testkit::offline::api(dir, config, PARTITIONS, views, g).unwrap();
        kledger_testkit::offline::with_sources(api, dir, sources).unwrap()
    }
}

fn put_intent(account: &str, doc: SourceDoc) -> Intent {
    intent_for(
        account,
        SourceOp {
            doc,
            visibility: Visibility::Private,
            acl: Acl::default(),
        },
        None,
    )
}

fn fold(store: &ViewStore, commits: &[Commit]) {
    let positioned = kledger_testkit::kafka::positioned(commits, |c| c.intent_partition);
    let read: Vec<(i32, i64)> = positioned.iter().map(|c| (c.partition, c.offset)).collect();
    kledger_topology::pipeline::project::views::fold(store, &positioned, read.into_iter())
        .expect("fold");
}

fn person(id: &str, names: &[&str], emails: &[&str]) -> SourceDoc {
    SourceDoc::Person(PersonDoc {
        person_id: id.into(),
        names: names.iter().map(|s| (*s).to_owned()).collect(),
        retained_names: if id == "person:ana" {
            vec!["Ana Souza".into()]
        } else {
            Vec::new()
        },
        emails: emails.iter().map(|s| (*s).to_owned()).collect(),
    })
}

fn conversation(id: &str, start: i64, summary: &str, people: &[&str]) -> SourceDoc {
    SourceDoc::Conversation(ConversationDoc {
        conversation_id: id.into(),
        started_at: start,
        ended_at: start + HOUR / 2,
        summary: summary.into(),
        participant_ids: people.iter().map(|s| (*s).to_owned()).collect(),
        segments: vec![Segment {
            start_ms: start,
            end_ms: start + 60_000,
            speaker_id: people.first().map(|s| (*s).to_owned()),
            text: "TRANSCRIPT-SECRET: let us meet on Tuesday".into(),
        }],
    })
}

fn event(id: &str, start: i64, title: &str, people: &[&str]) -> SourceDoc {
    SourceDoc::Calendar(CalendarDoc {
        event_id: id.into(),
        start,
        end: start + HOUR,
        title: title.into(),
        attendee_ids: people.iter().map(|s| (*s).to_owned()).collect(),
        notes: Some("NOTES-SECRET: bring the contract".into()),
    })
}

fn screen(id: &str, start: i64, window: &str, people: &[&str]) -> SourceDoc {
    SourceDoc::Screen(ScreenDoc {
        span_id: id.into(),
        start,
        end: start + 10 * 60_000,
        app: "Mail".into(),
        window_title: window.into(),
        person_ids: people.iter().map(|s| (*s).to_owned()).collect(),
        ocr_text: Some("OCR-SECRET: account number 1234".into()),
    })
}

fn owner(account: &str) -> Principal {
    let mut parts = account.split('/');
    let (tenant_id, _, owner_id) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    Principal {
        tenant_id: tenant_id.into(),
        team_id: None,
        agent_id: None,
        roles: Vec::new(),
        owner_kind: OwnerKind::User,
        owner_id: owner_id.into(),
    }
}

fn timeline(api: &Api, p: &Principal, entity: &str, sources: &str) -> TimelineAnswer {
    entity_timeline(
        api,
        p,
        entity,
        &TimelineParams {
            sources: (!sources.is_empty()).then(|| sources.to_owned()),
            limit: Some(40),
            ..TimelineParams::default()
        },
    )
    .expect("timeline")
}

fn state<'a>(a: &'a TimelineAnswer, source: &str) -> (&'a str, Option<&'a str>) {
    let s = a
        .sources
        .iter()
        .find(|s| s.source == source)
        .unwrap_or_else(|| panic!("no {source} in {:?}", a.sources));
    (s.state, s.reason)
}

fn contents(a: &TimelineAnswer) -> Vec<(&str, &str)> {
    a.items
        .iter()
        .map(|i| (i.source, i.content.as_str()))
        .collect()
}

/// Maria's world: Ana (with a second name, a former name and an email), Zoe, Kim (an attendee
/// with no people document), a conversation,
/// a meeting and a mail window with Ana, one more conversation without her, and ledger rows
/// about Ana and about Maria herself.
fn marias() -> World {
    let mut w = World::new();
    w.put(
        A,
        person("person:ana", &["Ana", "Ana Lima"], &["ana@example.com"]),
    );
    w.put(A, person("person:zoe", &["Zoe"], &[]));
    w.put(
        A,
        conversation(
            "conv_1",
            T0 + HOUR,
            "Planned the Lisbon trip",
            &["person:ana"],
        ),
    );
    w.put(
        A,
        event(
            "ev_1",
            T0 + 2 * HOUR,
            "Contract review",
            &["person:ana", "person:zoe", "person:kim"],
        ),
    );
    w.put(
        A,
        screen(
            "span_1",
            T0 + 3 * HOUR,
            "Re: contract draft",
            &["person:ana"],
        ),
    );
    w.put(
        A,
        conversation("conv_2", T0 + 4 * HOUR, "Chatted with Zoe", &["person:zoe"]),
    );
    let mut fact = third_party("person:ana", "Ana prefers morning meetings");
    fact.valid_from = Some(T0 + 30 * 60_000);
    w.write(
        A,
        "a_fact",
        WriteReason::DirectUserStatement,
        vec![Op::Assert(fact)],
    );
    w.write(
        A,
        "a_doc",
        WriteReason::RecurringWorkflow,
        vec![Op::Assert(document(
            "Trip checklist",
            "BODY-SECRET: passport",
        ))],
    );
    w.write(
        A,
        "a_trigger",
        WriteReason::StandingTrigger,
        vec![Op::Assert(trigger(
            "Remind me before the flight",
            &[("when", "COND-SECRET")],
        ))],
    );
    w
}

#[test]
fn the_timeline_reads_the_sources_named_in_time_order() {
    let w = marias();
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve(dir.path(), Config::default(), None);
    let maria = owner(A);

    // The default is the ledger alone.
    let a = timeline(&api, &maria, "person:ana", "");
    assert_eq!(
        contents(&a),
        vec![("ledger", "Ana prefers morning meetings")]
    );
    assert_eq!(a.sources.len(), 1);
    let person = a.person.as_ref().unwrap();
    assert_eq!(
        (person.state, person.person_id.as_deref(), person.by),
        ("resolved", Some("person:ana"), Some("id"))
    );

    // Every source, by an exact alias: merged by time, each entry naming its source.
    let all = "ledger,conversations,calendar,screen";
    for alias in ["Ana", "Ana Lima", "Ana Souza", "ana@example.com"] {
        let a = timeline(&api, &maria, alias, all);
        let person = a.person.as_ref().unwrap();
        assert_eq!(
            (person.person_id.as_deref(), person.by),
            (Some("person:ana"), Some("alias")),
            "{alias}"
        );
        assert_eq!(
            contents(&a),
            vec![
                ("ledger", "Ana prefers morning meetings"),
                ("conversations", "Planned the Lisbon trip"),
                ("calendar", "Contract review"),
                ("screen", "Mail — Re: contract draft"),
            ],
            "{alias}"
        );
        assert!(
            a.sources.iter().all(|s| s.state == "available"),
            "{:?}",
            a.sources
        );
        let calendar = a.items.iter().find(|i| i.source == "calendar").unwrap();
        assert_eq!(
            (calendar.record_id.as_deref(), calendar.kind),
            (Some("ev_1"), Kind::CalendarEvent)
        );
        assert_eq!(
            (calendar.valid_from, calendar.valid_to),
            (T0 + 2 * HOUR, Some(T0 + 3 * HOUR))
        );
    }
    // Only the sources named are read.
    let a = timeline(&api, &maria, "person:zoe", "calendar");
    assert_eq!(contents(&a), vec![("calendar", "Contract review")]);
    assert_eq!(a.sources.len(), 1);
    // Not an alias: a case or spacing variant resolves to nobody.
    for near in ["ana", "ANA@example.com", "Ana  Lima"] {
        let a = timeline(&api, &maria, near, "conversations");
        assert_eq!(a.person.as_ref().unwrap().state, "unavailable", "{near}");
        assert!(a.items.is_empty(), "{near}");
        assert_eq!(
            state(&a, "conversations"),
            ("failed", Some("person_unavailable"))
        );
    }
}

#[test]
fn a_newer_document_replaces_the_older_one() {
    let mut w = marias();
    w.put(
        A,
        conversation(
            "conv_1",
            T0 + HOUR,
            "Planned the Lisbon trip, booked flights",
            &["person:ana"],
        ),
    );
    // The same document again is a duplicate, not a new version.
    let again = w.decide(put_intent(
        A,
        conversation(
            "conv_1",
            T0 + HOUR,
            "Planned the Lisbon trip, booked flights",
            &["person:ana"],
        ),
    ));
    assert_eq!(again.outcome(), Outcome::Duplicate);
    // Ana is dropped from the event: it leaves her timeline.
    w.put(
        A,
        event("ev_1", T0 + 2 * HOUR, "Contract review", &["person:zoe"]),
    );
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve(dir.path(), Config::default(), None);
    let a = timeline(&api, &owner(A), "person:ana", "conversations,calendar");
    assert_eq!(
        contents(&a),
        vec![("conversations", "Planned the Lisbon trip, booked flights")]
    );
    let z = timeline(&api, &owner(A), "person:zoe", "calendar");
    assert_eq!(contents(&z), vec![("calendar", "Contract review")]);
}

#[test]
fn another_owners_person_of_the_same_name_never_joins() {
    let mut w = marias();
    w.put(B, person("person:ana", &["Ana"], &["ana@example.com"]));
    w.put(
        B,
        conversation(
            "conv_b",
            T0 + 5 * HOUR,
            "Bruno's call with his Ana",
            &["person:ana"],
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve(dir.path(), Config::default(), None);
    let all = "ledger,conversations,calendar,screen";
    for entity in ["Ana", "person:ana"] {
        let a = timeline(&api, &owner(A), entity, all);
        assert!(
            !contents(&a).iter().any(|(_, c)| c.contains("Bruno")),
            "{entity}: {:?}",
            contents(&a)
        );
        let b = timeline(&api, &owner(B), entity, all);
        assert_eq!(
            contents(&b),
            vec![("conversations", "Bruno's call with his Ana")],
            "{entity}"
        );
    }
    // Maria reading Bruno's account sees none of his private documents, and learns nothing of
    // why (the reason is the owner's to know).
    let a = entity_timeline(
        &api,
        &owner(A),
        "Ana",
        &TimelineParams {
            account: Some(B.into()),
            sources: Some(all.into()),
            ..TimelineParams::default()
        },
    )
    .unwrap();
    assert!(a.items.is_empty(), "{:?}", contents(&a));
    assert_eq!(a.person.as_ref().unwrap().reason, Some("unresolved"));
}

#[test]
fn nothing_excluded_reaches_any_answer() {
    let w = marias();
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve(dir.path(), Config::default(), None);
    let maria = owner(A);
    let mut answers = Vec::new();
    for entity in [
        "user",
        "person:ana",
        "Ana",
        "ana@example.com",
        "person:zoe",
        "Zoe",
    ] {
        for sources in [
            "",
            "ledger,conversations,calendar,screen",
            "screen",
            "calendar",
        ] {
            let mut q = TimelineParams {
                sources: (!sources.is_empty()).then(|| sources.to_owned()),
                ..TimelineParams::default()
            };
            for (history, audit) in [(false, false), (true, true)] {
                (q.history, q.audit) = (history, audit);
                let a = entity_timeline(&api, &maria, entity, &q).unwrap();
                answers.push(serde_json::to_string(&a).unwrap());
            }
        }
    }
    let profile =
        kledger_topology::serve::api::read::profile_answer(&api, &maria, &Default::default())
            .unwrap();
    answers.push(serde_json::to_string(&profile).unwrap());
    for a in &answers {
        for secret in SECRETS {
            // The entity asked for is echoed back as asked; nothing else may show.
            let asked = serde_json::from_str::<serde_json::Value>(a).unwrap()["entity"]
                .as_str()
                .is_some_and(|e| e.contains(secret));
            assert!(asked || !a.contains(secret), "{secret} in {a}");
        }
    }
    // Source documents are no ledger knowledge: the profile and the playbook index hold none.
    assert!(!profile.profile.contains("Lisbon"), "{}", profile.profile);
}

#[test]
fn aliases_resolve_only_exact_unique_not_the_owners_and_from_an_exhaustive_scan() {
    let mut w = marias();
    // Maria's own people document, and another person who shares a name with her.
    w.put(
        A,
        person("u_maria", &["Maria", "Mia"], &["maria@example.com"]),
    );
    w.put(A, person("person:mia", &["Mia"], &[]));
    // Two people named Alex.
    w.put(A, person("person:alex_1", &["Alex"], &[]));
    w.put(A, person("person:alex_2", &["Alex"], &[]));
    w.put(
        A,
        conversation(
            "conv_3",
            T0 + 6 * HOUR,
            "Lunch with Alex",
            &["person:alex_1"],
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve(dir.path(), Config::default(), None);
    let maria = owner(A);
    let reason = |entity: &str| {
        let a = timeline(&api, &maria, entity, "conversations");
        let r = a.person.unwrap();
        assert!(a.items.is_empty(), "{entity}");
        (r.state, r.reason)
    };
    assert_eq!(reason("Mia"), ("unavailable", Some("alias_is_owner")));
    assert_eq!(
        reason("u_maria"),
        ("resolved", None),
        "the owner's own id joins"
    );
    assert_eq!(reason("Alex"), ("unavailable", Some("alias_ambiguous")));
    assert_eq!(reason("Nobody"), ("unavailable", Some("unknown_person")));
    // The id joins whatever the aliases do.
    let a = timeline(&api, &maria, "person:alex_1", "conversations");
    assert_eq!(contents(&a), vec![("conversations", "Lunch with Alex")]);

    // More people than one scan reads: aliases fail closed, ids still join.
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config::default();
    c.sources.people_scan_max = 2;
    let api = w.serve(dir.path(), c, None);
    let a = timeline(&api, &maria, "Ana", "conversations");
    assert_eq!(
        a.person.as_ref().map(|r| (r.state, r.reason)),
        Some(("unavailable", Some("people_scan_not_exhaustive")))
    );
    assert!(a.items.is_empty());
    let a = timeline(&api, &maria, "person:ana", "conversations");
    assert_eq!(
        contents(&a),
        vec![("conversations", "Planned the Lisbon trip")]
    );
}

#[test]
fn each_source_reports_its_state_and_none_holds_the_others() {
    let w = marias();
    let maria = owner(A);
    let all = "ledger,conversations,calendar,screen";
    // The sources store held back behind the view store: its sources answer `loading`, the
    // ledger answers in full.
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve(dir.path(), Config::default(), Some(3));
    let a = timeline(&api, &maria, "person:ana", all);
    assert_eq!(state(&a, "ledger"), ("available", None));
    for s in ["conversations", "calendar", "screen"] {
        assert_eq!(state(&a, s), ("loading", Some("not_caught_up")), "{s}");
    }
    assert!(contents(&a).contains(&("ledger", "Ana prefers morning meetings")));

    // No sources store in this process: `offline`, the ledger still answers.
    let dir = tempfile::tempdir().unwrap();
    let (views, _) =
        kledger_testkit::offline::projections(dir.path(), &w.ledger.commits, PARTITIONS).unwrap();
    fold(&views, &w.ledger.commits);
    let api = kledger_testkit::offline::api(dir.path(), Config::default(), PARTITIONS, views, None)
        .unwrap();
    let a = timeline(&api, &maria, "person:ana", all);
    assert_eq!(state(&a, "ledger"), ("available", None));
    assert_eq!(state(&a, "screen"), ("offline", Some("no_store")));
    assert_eq!(
        contents(&a),
        vec![("ledger", "Ana prefers morning meetings")]
    );

    // Past a source's retention: `pruned`; the entries within it are shown.
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config::default();
    c.sources.calendar_retention_days = 1;
    let api = w.serve(dir.path(), c, None);
    let a = timeline(&api, &maria, "person:ana", all);
    assert_eq!(state(&a, "calendar"), ("pruned", Some("retention")));
    assert_eq!(state(&a, "conversations"), ("available", None));
    assert!(!contents(&a).iter().any(|(s, _)| *s == "calendar"));

    // The limit cuts the oldest entries: the sources they came from say `truncated`.
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve(dir.path(), Config::default(), None);
    let a = entity_timeline(
        &api,
        &maria,
        "person:ana",
        &TimelineParams {
            sources: Some(all.into()),
            limit: Some(2),
            ..TimelineParams::default()
        },
    )
    .unwrap();
    assert!(a.truncated);
    assert_eq!(
        contents(&a),
        vec![
            ("calendar", "Contract review"),
            ("screen", "Mail — Re: contract draft")
        ]
    );
    assert_eq!(state(&a, "ledger"), ("truncated", Some("limit")));
    assert_eq!(state(&a, "conversations"), ("truncated", Some("limit")));
    assert_eq!(state(&a, "screen"), ("available", None));
    // A bad source name is refused.
    let bad = entity_timeline(
        &api,
        &maria,
        "person:ana",
        &TimelineParams {
            sources: Some("ledger,email".into()),
            ..TimelineParams::default()
        },
    );
    assert_eq!(bad.unwrap_err().code(), "bad_sources");
}

fn purge_op(entity: Option<&str>) -> Op {
    Op::Purge(PurgeOp {
        target: None,
        entity_id: entity.map(str::to_owned),
        whole_account: entity.is_none(),
        reason: "erasure request".into(),
    })
}

#[test]
fn a_purge_of_the_entity_or_the_account_reaches_every_source() {
    for entity in [Some("person:ana"), None] {
        let mut w = marias();
        let d = w.write(
            A,
            "purge",
            WriteReason::DirectUserStatement,
            vec![purge_op(entity)],
        );
        let tombstoned: Vec<Kind> = d
            .commits
            .iter()
            .flat_map(|c| c.ops.iter())
            .map(|o| o.row.kind)
            .collect();
        for kind in [
            Kind::Person,
            Kind::Conversation,
            Kind::CalendarEvent,
            Kind::ScreenSpan,
            Kind::Fact,
        ] {
            assert!(tombstoned.contains(&kind), "{entity:?}: {kind} not purged");
        }
        if entity.is_some() {
            // Zoe's own conversation and person are hers, not Ana's.
            let zoe = d
                .commits
                .iter()
                .flat_map(|c| c.ops.iter())
                .filter(|o| o.row.kind == Kind::Person)
                .count();
            assert_eq!(zoe, 1, "only Ana's people document");
        }
        let dir = tempfile::tempdir().unwrap();
        let api = w.serve(dir.path(), Config::default(), None);
        let a = timeline(
            &api,
            &owner(A),
            "person:ana",
            "ledger,conversations,calendar,screen",
        );
        assert!(a.items.is_empty(), "{entity:?}: {:?}", contents(&a));
        assert_eq!(a.person.as_ref().unwrap().state, "unavailable");
        let a = timeline(&api, &owner(A), "Ana", "conversations");
        assert!(a.items.is_empty());
        // Every version of every purged source row is gone from the ledger's state: the rows
        // left are tombstones without content.
        let mut seen = 0;
        for row in w.ledger.rows(A) {
            let joined = row
                .record
                .as_ref()
                .is_some_and(|r| r.person_ids.iter().any(|p| p == "person:ana"))
                || row.subject.entity_id.as_deref() == Some("person:ana");
            if joined || entity.is_none() {
                seen += 1;
                assert_eq!(row.status, Status::Tombstoned, "{}", row.memory_id);
                assert!(row.record.as_ref().is_none_or(|r| r.doc.is_none()));
                assert!(row.content.is_empty());
            }
        }
        // Ana's people document, conversation, event, span and fact at least.
        assert!(seen >= 5, "{entity:?}: {seen} rows checked");
    }
}

#[test]
fn bad_documents_answer_stable_codes() {
    let mut w = marias();
    let conv = w
        .ledger
        .rows(A)
        .into_iter()
        .find(|r| r.kind == Kind::Conversation && r.status == Status::Active)
        .unwrap();
    let mut rejected = |intent: Intent| -> String {
        let d = w.decide(intent);
        assert_eq!(d.outcome(), Outcome::Rejected, "{:?}", d.receipt);
        d.receipt.code.clone().unwrap_or_default()
    };
    let empty = conversation("conv_x", T0, "", &["person:ana"]);
    assert_eq!(rejected(put_intent(A, empty)), "bad_source_doc");
    let SourceDoc::Conversation(mut backwards) = conversation("conv_x", T0, "s", &[]) else {
        unreachable!()
    };
    backwards.ended_at = T0 - 1;
    assert_eq!(
        rejected(put_intent(A, SourceDoc::Conversation(backwards))),
        "bad_validity"
    );
    let SourceDoc::Conversation(mut long) = conversation("conv_x", T0, "s", &[]) else {
        unreachable!()
    };
    long.segments = vec![long.segments[0].clone(); SEGMENTS_MAX + 1];
    assert_eq!(
        rejected(put_intent(A, SourceDoc::Conversation(long))),
        "bad_source_doc"
    );
    let spaced = person("person ana", &["Ana"], &[]);
    assert_eq!(rejected(put_intent(A, spaced)), "bad_source_doc");
    let names = person("person:x", &["A"; NAMES_MAX + 1], &[]);
    assert_eq!(rejected(put_intent(A, names)), "bad_source_doc");
    let hidden = screen("span_x", T0, "bad\u{202e}title", &[]);
    assert_eq!(rejected(put_intent(A, hidden)), "hidden_chars");
    // A source op goes alone, with `source_sync`.
    let mut mixed = put_intent(A, person("person:y", &["Y"], &[]));
    mixed
        .ops
        .push(Op::Assert(third_party("person:y", "Y likes tea")));
    assert_eq!(rejected(mixed), "source_mixed");
    let mut reason = put_intent(A, person("person:y", &["Y"], &[]));
    reason.write_reason = WriteReason::DirectUserStatement;
    assert_eq!(rejected(reason), "source_mixed");
    // Source rows are written by the source op only, and changed by newer documents only.
    let mut forged = third_party("person:y", "forged");
    forged.kind = Kind::Person;
    assert_eq!(
        rejected(intent(
            A,
            "forge",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(forged)]
        )),
        "source_kind_reserved"
    );
    let mut closing = intent(
        A,
        "close_conv",
        WriteReason::DirectUserStatement,
        0,
        vec![close(&conv, "done")],
    );
    plan(&mut closing, &conv);
    assert_eq!(rejected(closing), "source_kind_reserved");

    // A ledger decided under rules v3 takes no source documents (they are sealed).
    let mut old = Ledger::with_limits(
        PARTITIONS,
        Limits {
            rules: Rules::V3,
            ..Limits::default()
        },
    );
    let d = old.apply(&IntentRecord {
        timestamp: T0,
        partition: None,
        offset: None,
        intent: put_intent(A, person("person:ana", &["Ana"], &[])),
    });
    assert_eq!(d.receipt.code.as_deref(), Some("source_unsupported"));
}

#[test]
fn replay_and_rebuild_are_exact() {
    let w = marias();
    // Re-deciding the same records gives the same commits, byte for byte.
    let mut again = Ledger::new(PARTITIONS);
    for r in &w.ledger.records {
        again.apply(r);
    }
    assert_eq!(again.commits.len(), w.ledger.commits.len());
    for (a, b) in again.commits.iter().zip(&w.ledger.commits) {
        assert_eq!(a.head_hash, b.head_hash);
        assert_eq!(
            kledger_testkit::kafka::comparable(a),
            kledger_testkit::kafka::comparable(b)
        );
    }
    // Folded in one batch or one commit at a time, the sources store is the same.
    let whole = tempfile::tempdir().unwrap();
    let one =
        kledger_testkit::offline::sources(whole.path(), &w.ledger.commits, PARTITIONS).unwrap();
    fold(&one, &w.ledger.commits);
    let split = tempfile::tempdir().unwrap();
    let two =
        kledger_testkit::offline::sources(split.path(), &w.ledger.commits, PARTITIONS).unwrap();
    let positioned = kledger_testkit::kafka::positioned(&w.ledger.commits, |c| c.intent_partition);
    for c in positioned.chunks(1) {
        let read: Vec<(i32, i64)> = c.iter().map(|c| (c.partition, c.offset)).collect();
        kledger_topology::pipeline::project::views::fold(&two, c, read.into_iter()).unwrap();
    }
    assert_eq!(one.digest().unwrap(), two.digest().unwrap());
    // The ledger's view store holds no source row, the sources store no ledger row.
    let views = tempfile::tempdir().unwrap();
    let (v, _) =
        kledger_testkit::offline::projections(views.path(), &w.ledger.commits, PARTITIONS).unwrap();
    fold(&v, &w.ledger.commits);
    assert!(
        v.rows(A, 1_000)
            .unwrap()
            .iter()
            .all(|r| SourceKind::of(r.kind).is_none())
    );
    assert!(
        one.rows(A, 1_000)
            .unwrap()
            .iter()
            .all(|r| SourceKind::of(r.kind).is_some())
    );
    assert_eq!(one.rows(A, 1_000).unwrap().len(), 6);
}

#[test]
fn one_entity_per_person_aliases_resolve_at_ingest() {
    let mut w = marias();
    w.put(A, person("u_maria", &["Maria", "Mia"], &[]));
    w.put(A, person("person:alex_1", &["Alex"], &[]));
    w.put(A, person("person:alex_2", &["Alex"], &[]));
    let mut entity_of = |who: &str| -> Result<String, String> {
        let d = w.decide(intent(
            A,
            &format!("about-{who}"),
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(third_party(who, "Works at Acme"))],
        ));
        match d.outcome() {
            Outcome::Committed => Ok(d.commits[0].ops[0]
                .row
                .subject
                .entity_id
                .clone()
                .unwrap_or_default()),
            _ => Err(d.receipt.code.clone().unwrap_or_default()),
        }
    };
    // A person id stays; an exact alias becomes the person's id.
    assert_eq!(entity_of("person:ana"), Ok("person:ana".into()));
    assert_eq!(entity_of("Ana"), Ok("person:ana".into()));
    assert_eq!(entity_of("Ana Souza"), Ok("person:ana".into()));
    assert_eq!(entity_of("ana@example.com"), Ok("person:ana".into()));
    // Refused: an alias of several, of the owner, a name or email nobody holds.
    assert_eq!(entity_of("Alex"), Err("alias_ambiguous".into()));
    assert_eq!(entity_of("Mia"), Err("alias_is_owner".into()));
    assert_eq!(entity_of("Nobody Here"), Err("unknown_person".into()));
    assert_eq!(entity_of("Bob"), Err("unknown_person".into()));
    assert_eq!(entity_of("bob@example.com"), Err("unknown_person".into()));
    // Entity ids with a kind stay, people documents or not.
    assert_eq!(entity_of("org:acme"), Ok("org:acme".into()));
    assert_eq!(entity_of("person_kim"), Ok("person_kim".into()));
    // What was written by alias is on the person's timeline.
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve(dir.path(), Config::default(), None);
    let a = timeline(&api, &owner(A), "person:ana", "ledger");
    assert_eq!(
        a.items
            .iter()
            .filter(|i| i.content == "Works at Acme")
            .count(),
        4
    );

    // A ledger decided under rules v4 keeps deciding as before: the name is the entity.
    let mut old = Ledger::with_limits(
        PARTITIONS,
        Limits {
            rules: Rules::V4,
            ..Limits::default()
        },
    );
    old.apply(&IntentRecord {
        timestamp: T0,
        partition: None,
        offset: None,
        intent: put_intent(A, person("person:ana", &["Ana"], &[])),
    });
    let d = old.apply(&IntentRecord {
        timestamp: T0 + 1,
        partition: None,
        offset: None,
        intent: intent(
            A,
            "v4-fact",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(third_party("Ana", "Works at Acme"))],
        ),
    });
    assert_eq!(d.outcome(), Outcome::Committed);
    assert_eq!(
        d.commits[0].ops[0].row.subject.entity_id.as_deref(),
        Some("Ana")
    );
}

fn long_conversation(
    id: &str,
    start: i64,
    summary: &str,
    people: &[&str],
    word: &str,
) -> SourceDoc {
    SourceDoc::Conversation(ConversationDoc {
        conversation_id: id.into(),
        started_at: start,
        ended_at: start + HOUR,
        summary: summary.into(),
        participant_ids: people.iter().map(|s| (*s).to_owned()).collect(),
        segments: (0..40)
            .map(|i| Segment {
                start_ms: start + i * 60_000,
                end_ms: start + i * 60_000 + 30_000,
                speaker_id: None,
                text: if i % 4 == 0 {
                    format!("line {i}: the {word} again")
                } else {
                    format!("line {i}: small talk")
                },
            })
            .collect(),
    })
}

#[test]
fn bounded_conversation_retrieval_is_off_by_default_and_never_hydrates_more() {
    use kledger_topology::serve::api::conversations::{ConversationQuery, search_conversations};
    let mut w = marias();
    let day = T0 + 48 * HOUR;
    w.put(
        A,
        long_conversation(
            "conv_long",
            day + 9 * HOUR,
            "Quarterly budget planning with Ana",
            &["person:ana"],
            "budget",
        ),
    );
    w.put(
        B,
        long_conversation("conv_b", day, "Bruno's budget review", &[], "budget"),
    );
    let maria = owner(A);
    let ask = |api: &Api, q: ConversationQuery| search_conversations(api, &maria, &q);
    let query = |q: &str| ConversationQuery {
        query: q.into(),
        ..ConversationQuery::default()
    };

    // Off by default.
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve_with(dir.path(), Config::default(), None, true);
    assert_eq!(
        ask(&api, query("budget")).unwrap_err().code(),
        "conversation_retrieval_off"
    );

    let mut c = Config::default();
    c.retrieval.conversations.enabled = true;
    c.retrieval.conversations.semantic_min_score = 2.0; // literal triage alone, first
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve_with(dir.path(), c.clone(), None, true);
    let bounded = |a: &kledger_topology::serve::api::conversations::ConversationAnswer| {
        for h in &a.conversations {
            let max = if h.hydrated == "snippets" { 3 } else { 24 };
            assert!(
                h.segments.len() <= max,
                "{} {}",
                h.hydrated,
                h.segments.len()
            );
            assert!(
                h.conversation_id != "conv_b",
                "another owner's conversation"
            );
        }
    };
    // Literal: three matched snippets of the ten that hold the word.
    let a = ask(&api, query("budget")).unwrap();
    bounded(&a);
    assert_eq!(a.result, "found");
    let hit = &a.conversations[0];
    assert_eq!(
        (
            hit.conversation_id.as_str(),
            hit.hydrated,
            hit.segments.len()
        ),
        ("conv_long", "snippets", 3)
    );
    assert!(hit.segments.iter().all(|s| s.text.contains("budget")));
    assert_eq!(hit.matched_by, ["literal"]);
    // A person and a day alone: that day's conversations with her, the first 24 segments.
    let a = ask(
        &api,
        ConversationQuery {
            entity: Some("Ana".into()),
            date: Some("2026-01-03".into()),
            ..ConversationQuery::default()
        },
    )
    .unwrap();
    bounded(&a);
    assert_eq!(
        a.conversations.len(),
        1,
        "{:?}",
        a.conversations
            .iter()
            .map(|h| &h.conversation_id)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        (
            a.conversations[0].hydrated,
            a.conversations[0].segments.len()
        ),
        ("segments", 24)
    );
    assert_eq!(a.conversations[0].matched_by, ["entity", "date"]);
    // Nothing as asked: one reformulation, then an answer.
    let a = ask(&api, query("Trips?")).unwrap();
    assert_eq!(a.reformulated.as_deref(), Some("trip"));
    assert_eq!(a.conversations[0].summary, "Planned the Lisbon trip");
    let a = ask(&api, query("What about zebras?")).unwrap();
    assert_eq!(
        (a.result, a.reformulated.as_deref()),
        ("no_result", Some("zebra"))
    );
    // Policy: another principal of the tenant reads none of Maria's private conversations.
    let bruno = owner(B);
    let a = search_conversations(
        &api,
        &bruno,
        &ConversationQuery {
            account: Some(A.into()),
            ..query("budget")
        },
    )
    .unwrap();
    assert_eq!(a.result, "no_result");
    // Semantic: the summaries' vectors (the hashing embedder's), no literal term needed.
    c.retrieval.conversations.semantic_min_score = -1.0;
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve_with(dir.path(), c, None, true);
    let a = ask(&api, query("quarterly planning")).unwrap();
    bounded(&a);
    assert!(a.semantic);
    assert!(
        a.conversations
            .iter()
            .any(|h| h.matched_by.contains(&"semantic")),
        "{:?}",
        a.conversations
            .iter()
            .map(|h| &h.matched_by)
            .collect::<Vec<_>>()
    );
    // search_knowledge never returns a conversation.
    let found = kledger_topology::serve::api::search::search_knowledge(
        &api,
        &maria,
        kledger_topology::serve::api::search::SearchRequest {
            query: "budget planning Lisbon trip".into(),
            limit: Some(20),
            kinds: Vec::new(),
            account: None,
            as_of: None,
            known_at: None,
            min_commit_seq: None,
            wait_ms: None,
        },
    )
    .unwrap();
    assert!(
        found
            .results
            .iter()
            .all(|r| SourceKind::of(r.kind).is_none())
    );
}

#[test]
fn a_document_changed_back_is_a_new_version_when_its_source_says_so() {
    let mut w = marias();
    let v = |n: &str, summary: &str| {
        intent_for(
            A,
            SourceOp {
                doc: conversation("conv_1", T0 + HOUR, summary, &["person:ana"]),
                visibility: Visibility::Private,
                acl: Acl::default(),
            },
            Some(n),
        )
    };
    for (version, summary) in [
        ("3", "Cancelled the trip"),
        ("4", "Planned the Lisbon trip"),
    ] {
        let d = w.decide(v(version, summary));
        assert_eq!(
            d.outcome(),
            Outcome::Committed,
            "{version}: {:?}",
            d.receipt
        );
    }
    // The same version again is a duplicate.
    assert_eq!(
        w.decide(v("4", "Planned the Lisbon trip")).outcome(),
        Outcome::Duplicate
    );
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve(dir.path(), Config::default(), None);
    let a = timeline(&api, &owner(A), "person:ana", "conversations");
    assert_eq!(
        contents(&a),
        vec![("conversations", "Planned the Lisbon trip")]
    );
    // Without a version, the content decides: the change back is taken for a retry.
    let mut w = marias();
    w.put(
        A,
        conversation("conv_1", T0 + HOUR, "Cancelled the trip", &["person:ana"]),
    );
    let back = w.decide(put_intent(
        A,
        conversation(
            "conv_1",
            T0 + HOUR,
            "Planned the Lisbon trip",
            &["person:ana"],
        ),
    ));
    assert_eq!(back.outcome(), Outcome::Duplicate);
}

#[test]
fn another_principal_joins_by_person_id_only_what_it_may_read() {
    let mut w = World::new();
    let shared = |doc: SourceDoc| {
        intent_for(
            A,
            SourceOp {
                doc,
                visibility: Visibility::Confidential,
                acl: Acl {
                    read_team_ids: vec!["team_x".into()],
                    ..Acl::default()
                },
            },
            None,
        )
    };
    for doc in [
        person("person:ana", &["Ana"], &[]),
        conversation(
            "conv_1",
            T0 + HOUR,
            "Planned the Lisbon trip",
            &["person:ana"],
        ),
    ] {
        let d = w.decide(shared(doc));
        assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
    }
    // A private conversation with her and a private people document of another Ana.
    w.put(
        A,
        conversation("conv_2", T0 + 2 * HOUR, "Private call", &["person:ana"]),
    );
    w.put(A, person("person:ana_2", &["Ana"], &[]));
    let dir = tempfile::tempdir().unwrap();
    let api = w.serve(dir.path(), Config::default(), None);
    let teammate = Principal {
        team_id: Some("team_x".into()),
        ..owner(B)
    };
    let q = |entity: &str| {
        entity_timeline(
            &api,
            &teammate,
            entity,
            &TimelineParams {
                account: Some(A.into()),
                sources: Some("conversations".into()),
                ..TimelineParams::default()
            },
        )
        .unwrap()
    };
    // The id joins the document it may read, and only the conversation it may read.
    let a = q("person:ana");
    assert_eq!(a.person.as_ref().unwrap().by, Some("id"));
    assert_eq!(
        contents(&a),
        vec![("conversations", "Planned the Lisbon trip")]
    );
    // An alias is the owner's to resolve (it would read documents the teammate may not).
    let a = q("Ana");
    assert_eq!(a.person.as_ref().unwrap().reason, Some("unresolved"));
    assert!(a.items.is_empty());
    // The owner sees the collision the teammate may not.
    let a = timeline(&api, &owner(A), "Ana", "conversations");
    assert_eq!(a.person.as_ref().unwrap().reason, Some("alias_ambiguous"));
}

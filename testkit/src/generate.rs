//! Seeded generators of realistic intent streams.
//!
//! A [`Generator`] simulates extractors working on many accounts. It keeps the truth in a
//! [`Model`] and plans each intent against either the current state or an older snapshot (a
//! concurrent extractor that has not seen the latest commits), so streams contain rebases,
//! stale targets, slot conflicts, retries of the same action (duplicates and reused ids),
//! purges, and invalid intents from the [`invalid`] catalogue. The same seed
//! and config always give the same stream.

use std::collections::{BTreeMap, VecDeque};

use kledger_schemas::*;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::build::{self, document, evidence, fact, intent, slotted, third_party, trigger};
use crate::invalid;
use crate::model::Model;

/// Knobs of a stream (percentages of intents).
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// Seed: the same seed gives the same stream.
    pub seed: u64,
    /// Number of accounts.
    pub accounts: usize,
    /// First record timestamp (ms).
    pub start_ms: i64,
    /// Plan against an older snapshot.
    pub stale_pct: u32,
    /// Re-send an earlier intent (same action id).
    pub retry_pct: u32,
    /// Send an invalid intent.
    pub invalid_pct: u32,
    /// Send a purge.
    pub purge_pct: u32,
    /// Assert a slotted fact without targeting the occupant.
    pub conflict_pct: u32,
    /// Plan with the strict head policy.
    pub strict_pct: u32,
    /// Put a source document (people, conversation, calendar, screen).
    pub source_pct: u32,
}

impl Default for GenConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            accounts: 20,
            start_ms: 1_767_225_600_000, // 2026-01-01
            stale_pct: 15,
            retry_pct: 5,
            invalid_pct: 5,
            purge_pct: 2,
            conflict_pct: 5,
            strict_pct: 10,
            source_pct: 0,
        }
    }
}

impl GenConfig {
    /// Only valid, fresh, non-conflicting intents (every one commits).
    pub fn clean(seed: u64, accounts: usize) -> Self {
        Self {
            seed,
            accounts,
            stale_pct: 0,
            retry_pct: 0,
            invalid_pct: 0,
            purge_pct: 0,
            conflict_pct: 0,
            strict_pct: 0,
            ..Self::default()
        }
    }
}

const CITIES: &[&str] = &[
    "Berlin", "Lisbon", "Kyiv", "Osaka", "Austin", "Nairobi", "Lima", "Oslo",
];
const EMPLOYERS: &[&str] = &["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay"];
const FOCUS: &[&str] = &[
    "the Q3 launch",
    "learning Rust",
    "marathon training",
    "the house move",
];
const DIETS: &[&str] = &["vegetarian", "no shellfish", "keto", "halal"];
const LIKES: &[&str] = &[
    "spicy food",
    "jazz",
    "early meetings",
    "long walks",
    "board games",
];
const PEOPLE: &[&str] = &["person_anna", "person_bo", "person_chen", "person_dara"];
const SOURCES: &[&str] = &[
    "chat_message",
    "email",
    "meeting_notes",
    "system_of_record",
    "approved_decision",
    "chat_suggestion",
];
const FACT_REASONS: &[WriteReason] = &[
    WriteReason::DirectUserStatement,
    WriteReason::DirectUserStatement,
    WriteReason::ExplicitRemember,
    WriteReason::Onboarding,
    WriteReason::AgentReusableConclusion,
    WriteReason::AgentReusableConclusion,
    WriteReason::DailyReconciliation,
    WriteReason::LegacyMigration,
];

fn is_source(row: &Row) -> bool {
    SourceKind::of(row.kind).is_some()
}

#[derive(Debug, Clone)]
struct Snapshot {
    seq: i64,
    rows: Vec<Row>,
}

/// A seeded stream of intent records (an endless iterator).
#[derive(Debug)]
pub struct Generator {
    cfg: GenConfig,
    rng: ChaCha8Rng,
    truth: Model,
    accounts: Vec<String>,
    history: BTreeMap<String, VecDeque<Snapshot>>,
    sent: VecDeque<IntentRecord>,
    time: i64,
    n: u64,
}

const HISTORY_MAX: usize = 4;
const SENT_MAX: usize = 64;

impl Generator {
    /// A generator for `cfg`.
    pub fn new(cfg: GenConfig) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let tenants = ["t_acme", "t_globex", "t_daarion"];
        let accounts = (0..cfg.accounts.max(1))
            .map(|i| match i % 10 {
                9 => format!("{}/agent/agt_bot{i}", tenants[i % 3]),
                _ => format!("{}/user/u_{i}", tenants[i % 3]),
            })
            .collect();
        let time = cfg.start_ms;
        Self {
            cfg,
            rng,
            truth: Model::new(),
            accounts,
            history: BTreeMap::new(),
            sent: VecDeque::new(),
            time,
            n: 0,
        }
    }

    /// The accounts the stream writes to.
    pub fn accounts(&self) -> &[String] {
        &self.accounts
    }

    fn pct(&mut self, p: u32) -> bool {
        self.rng.random_range(0..100) < p
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        items.choose(&mut self.rng).unwrap_or(&items[0])
    }

    fn plan_view(&mut self, account: &str) -> Snapshot {
        let current = Snapshot {
            seq: self.truth.head_seq(account),
            rows: self.truth.rows(account).to_vec(),
        };
        let stale = self.pct(self.cfg.stale_pct);
        match self.history.get(account) {
            Some(h) if stale && !h.is_empty() => {
                let i = self.rng.random_range(0..h.len());
                h[i].clone()
            }
            _ => current,
        }
    }

    fn random_fact(&mut self) -> (AssertOp, WriteReason) {
        let reason = *self.pick(FACT_REASONS);
        let mut op = match self.rng.random_range(0..10) {
            0..=4 => {
                let (slot, content) = match self.rng.random_range(0..6) {
                    0 => ("home_city", format!("Lives in {}", self.pick(CITIES))),
                    1 => ("city", format!("Lives in {}", self.pick(CITIES))),
                    2 => ("employer", format!("Works at {}", self.pick(EMPLOYERS))),
                    3 => ("current_focus", format!("Focused on {}", self.pick(FOCUS))),
                    4 => ("dietary_preferences", format!("Eats {}", self.pick(DIETS))),
                    _ => (
                        "age_years",
                        format!("Is {} years old", self.rng.random_range(18..90)),
                    ),
                };
                slotted(slot, &content)
            }
            5..=7 => fact(&format!("Likes {}", self.pick(LIKES))),
            _ => {
                let mut who = (*self.pick(PEOPLE)).to_owned();
                // With source documents in the stream, some facts name people by an alias
                // (rules v5 resolve it, or refuse it: unknown, ambiguous, the owner's).
                if self.cfg.source_pct > 0 && self.pct(30) {
                    let name = who.trim_start_matches("person_").to_owned();
                    who = match self.rng.random_range(0..5) {
                        0 => name,
                        1 => format!("{name}@example.com"),
                        2 => "sam".into(),
                        3 => "me".into(),
                        _ => "Someone New".into(),
                    };
                }
                third_party(&who, &format!("{who} works at {}", self.pick(EMPLOYERS)))
            }
        };
        self.decorate(&mut op);
        (op, reason)
    }

    fn decorate(&mut self, op: &mut AssertOp) {
        op.curation_weight = self.rng.random_range(-100..=100);
        op.assertion_class = *self.pick(AssertionClass::ALL);
        op.visibility = *self.pick(Visibility::ALL);
        if self.pct(10) {
            op.sensitivity.level = *self.pick(SensitivityLevel::ALL);
        }
        if self.pct(30) {
            op.confidence = Some(f64::from(self.rng.random_range(0..=100u32)) / 100.0);
        }
        if self.pct(10) {
            op.valid_from = Some(self.time + self.rng.random_range(-86_400_000..2_592_000_000i64));
        }
        if self.pct(10) {
            let from = op.valid_from.unwrap_or(self.time);
            op.valid_to = Some(from + self.rng.random_range(0..5_000_000i64));
        }
        if self.pct(5) {
            let from = op.valid_from.unwrap_or(self.time);
            op.expires_at = Some(from + self.rng.random_range(0..50_000_000i64));
        }
        if self.pct(40) {
            let m = format!("m{}", self.n);
            let quote = if self.pct(50) {
                Some("the user said so")
            } else {
                None
            };
            op.evidence.push(evidence(&m, quote));
        }
        if self.pct(10) {
            op.acl.read_team_ids.push("team_core".into());
            op.tags.push("profile".into());
        }
        if self.pct(5) {
            op.embedding = Some(Embedding {
                model: "test-8".into(),
                vector: (0..8).map(|i| i as f32 / 8.0).collect(),
            });
        }
    }

    fn active(view: &Snapshot, pred: impl Fn(&Row) -> bool) -> Vec<&Row> {
        view.rows
            .iter()
            .filter(|r| r.status == Status::Active && pred(r))
            .collect()
    }

    /// A source document about the stream's people, from a small pool of ids (so newer
    /// versions replace older ones).
    fn random_source(&mut self, account: &str) -> SourceDoc {
        let id = self.rng.random_range(0..4);
        let start = self.time - self.rng.random_range(0..86_400_000i64);
        let people: Vec<String> = PEOPLE
            .iter()
            .filter(|_| self.rng.random_bool(0.4))
            .map(|p| (*p).to_owned())
            .collect();
        match self.rng.random_range(0..4) {
            0 => {
                // The owner's own people document now and then (its names are the owner's).
                let owner = account.rsplit('/').next().unwrap_or_default();
                let p = if self.pct(15) {
                    owner
                } else {
                    *self.pick(PEOPLE)
                };
                let name = p.trim_start_matches("person_");
                SourceDoc::Person(PersonDoc {
                    person_id: p.to_owned(),
                    names: vec![if p == owner {
                        "me".into()
                    } else {
                        name.to_owned()
                    }],
                    retained_names: if self.pct(40) {
                        vec!["sam".into()]
                    } else {
                        Vec::new()
                    },
                    emails: vec![format!("{name}@example.com")],
                })
            }
            1 => SourceDoc::Conversation(ConversationDoc {
                conversation_id: format!("conv_{id}"),
                started_at: start,
                ended_at: start + 600_000,
                summary: format!("Talked about {}", self.pick(FOCUS)),
                participant_ids: people,
                segments: vec![Segment {
                    start_ms: start,
                    end_ms: start + 60_000,
                    speaker_id: None,
                    text: format!("We should look at {}", self.pick(LIKES)),
                }],
            }),
            2 => SourceDoc::Calendar(CalendarDoc {
                event_id: format!("ev_{id}"),
                start,
                end: start + 3_600_000,
                title: format!("Meeting about {}", self.pick(FOCUS)),
                attendee_ids: people,
                notes: Some("Bring the numbers".into()),
            }),
            _ => SourceDoc::Screen(ScreenDoc {
                span_id: format!("span_{id}"),
                start,
                end: start + 300_000,
                app: "Mail".into(),
                window_title: format!("Re: {}", self.pick(FOCUS)),
                person_ids: people,
                ocr_text: None,
            }),
        }
    }

    // Long on purpose: one match over every action the generator draws, each arm a few lines.
    fn fresh(&mut self, account: &str, action: String) -> Intent {
        if self.pct(self.cfg.source_pct) {
            let op = SourceOp {
                doc: self.random_source(account),
                visibility: Visibility::Private,
                acl: Acl::default(),
            };
            let mut it = kledger_processors::sources::intent_for(account, op, None);
            it.action_id = action;
            return it;
        }
        let view = self.plan_view(account);
        let roll = self.rng.random_range(0..100);
        let mut targets: Vec<Row> = Vec::new();
        let (ops, reason) = if roll < self.cfg.purge_pct {
            let op = match self.rng.random_range(0..10) {
                0 => PurgeOp {
                    whole_account: true,
                    reason: "user request".into(),
                    ..PurgeOp::default()
                },
                1..=3 => PurgeOp {
                    entity_id: Some((*self.pick(PEOPLE)).to_owned()),
                    ..PurgeOp::default()
                },
                _ => match view.rows.last() {
                    Some(r) => PurgeOp {
                        target: Some(r.memory_id.clone()),
                        ..PurgeOp::default()
                    },
                    None => PurgeOp {
                        entity_id: Some("person_anna".into()),
                        ..PurgeOp::default()
                    },
                },
            };
            (vec![Op::Purge(op)], WriteReason::DirectUserStatement)
        } else if roll < 40 {
            let (mut op, reason) = self.random_fact();
            let occupant = op
                .slot
                .as_deref()
                .and_then(kledger_processors::slots::canonical)
                .and_then(|slot| {
                    Self::active(&view, |r| {
                        r.kind == Kind::Fact
                            && r.subject.scope == SubjectScope::PrimaryUser
                            && r.slot.as_deref() == Some(slot)
                    })
                    .first()
                    .map(|r| (*r).clone())
                });
            match occupant {
                Some(old) if !self.pct(self.cfg.conflict_pct) => {
                    op.subject = old.subject.clone();
                    targets.push(old.clone());
                    (vec![build::amend(&[&old], op)], reason)
                }
                _ => (vec![Op::Assert(op)], reason),
            }
        } else if roll < 50 {
            let facts = Self::active(&view, |r| r.kind == Kind::Fact);
            match facts.is_empty() {
                true => (
                    vec![Op::Assert(self.random_fact().0)],
                    WriteReason::AgentReusableConclusion,
                ),
                false => {
                    let old = (*self.pick(&facts)).clone();
                    let mut rep = old.clone();
                    rep.content = format!("{} (updated)", old.content);
                    let mut op = fact(&rep.content);
                    op.slot = old.slot.clone();
                    op.subject = old.subject.clone();
                    self.decorate(&mut op);
                    targets.push(old.clone());
                    (vec![build::amend(&[&old], op)], *self.pick(FACT_REASONS))
                }
            }
        } else if roll < 60 {
            let mut d = document(
                &format!("Playbook {}: weekly report", self.n),
                "1. Collect numbers\n2. Draft summary\n3. Send to team",
            );
            self.decorate(&mut d);
            (vec![Op::Assert(d)], WriteReason::RecurringWorkflow)
        } else if roll < 67 {
            let mut t = trigger(
                &format!("Alert when {} changes", self.pick(LIKES)),
                &[("event", "change"), ("window", "7d")],
            );
            self.decorate(&mut t);
            (vec![Op::Assert(t)], WriteReason::StandingTrigger)
        } else if roll < 77 {
            match Self::active(&view, |_| true).first().map(|r| (*r).clone()) {
                Some(old) => {
                    targets.push(old.clone());
                    (
                        vec![build::close(&old, "no longer true")],
                        *self.pick(FACT_REASONS),
                    )
                }
                None => (
                    vec![Op::Assert(fact("Likes tea"))],
                    WriteReason::DirectUserStatement,
                ),
            }
        } else if roll < 84 {
            let rows = Self::active(&view, |r| !is_source(r));
            match rows.is_empty() {
                true => (
                    vec![Op::Assert(fact("Likes coffee"))],
                    WriteReason::DirectUserStatement,
                ),
                false => {
                    let old = (*self.pick(&rows)).clone();
                    targets.push(old.clone());
                    let ev = vec![evidence(&format!("m{}", self.n), None)];
                    (
                        vec![Op::AttachEvidence(AttachEvidenceOp {
                            target: old.memory_id.clone(),
                            evidence: ev,
                        })],
                        WriteReason::DailyReconciliation,
                    )
                }
            }
        } else {
            // Several ops in one intent.
            let n = self.rng.random_range(2..=4);
            let ops = (0..n)
                .map(|i| Op::Assert(fact(&format!("Observation {i} of {}", self.n))))
                .collect();
            (ops, WriteReason::AgentReusableConclusion)
        };
        let mut it = intent(account, &action, reason, view.seq, ops);
        it.source.source_type = (*self.pick(SOURCES)).to_owned();
        for t in &targets {
            build::plan(&mut it, t);
        }
        if self.pct(self.cfg.strict_pct) {
            it.planned_against.policy = HeadPolicy::Strict;
        }
        it
    }

    fn step(&mut self) -> IntentRecord {
        self.n += 1;
        self.time += self.rng.random_range(1..=2_000);
        let account = self.pick(&self.accounts.clone()).clone();
        let action = format!("act-{}-{}", self.cfg.seed, self.n);
        if self.pct(self.cfg.retry_pct) && !self.sent.is_empty() {
            let i = self.rng.random_range(0..self.sent.len());
            let mut r = self.sent[i].clone();
            r.timestamp = self.time;
            if self.pct(20)
                && let Some(Op::Assert(a)) = r.intent.ops.first_mut()
            {
                a.content.push_str(" (reworded)");
            }
            return r;
        }
        if self.pct(self.cfg.invalid_pct) {
            let cases = invalid::cases();
            let c = self.pick(&cases);
            let mut r = invalid::base(&account, &action, self.time);
            (c.mutate)(&mut r);
            return r;
        }
        let intent = self.fresh(&account, action);
        IntentRecord {
            timestamp: self.time,
            partition: None,
            offset: None,
            intent,
        }
    }
}

impl Iterator for Generator {
    type Item = IntentRecord;

    fn next(&mut self) -> Option<IntentRecord> {
        let r = self.step();
        let account = r.intent.account_id.clone();
        let before = Snapshot {
            seq: self.truth.head_seq(&account),
            rows: self.truth.rows(&account).to_vec(),
        };
        self.truth.apply(&r.intent, r.timestamp);
        if self.truth.head_seq(&account) != before.seq {
            let snap = before;
            let h = self.history.entry(account).or_default();
            h.push_back(snap);
            if h.len() > HISTORY_MAX {
                h.pop_front();
            }
        }
        self.sent.push_back(r.clone());
        if self.sent.len() > SENT_MAX {
            self.sent.pop_front();
        }
        Some(r)
    }
}

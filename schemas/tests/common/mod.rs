//! Proptest strategies for every record (arbitrary unicode strings, extreme integers).

#![allow(dead_code)]

use std::collections::BTreeMap;

use kledger_schemas::*;
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;

pub(crate) fn s() -> impl Strategy<Value = String> {
    ".{0,12}"
}

pub(crate) fn pick<T: Copy + std::fmt::Debug + 'static>(
    all: &'static [T],
) -> impl Strategy<Value = T> {
    proptest::sample::select(all)
}

fn finite_f64() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("finite", |f| f.is_finite())
}

fn finite_f32() -> impl Strategy<Value = f32> {
    any::<f32>().prop_filter("finite", |f| f.is_finite())
}

fn strings() -> impl Strategy<Value = Vec<String>> {
    vec(s(), 0..3)
}

fn map() -> impl Strategy<Value = BTreeMap<String, String>> {
    btree_map(s(), s(), 0..3)
}

prop_compose! {
    pub fn tenant()(tenant_id in s(), team_id in option::of(s()), project_id in option::of(s()), agent_id in option::of(s()),
        owner_kind in pick(OwnerKind::ALL), owner_id in s()) -> Tenant {
        Tenant { tenant_id, team_id, project_id, agent_id, owner_kind, owner_id }
    }
}
prop_compose! {
    pub fn source()(source_id in s(), source_type in s(), source_version in s(), author_id in option::of(s())) -> Source {
        Source { source_id, source_type, source_version, author_id }
    }
}
prop_compose! {
    pub fn subject()(scope in pick(SubjectScope::ALL), entity_id in option::of(s())) -> Subject { Subject { scope, entity_id } }
}
prop_compose! {
    pub fn sensitivity()(level in pick(SensitivityLevel::ALL), labels in strings()) -> Sensitivity { Sensitivity { level, labels } }
}
prop_compose! {
    pub fn acl()(read_team_ids in strings(), read_agent_ids in strings(), read_role_ids in strings()) -> Acl {
        Acl { read_team_ids, read_agent_ids, read_role_ids }
    }
}
prop_compose! {
    pub fn evidence()(source_type in s(), source_id in s(), source_version in s(),
        page in option::of(any::<i32>()), heading in option::of(s()), paragraph in option::of(any::<i32>()),
        message_id in option::of(s()), span_start in option::of(any::<i64>()), span_end in option::of(any::<i64>()),
        quote in option::of(s()), checksum in option::of(s())) -> Evidence {
        Evidence { source_type, source_id, source_version,
            locator: Locator { page, heading, paragraph, message_id, span_start, span_end }, quote, checksum }
    }
}
prop_compose! {
    pub fn embedding()(model in s(), vector in vec(finite_f32(), 0..5)) -> Embedding { Embedding { model, vector } }
}
prop_compose! {
    pub fn assert_op()(kind in pick(Kind::ALL), content in s(), body in option::of(s()), condition in option::of(map()),
        slot in option::of(s()), subject in subject(), valid_from in option::of(any::<i64>()),
        valid_to in option::of(any::<i64>()), expires_at in option::of(any::<i64>()),
        assertion_class in pick(AssertionClass::ALL), confidence in option::of(finite_f64()),
        curation_weight in any::<i32>(), sensitivity in sensitivity(), visibility in pick(Visibility::ALL),
        acl in acl(), tags in strings(), lang in option::of(s()), evidence in vec(evidence(), 0..2),
        embedding in option::of(embedding())) -> AssertOp {
        AssertOp { kind, content, body, condition, slot, subject, valid_from, valid_to, expires_at, assertion_class,
            confidence, curation_weight, sensitivity, visibility, acl, tags, lang, evidence, embedding }
    }
}

pub(crate) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        assert_op().prop_map(Op::Assert),
        (strings(), assert_op()).prop_map(|(targets, replacement)| Op::Amend(AmendOp {
            targets,
            replacement
        })),
        (s(), option::of(any::<i64>()), s()).prop_map(|(target, valid_to, reason)| Op::Close(
            CloseOp {
                target,
                valid_to,
                reason
            }
        )),
        (s(), vec(evidence(), 0..2)).prop_map(|(target, evidence)| Op::AttachEvidence(
            AttachEvidenceOp { target, evidence }
        )),
        (option::of(s()), option::of(s()), any::<bool>(), s()).prop_map(
            |(target, entity_id, whole_account, reason)| Op::Purge(PurgeOp {
                target,
                entity_id,
                whole_account,
                reason
            })
        ),
        (source_doc(), pick(Visibility::ALL), acl()).prop_map(|(doc, visibility, acl)| Op::Source(
            SourceOp {
                doc,
                visibility,
                acl
            }
        )),
    ]
}

prop_compose! {
    pub fn segment()(start_ms in any::<i64>(), end_ms in any::<i64>(), speaker_id in option::of(s()), text in s()) -> Segment {
        Segment { start_ms, end_ms, speaker_id, text }
    }
}

pub(crate) fn source_doc() -> impl Strategy<Value = SourceDoc> {
    prop_oneof![
        (s(), strings(), strings(), strings()).prop_map(
            |(person_id, names, retained_names, emails)| {
                SourceDoc::Person(PersonDoc {
                    person_id,
                    names,
                    retained_names,
                    emails,
                })
            }
        ),
        (
            s(),
            any::<(i64, i64)>(),
            s(),
            strings(),
            vec(segment(), 0..2)
        )
            .prop_map(
                |(conversation_id, (started_at, ended_at), summary, participant_ids, segments)| {
                    SourceDoc::Conversation(ConversationDoc {
                        conversation_id,
                        started_at,
                        ended_at,
                        summary,
                        participant_ids,
                        segments,
                    })
                }
            ),
        (s(), any::<(i64, i64)>(), s(), strings(), option::of(s())).prop_map(
            |(event_id, (start, end), title, attendee_ids, notes)| {
                SourceDoc::Calendar(CalendarDoc {
                    event_id,
                    start,
                    end,
                    title,
                    attendee_ids,
                    notes,
                })
            }
        ),
        (
            s(),
            any::<(i64, i64)>(),
            s(),
            s(),
            strings(),
            option::of(s())
        )
            .prop_map(
                |(span_id, (start, end), app, window_title, person_ids, ocr_text)| {
                    SourceDoc::Screen(ScreenDoc {
                        span_id,
                        start,
                        end,
                        app,
                        window_title,
                        person_ids,
                        ocr_text,
                    })
                }
            ),
        (
            (s(), s(), option::of(s())),
            (s(), s(), s()),
            (any::<i64>(), s(), s())
        )
            .prop_map(
                |(
                    (episode_id, session_id, project_id),
                    (content, producer, produced_for),
                    (timestamp, role, metadata),
                )| {
                    SourceDoc::Episode(EpisodeDoc {
                        episode_id,
                        session_id,
                        project_id,
                        episode_type: EpisodeType::Message,
                        content_type: ContentType::String,
                        content,
                        producer,
                        produced_for,
                        timestamp,
                        role,
                        metadata,
                    })
                }
            ),
    ]
}

prop_compose! {
    pub fn source_record()(record_id in s(), person_ids in strings(), alias_keys in strings(), doc in option::of(source_doc())) -> SourceRecord {
        SourceRecord { record_id, person_ids, alias_keys, doc }
    }
}

prop_compose! {
    pub fn intent()(action_id in s(), account_id in s(), tenant in tenant(), source in source(),
        name in s(), version in s(), write_reason in pick(WriteReason::ALL), head_seq in any::<i64>(),
        policy in pick(HeadPolicy::ALL),
        targets in vec((s(), any::<i64>(), s()).prop_map(|(memory_id, revision, content_hash)| TargetRef { memory_id, revision, content_hash }), 0..2),
        ops in vec(op(), 0..3)) -> Intent {
        Intent { action_id, account_id, tenant, source, extractor: Extractor { name, version }, write_reason,
            planned_against: PlannedAgainst { head_seq, policy, targets }, ops }
    }
}

prop_compose! {
    pub fn row()(a in assert_op(), memory_id in s(), recorded_at in any::<i64>(), valid_from in any::<i64>(),
        status in pick(Status::ALL), superseded_by in option::of(s()), closed_reason in option::of(s()),
        write_reason in pick(WriteReason::ALL), flags in any::<(bool, bool)>(), authority in any::<i32>(),
        revision in any::<i64>(), content_hash in s(), commit_seq in any::<i64>(), action_id in s(),
        source in source(), tenant in tenant(), generation in any::<i64>(),
        sealed in option::of((s(), s(), vec(any::<u8>(), 0..40))), record in option::of(source_record())) -> Row {
        let row = Row { memory_id, kind: a.kind, content: a.content, body: a.body, condition: a.condition, slot: a.slot,
            subject: a.subject, valid_from, valid_to: a.valid_to, expires_at: a.expires_at, recorded_at, status,
            superseded_by, closed_reason, write_reason, intent_backed: flags.0, user_asserted: flags.1,
            assertion_class: a.assertion_class, confidence: a.confidence, curation_weight: a.curation_weight,
            sensitivity: a.sensitivity, visibility: a.visibility, acl: a.acl, tags: a.tags, lang: a.lang,
            evidence: a.evidence, embedding: a.embedding, authority, revision, content_hash, commit_seq, action_id,
            source, extractor: Extractor { name: "x".into(), version: "1".into() }, tenant, generation,
            sealed: sealed.map(|(key_id, mac, c)| Sealed { key_id, mac, ciphertext: Bytes(c) }), record };
        sealed_as_stored(row)
    }
}

/// A sealed row as it is stored and sent: its content-bearing fields empty (the ciphertext
/// holds them), evidence lineage kept.
fn sealed_as_stored(mut row: Row) -> Row {
    if row.sealed.is_some() {
        row.content = String::new();
        row.body = None;
        row.condition = None;
        row.closed_reason = None;
        row.sensitivity.labels.clear();
        row.tags.clear();
        for e in &mut row.evidence {
            e.locator = Locator::default();
            e.quote = None;
            e.checksum = None;
        }
        row.embedding = None;
        if let Some(r) = &mut row.record {
            r.doc = None;
        }
    }
    row
}

prop_compose! {
    pub fn commit()(account_id in s(), commit_seq in any::<i64>(), prev_hash in s(), head_hash in s(), action_id in s(),
        intent_digest in s(), recorded_at in any::<i64>(), intent_partition in any::<i32>(), intent_offset in any::<i64>(),
        generation in any::<i64>(), rebased in any::<bool>(),
        ops in vec((pick(Change::ALL), row()).prop_map(|(change, row)| CommitOp { change, row }), 0..3),
        continues in any::<bool>(), keyed in any::<bool>()) -> Commit {
        Commit { account_id, commit_seq, prev_hash, head_hash, action_id, intent_digest, recorded_at, intent_partition,
            intent_offset, generation, rebased, ops, continues, keyed }
    }
}

prop_compose! {
    pub fn receipt()(action_id in s(), account_id in s(), outcome in pick(Outcome::ALL), commit_seq in option::of(any::<i64>()),
        rebased in any::<bool>(), head_seq in any::<i64>(), head_hash in s(), code in option::of(s()), message in option::of(s()),
        stale_targets in vec((s(), option::of(any::<i64>()), option::of(s()), option::of(pick(Status::ALL)))
            .prop_map(|(memory_id, revision, content_hash, status)| StaleTarget { memory_id, revision, content_hash, status }), 0..2),
        memory_ids in strings(), intent_partition in any::<i32>(), intent_offset in any::<i64>(), recorded_at in any::<i64>()) -> Receipt {
        Receipt { action_id, account_id, outcome, commit_seq, rebased, head_seq, head_hash, code, message, stale_targets,
            memory_ids, intent_partition, intent_offset, recorded_at }
    }
}

prop_compose! {
    pub fn view()(account_id in s(), generation in any::<i64>(), commit_seq in any::<i64>(), as_of in any::<i64>(),
        profile in s(), playbook_index in s(),
        watchlist in vec((s(), s(), map(), any::<i64>(), option::of(any::<i64>()), option::of(any::<i64>()))
            .prop_map(|(memory_id, content, condition, valid_from, valid_to, expires_at)|
                WatchItem { memory_id, content, condition, valid_from, valid_to, expires_at }), 0..2),
        counts in any::<(i64, i64, i64)>(), watchlist_truncated in any::<bool>()) -> View {
        View { account_id, generation, commit_seq, as_of, profile, playbook_index, watchlist,
            active_facts: counts.0, active_documents: counts.1, active_triggers: counts.2, watchlist_truncated }
    }
}

//! Builders for intents and ops with sensible defaults, for tests, examples and generators.

use std::collections::BTreeMap;

use kledger_schemas::*;

/// The tenant block of an account id `{tenant}/{kind}/{owner}` (falls back to a user owner).
pub fn tenant(account_id: &str) -> Tenant {
    let mut parts = account_id.splitn(3, '/');
    let tenant_id = parts.next().unwrap_or_default().to_owned();
    let owner_kind = parts
        .next()
        .and_then(OwnerKind::parse)
        .unwrap_or(OwnerKind::User);
    let owner_id = parts.next().unwrap_or_default().to_owned();
    Tenant {
        tenant_id,
        team_id: Some("team_core".into()),
        project_id: None,
        agent_id: Some("agt_helper".into()),
        owner_kind,
        owner_id,
    }
}

/// An intent with one source and extractor, planned against `head_seq`.
pub fn intent(
    account_id: &str,
    action_id: &str,
    reason: WriteReason,
    head_seq: i64,
    ops: Vec<Op>,
) -> Intent {
    Intent {
        action_id: action_id.to_owned(),
        account_id: account_id.to_owned(),
        tenant: tenant(account_id),
        source: Source {
            source_id: format!("msg_{action_id}"),
            source_type: "chat_message".into(),
            source_version: "1".into(),
            author_id: None,
        },
        extractor: Extractor {
            name: "testkit".into(),
            version: "1".into(),
        },
        write_reason: reason,
        planned_against: PlannedAgainst {
            head_seq,
            policy: HeadPolicy::Rebase,
            targets: Vec::new(),
        },
        ops,
    }
}

/// A confirmed, private, primary-user fact.
pub fn fact(content: &str) -> AssertOp {
    AssertOp {
        kind: Kind::Fact,
        content: content.to_owned(),
        body: None,
        condition: None,
        slot: None,
        subject: Subject {
            scope: SubjectScope::PrimaryUser,
            entity_id: None,
        },
        valid_from: None,
        valid_to: None,
        expires_at: None,
        assertion_class: AssertionClass::Confirmed,
        confidence: None,
        curation_weight: 0,
        sensitivity: Sensitivity::default(),
        visibility: Visibility::Private,
        acl: Acl::default(),
        tags: Vec::new(),
        lang: None,
        evidence: Vec::new(),
        embedding: None,
    }
}

/// A slotted primary-user fact.
pub fn slotted(slot: &str, content: &str) -> AssertOp {
    AssertOp {
        slot: Some(slot.to_owned()),
        ..fact(content)
    }
}

/// A third-party fact about `entity`.
pub fn third_party(entity: &str, content: &str) -> AssertOp {
    AssertOp {
        subject: Subject {
            scope: SubjectScope::ThirdParty,
            entity_id: Some(entity.to_owned()),
        },
        ..fact(content)
    }
}

/// A playbook (write it with `recurring_workflow`).
pub fn document(content: &str, body: &str) -> AssertOp {
    AssertOp {
        kind: Kind::Document,
        body: Some(body.to_owned()),
        ..fact(content)
    }
}

/// A standing trigger (write it with `standing_trigger`).
pub fn trigger(content: &str, condition: &[(&str, &str)]) -> AssertOp {
    let c: BTreeMap<String, String> = condition
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    AssertOp {
        kind: Kind::Trigger,
        condition: Some(c),
        ..fact(content)
    }
}

/// Evidence from a chat message, with an optional quote.
pub fn evidence(message_id: &str, quote: Option<&str>) -> Evidence {
    Evidence {
        source_type: "chat_message".into(),
        source_id: format!("conv_{message_id}"),
        source_version: "1".into(),
        locator: Locator {
            message_id: Some(message_id.to_owned()),
            ..Locator::default()
        },
        quote: quote.map(str::to_owned),
        checksum: None,
    }
}

/// The planned reference to a row as it is now.
pub fn target_ref(row: &Row) -> TargetRef {
    TargetRef {
        memory_id: row.memory_id.clone(),
        revision: row.revision,
        content_hash: row.content_hash.clone(),
    }
}

/// Adds `row` to the intent's planned targets.
pub fn plan(intent: &mut Intent, row: &Row) {
    intent.planned_against.targets.push(target_ref(row));
}

/// An amend op.
pub fn amend(targets: &[&Row], replacement: AssertOp) -> Op {
    Op::Amend(AmendOp {
        targets: targets.iter().map(|r| r.memory_id.clone()).collect(),
        replacement,
    })
}

/// A close op.
pub fn close(row: &Row, reason: &str) -> Op {
    Op::Close(CloseOp {
        target: row.memory_id.clone(),
        valid_to: None,
        reason: reason.to_owned(),
    })
}

/// A purge of one row.
pub fn purge(row: &Row, reason: &str) -> Op {
    Op::Purge(PurgeOp {
        target: Some(row.memory_id.clone()),
        entity_id: None,
        whole_account: false,
        reason: reason.to_owned(),
    })
}

/// A user principal of tenant `t_acme` and team `team_core` (the team [`tenant`] gives the
/// rows), owning the account `t_acme/user/<owner_id>`, with `roles`.
pub fn principal(owner_id: &str, roles: &[&str]) -> kledger_processors::access::Principal {
    kledger_processors::access::Principal {
        tenant_id: "t_acme".into(),
        team_id: Some("team_core".into()),
        agent_id: None,
        roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        owner_kind: OwnerKind::User,
        owner_id: owner_id.into(),
    }
}

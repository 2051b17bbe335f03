//! Access rules over random principals and rows: `may_read` admits exactly what cm_payload_v1's
//! visibility rules (stated here as the document writes them, plus the owner on public rows)
//! and the sensitivity rules allow; nothing crosses tenants; tombstones are never readable;
//! widening visibility never hides a row; the vector index's access filter (Qdrant's REST JSON
//! form) admits exactly the indexable rows `may_read` admits.

use kledger_processors::access::{Principal, SENSITIVE_READER_ROLE, may_read};
use kledger_processors::payload::{
    AccountRef, EmbeddingInfo, Placement, access_filter, payload, placement,
};
use kledger_schemas::*;
use kledger_testkit::Ledger;
use kledger_testkit::build::{fact, intent};
use proptest::prelude::*;

fn pick(xs: &[&'static str]) -> impl Strategy<Value = &'static str> + use<> {
    proptest::sample::select(xs.to_vec())
}

fn opt(xs: &'static [&'static str]) -> impl Strategy<Value = Option<String>> {
    proptest::option::of(pick(xs).prop_map(str::to_owned))
}

fn list(xs: &'static [&'static str]) -> impl Strategy<Value = Vec<String>> {
    proptest::sample::subsequence(xs.to_vec(), 0..=xs.len())
        .prop_map(|v| v.into_iter().map(str::to_owned).collect())
}

const TENANTS: &[&str] = &["t_a", "t_b"];
const TEAMS: &[&str] = &["team_x", "team_y"];
const AGENTS: &[&str] = &["agt_1", "agt_2"];
const ROLES: &[&str] = &["role_admin", "role_ops", SENSITIVE_READER_ROLE];
const OWNERS: &[&str] = &["u_1", "u_2", "agt_1"];

fn kind() -> impl Strategy<Value = OwnerKind> {
    prop_oneof![
        Just(OwnerKind::User),
        Just(OwnerKind::Agent),
        Just(OwnerKind::Team)
    ]
}

fn principal() -> impl Strategy<Value = Principal> {
    (
        pick(TENANTS),
        opt(TEAMS),
        opt(AGENTS),
        list(ROLES),
        kind(),
        pick(OWNERS),
    )
        .prop_map(|(t, team, agent, roles, k, o)| Principal {
            tenant_id: t.into(),
            team_id: team,
            agent_id: agent,
            roles,
            owner_kind: k,
            owner_id: o.into(),
        })
}

/// One committed row to mutate: built once through the real apply path.
fn base_row() -> Row {
    let mut l = Ledger::new(1);
    let d = l.apply(&IntentRecord {
        timestamp: 1_767_225_600_000,
        partition: None,
        offset: None,
        intent: intent(
            "t_a/user/u_1",
            "a1",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(fact("Likes tea"))],
        ),
    });
    d.into_commit().expect("committed").ops[0].row.clone()
}

fn row() -> impl Strategy<Value = Row> {
    let base = base_row();
    (
        (pick(TENANTS), opt(TEAMS), kind(), pick(OWNERS)),
        prop_oneof![
            Just(Visibility::Private),
            Just(Visibility::Confidential),
            Just(Visibility::Public)
        ],
        (list(TEAMS), list(AGENTS), list(ROLES)),
        prop_oneof![
            Just(SensitivityLevel::Normal),
            Just(SensitivityLevel::Sensitive),
            Just(SensitivityLevel::Restricted)
        ],
        prop_oneof![
            Just(Status::Active),
            Just(Status::Superseded),
            Just(Status::Closed),
            Just(Status::Tombstoned)
        ],
    )
        .prop_map(move |((t, team, k, o), vis, (at, aa, ar), sens, status)| {
            let mut r = base.clone();
            r.tenant.tenant_id = t.into();
            r.tenant.team_id = team;
            r.tenant.owner_kind = k;
            r.tenant.owner_id = o.into();
            r.visibility = vis;
            r.acl = Acl {
                read_team_ids: at,
                read_agent_ids: aa,
                read_role_ids: ar,
            };
            r.sensitivity.level = sens;
            r.status = status;
            r
        })
}

/// The rules as cm_payload_v1 and kledger's sensitivity table state them (the harness's
/// statement of them).
use kledger_testkit::harness::access::spec;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn may_read_is_exactly_the_rules(p in principal(), r in row()) {
        prop_assert_eq!(may_read(&p, &r), spec(&p, &r));
        if r.tenant.tenant_id != p.tenant_id || r.status == Status::Tombstoned {
            prop_assert!(!may_read(&p, &r));
        }
    }

    #[test]
    fn the_vector_filter_admits_exactly_the_readable_indexed_rows(p in principal(), r in row()) {
        let account = AccountRef {
            tenant_id: r.tenant.tenant_id.clone(),
            owner_kind: r.tenant.owner_kind.as_str().to_owned(),
            owner_id: r.tenant.owner_id.clone(),
        };
        let info = EmbeddingInfo { model: "m".into(), dim: 4 };
        let in_index = placement(&r) == Placement::Upsert;
        let passes = kledger_testkit::filter::matches(
            &access_filter(&p, &account, &[]),
            &payload(&r, &info, r.recorded_at),
        );
        // Only active rows are searched by default; the index holds superseded and closed
        // rows too, marked by status.
        let expected = in_index && r.status == Status::Active && may_read(&p, &r);
        prop_assert_eq!(passes, expected);
        // A kinds filter narrows and never widens.
        let facts_only = kledger_testkit::filter::matches(
            &access_filter(&p, &account, &[Kind::Document]),
            &payload(&r, &info, r.recorded_at),
        );
        prop_assert!(!facts_only, "the row is a fact");
    }

    #[test]
    fn widening_visibility_never_hides_a_row(p in principal(), mut r in row()) {
        r.visibility = Visibility::Private;
        let private = may_read(&p, &r);
        r.visibility = Visibility::Confidential;
        let confidential = may_read(&p, &r);
        prop_assert!(!private || confidential);
        // Public admits the owner and the same team; confidential admits ACL readers: neither
        // contains the other in general, but both contain private.
        r.visibility = Visibility::Public;
        prop_assert!(!private || may_read(&p, &r));
    }
}

//! Who may read a row: cm_payload_v1's visibility rules plus kledger's sensitivity rules, in
//! one place. The read API applies [`may_read`] after hydrating rows, and the vector filter
//! ([`crate::payload::access_filter`]) states the same rules for the index.
//!
//! A [`Principal`] is the reader (from a bearer token). Every read targets one account (by
//! default the principal's own, `{tenant}/{owner_kind}/{owner_id}`); a row of that account is
//! readable when all of these hold:
//! - same tenant, and the row is not tombstoned;
//! - visibility: `private` → the principal is the row's owner; `confidential` → owner, or the
//!   principal's agent, team or one of its roles is in the row's ACL; `public` → owner, or the
//!   row's team is the principal's team (a row without a team is public to its tenant);
//! - sensitivity: `restricted` → owner only; `sensitive` → owner, or a principal holding
//!   [`SENSITIVE_READER_ROLE`]; `normal` → no further rule.
//!
//! cm_payload_v1 writes the public rule without the owner; kledger adds it, so an owner always
//! reads what it owns (private ⊂ confidential ⊂ public in who may read).

use kledger_schemas::{OwnerKind, Row, SensitivityLevel, Status, Tenant, Visibility};
use serde::{Deserialize, Serialize};

/// The role that admits a non-owner to `sensitive` rows it may otherwise read.
pub const SENSITIVE_READER_ROLE: &str = "role_sensitive_reader";

/// A reader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Principal {
    /// `t_<slug>`.
    pub tenant_id: String,
    /// `team_<slug>`.
    #[serde(default)]
    pub team_id: Option<String>,
    /// `agt_<slug>`: the agent acting, if any.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Roles (`role_<slug>`).
    #[serde(default)]
    pub roles: Vec<String>,
    /// The principal's own owner kind.
    pub owner_kind: OwnerKind,
    /// The principal's own owner id.
    pub owner_id: String,
}

impl Principal {
    /// The principal's own account.
    pub fn account_id(&self) -> String {
        format!("{}/{}/{}", self.tenant_id, self.owner_kind, self.owner_id)
    }

    /// Whether the principal owns rows of `tenant`.
    pub fn owns(&self, tenant: &Tenant) -> bool {
        tenant.tenant_id == self.tenant_id
            && tenant.owner_kind == self.owner_kind
            && tenant.owner_id == self.owner_id
    }

    fn granted(&self, row: &Row) -> bool {
        let acl = &row.acl;
        self.agent_id
            .as_ref()
            .is_some_and(|a| acl.read_agent_ids.contains(a))
            || self
                .team_id
                .as_ref()
                .is_some_and(|t| acl.read_team_ids.contains(t))
            || self.roles.iter().any(|r| acl.read_role_ids.contains(r))
    }
}

/// Whether the visibility rule admits `p` to `row` (cm_payload_v1, plus the owner on public).
pub fn visible(p: &Principal, row: &Row) -> bool {
    let owner = p.owns(&row.tenant);
    match row.visibility {
        Visibility::Private => owner,
        Visibility::Confidential => owner || p.granted(row),
        Visibility::Public => {
            owner
                || match &row.tenant.team_id {
                    Some(team) => p.team_id.as_ref() == Some(team),
                    None => true,
                }
        }
    }
}

/// Whether the sensitivity rule admits `p` to `row`.
pub fn sensitivity_allows(p: &Principal, row: &Row) -> bool {
    match row.sensitivity.level {
        SensitivityLevel::Normal => true,
        SensitivityLevel::Sensitive => {
            p.owns(&row.tenant) || p.roles.iter().any(|r| r == SENSITIVE_READER_ROLE)
        }
        SensitivityLevel::Restricted => p.owns(&row.tenant),
    }
}

/// Whether `p` may read `row` at all (every rule of the module note).
pub fn may_read(p: &Principal, row: &Row) -> bool {
    row.tenant.tenant_id == p.tenant_id
        && row.status != Status::Tombstoned
        && visible(p, row)
        && sensitivity_allows(p, row)
}

/// Whether `p` may address `account` at all: accounts of other tenants are never readable.
pub fn may_address(p: &Principal, account: &str) -> bool {
    account
        .split_once('/')
        .is_some_and(|(tenant, _)| tenant == p.tenant_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal() -> Principal {
        Principal {
            tenant_id: "t_a".into(),
            team_id: Some("team_x".into()),
            agent_id: Some("agt_r".into()),
            roles: vec!["role_admin".into()],
            owner_kind: OwnerKind::Agent,
            owner_id: "agt_r".into(),
        }
    }

    #[test]
    fn addressing_is_by_tenant() {
        let p = principal();
        assert!(may_address(&p, "t_a/user/u_1"));
        assert!(!may_address(&p, "t_b/user/u_1"));
        assert!(!may_address(&p, "t_a"));
        assert_eq!(p.account_id(), "t_a/agent/agt_r");
    }
}

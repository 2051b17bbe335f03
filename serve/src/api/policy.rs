//! The history policy every read applies (`docs/privacy.md#history`), on HTTP and MCP alike.
//!
//! A read asks for **history** when it looks anywhere but at the rows as they stand now: an
//! `as_of` more than [`super::at::PRESENT_SKEW_MS`] before now, any `known_at`, or the
//! timeline's `history` or `audit`. Then:
//! - the account's **owner** reads its own history (the bitemporal semantics of `at`), unless
//!   its tenant's policy says `owner = false`;
//! - **anyone else** needs [`HISTORY_ROLE`] and the tenant's history window
//!   (`policy.history.window_days`, per tenant under `policy.tenants`; 0 by default: nobody
//!   but the owner): an `as_of` or `known_at` before the window, or no role, answers `403
//!   history_not_allowed`; of the ended versions the timeline lists, those that ended before the
//!   window are left out ([`Grant::shows`]).
//!
//! Either way a version is shown only if its row, as it stands now, admits the reader
//! ([`super::at::admitted_now`]). Refusals are counted in
//! `kledger_api_refused_total{reason="history_not_allowed"}`. The answer depends on the
//! principal and the parameters only, never on what the account holds.

use axum::http::StatusCode;
use kledger_processors::access::Principal;
use kledger_schemas::Row;

use super::at::PRESENT_SKEW_MS;
use super::{Api, ApiError, now_ms, owns};

/// The role that lets a principal read other owners' history, inside the window.
pub const HISTORY_ROLE: &str = "role_history";

/// The error code of a refused history read.
pub const NOT_ALLOWED: &str = "history_not_allowed";

const DAY_MS: i64 = 86_400_000;

/// What a read asks for beyond the rows as they stand now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ask {
    /// Effective time, ms (`None`: now).
    pub as_of: Option<i64>,
    /// Record time, ms.
    pub known_at: Option<i64>,
    /// Ended (superseded, closed, expired) rows too.
    pub history: bool,
    /// Disputed rows too.
    pub audit: bool,
}

impl Ask {
    /// A read at `as_of` and `known_at` (the profile, a playbook, search, semantic features).
    pub fn at(as_of: Option<i64>, known_at: Option<i64>) -> Self {
        Self {
            as_of,
            known_at,
            ..Self::default()
        }
    }

    /// Whether it asks for history at `now`.
    fn is_history(&self, now: i64) -> bool {
        self.known_at.is_some()
            || self.history
            || self.audit
            || self.as_of.is_some_and(|t| t < now - PRESENT_SKEW_MS)
    }
}

/// What a read may see of history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Versions that ended before this (ms) are not shown; `None`: every version.
    since: Option<i64>,
}

impl Grant {
    /// Every version (a read that asks for no history of the ledger).
    pub fn all() -> Self {
        Self { since: None }
    }

    /// Whether an ended version `row` is inside the grant: it ended (the earlier of its effective
    /// end and its expiry, else when it was recorded) at or after the window's start.
    pub fn shows(&self, row: &Row) -> bool {
        let ended = [row.valid_to, row.expires_at]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(row.recorded_at);
        self.since.is_none_or(|since| ended >= since)
    }
}

/// The history `p` may read of `account` when it asks `ask`: every version, a window of it,
/// or `403 history_not_allowed`.
pub fn history(api: &Api, p: &Principal, account: &str, ask: Ask) -> Result<Grant, ApiError> {
    let now = now_ms();
    let all = Grant { since: None };
    if !ask.is_history(now) {
        return Ok(all);
    }
    let policy = api.config.policy.history_of(&p.tenant_id);
    if owns(p, account) {
        return if policy.owner {
            Ok(all)
        } else {
            Err(refused(
                "the tenant's policy keeps history from its owners too",
            ))
        };
    }
    if !p.roles.iter().any(|r| r == HISTORY_ROLE) || policy.window_days == 0 {
        return Err(refused(
            "another owner's history needs role_history and the tenant's history window",
        ));
    }
    let days = i64::try_from(policy.window_days).unwrap_or(i64::MAX / DAY_MS);
    let since = now.saturating_sub(days.saturating_mul(DAY_MS));
    if ask.as_of.is_some_and(|t| t < since) || ask.known_at.is_some_and(|t| t < since) {
        return Err(refused(
            "the read's time is before the tenant's history window",
        ));
    }
    Ok(Grant { since: Some(since) })
}

fn refused(why: &str) -> ApiError {
    metrics::counter!(kledger_runtime::metrics::API_REFUSED_TOTAL, "reason" => NOT_ALLOWED)
        .increment(1);
    ApiError::new(StatusCode::FORBIDDEN, NOT_ALLOWED, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_present_is_not_history() {
        let now = 1_000_000_000;
        assert!(!Ask::default().is_history(now));
        assert!(!Ask::at(Some(now - PRESENT_SKEW_MS), None).is_history(now));
        assert!(!Ask::at(Some(now + DAY_MS), None).is_history(now));
        assert!(Ask::at(Some(now - PRESENT_SKEW_MS - 1), None).is_history(now));
        assert!(Ask::at(None, Some(now)).is_history(now));
        for (history, audit) in [(true, false), (false, true)] {
            let ask = Ask {
                history,
                audit,
                ..Ask::default()
            };
            assert!(ask.is_history(now));
        }
    }
}

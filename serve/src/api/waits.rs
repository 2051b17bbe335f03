//! Read-your-writes waits (`min_commit_seq`), fairly shared.
//!
//! - **The owner's only.** An account's positions (how many commits its projections have
//!   applied) tell how much it holds. Only the account's owner may wait for, or be told, them;
//!   any other caller's `min_commit_seq` is answered `403 wait_owner_only` at once, for every
//!   account alike (existing or not, whatever its positions).
//! - **Asynchronous.** A wait holds no thread: it looks at the positions (one point read per
//!   projection) and sleeps on the executor between looks, from [`LOOK_FIRST`] doubling to
//!   [`LOOK_MAX`], until its `wait_ms` ends.
//! - **Bounded.** At most `api.waits_per_principal_max` waits of one caller and
//!   `api.waits_max` in all; one more is answered `429 too_many_waits` at once.
//!
//! May not touch: the stores beyond the positions ([`super::at::positions`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use kledger_processors::access::Principal;

use super::at::{WAIT_MS_DEFAULT, WAIT_MS_MAX, positions};
use super::{Api, ApiError};
use kledger_runtime::metrics as m;

/// The first pause between two looks at the positions.
pub const LOOK_FIRST: Duration = Duration::from_millis(2);
/// The longest pause between two looks.
pub const LOOK_MAX: Duration = Duration::from_millis(50);

/// A caller, as the per-caller bounds count it: everything a principal is made of.
pub fn caller_key(p: &Principal) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}",
        p.account_id(),
        p.team_id.as_deref().unwrap_or(""),
        p.agent_id.as_deref().unwrap_or(""),
        p.roles.join(",")
    )
}

/// Counts of something held per caller and in all, each with its bound.
#[derive(Debug)]
pub struct Shares {
    per_caller_max: usize,
    total_max: usize,
    held: Mutex<(BTreeMap<String, usize>, usize)>,
}

/// One share held; given back when dropped.
#[derive(Debug)]
pub struct Share {
    owner: Arc<Shares>,
    key: String,
}

impl Shares {
    /// Bounds of `per_caller_max` shares per caller and `total_max` in all.
    pub fn new(per_caller_max: usize, total_max: usize) -> Arc<Self> {
        Arc::new(Self {
            per_caller_max,
            total_max,
            held: Mutex::new((BTreeMap::new(), 0)),
        })
    }

    /// A share for `key`, unless the caller or everyone holds the most already.
    pub fn take(self: &Arc<Self>, key: &str) -> Option<Share> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let (per, total) = &mut *held;
        let mine = per.get(key).copied().unwrap_or(0);
        if mine >= self.per_caller_max || *total >= self.total_max {
            return None;
        }
        per.insert(key.to_owned(), mine + 1);
        *total += 1;
        Some(Share {
            owner: self.clone(),
            key: key.to_owned(),
        })
    }

    /// Shares held now, in all.
    pub fn held(&self) -> usize {
        self.held.lock().map(|h| h.1).unwrap_or(0)
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut held = self.owner.held.lock().unwrap_or_else(|e| e.into_inner());
        let (per, total) = &mut *held;
        *total = total.saturating_sub(1);
        if let Some(n) = per.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                per.remove(&self.key);
            }
        }
    }
}

/// Whether `p` may wait for `min_commit_seq` of `account`: nothing to wait for without one;
/// the owner's own account; `403 wait_owner_only` otherwise, whatever the account.
pub fn may_wait(p: &Principal, account: &str, min_commit_seq: Option<i64>) -> Result<(), ApiError> {
    match min_commit_seq {
        Some(_) if !super::owns(p, account) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "wait_owner_only",
            "only the account's owner may wait for its commits (min_commit_seq)",
        )),
        _ => Ok(()),
    }
}

/// `wait_ms` checked against its bound (default [`WAIT_MS_DEFAULT`]).
pub fn wait_of(wait_ms: Option<u64>) -> Result<Duration, ApiError> {
    let wait = wait_ms.unwrap_or(WAIT_MS_DEFAULT);
    if wait > WAIT_MS_MAX {
        return Err(ApiError::bad(
            "bad_wait",
            format!("wait_ms must be in 0..={WAIT_MS_MAX}"),
        ));
    }
    Ok(Duration::from_millis(wait))
}

/// Waits, without holding a thread, until the projections a read of `account` looks at
/// (`vectors`: search's index too) have applied `min_commit_seq`, or `wait_ms` has passed;
/// either way the read then answers (`409 not_caught_up` when they have not). Refused at once
/// for a caller who may not wait ([`may_wait`]) or who waits too much already.
pub async fn until_caught_up(
    api: &Api,
    p: &Principal,
    account: &str,
    min_commit_seq: Option<i64>,
    wait_ms: Option<u64>,
    vectors: bool,
) -> Result<(), ApiError> {
    let Some(min) = min_commit_seq else {
        return Ok(());
    };
    may_wait(p, account, min_commit_seq)?;
    let wait = wait_of(wait_ms)?;
    let caught_up = |api: &Api| -> Result<bool, ApiError> {
        let at = positions(api, account, vectors)?;
        Ok(at.views >= min && at.vectors.is_none_or(|v| v >= min))
    };
    if wait.is_zero() || caught_up(api)? {
        return Ok(());
    }
    let Some(_share) = api.waits.take(&caller_key(p)) else {
        metrics::counter!(m::API_REFUSED_TOTAL, "reason" => "too_many_waits").increment(1);
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_waits",
            "too many reads wait for their min_commit_seq; try again later",
        ));
    };
    metrics::gauge!(m::API_WAITS).set(api.waits.held() as f64);
    let deadline = Instant::now() + wait;
    let mut looks = kledger_runtime::backoff::Backoff::new(LOOK_FIRST, LOOK_MAX);
    let outcome = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Ok(());
        }
        tokio::time::sleep(looks.next_pause().min(left)).await;
        match caught_up(api) {
            Ok(true) => break Ok(()),
            Ok(false) => {}
            Err(e) => break Err(e),
        }
    };
    drop(_share);
    metrics::gauge!(m::API_WAITS).set(api.waits.held() as f64);
    outcome
}

/// Whether the projections a read of `account` looks at (`vectors`: search's index too) have
/// applied `min_commit_seq`, as they stand now: `409 not_caught_up` with their positions when
/// not. Nothing to check without `min_commit_seq`; only the owner may ask
/// ([`may_wait`]: `403 wait_owner_only` for anyone else, whatever the account).
/// The HTTP and MCP reads wait first ([`until_caught_up`]); this is the answer.
pub fn caught_up(
    api: &Api,
    p: &Principal,
    account: &str,
    min_commit_seq: Option<i64>,
    vectors: bool,
) -> Result<(), ApiError> {
    let Some(min) = min_commit_seq else {
        return Ok(());
    };
    may_wait(p, account, min_commit_seq)?;
    let at = positions(api, account, vectors)?;
    if at.views >= min && at.vectors.is_none_or(|v| v >= min) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::CONFLICT,
        "not_caught_up",
        format!("the projections have not applied commit {min} of the account yet"),
    )
    .with_detail(serde_json::json!({ "min_commit_seq": min, "positions": at })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_bounded_per_caller_and_in_all_and_given_back() {
        let s = Shares::new(2, 3);
        let a1 = s.take("a").unwrap();
        let _a2 = s.take("a").unwrap();
        assert!(s.take("a").is_none(), "a third for one caller");
        let _b1 = s.take("b").unwrap();
        assert!(s.take("c").is_none(), "a fourth in all");
        drop(a1);
        let _c = s.take("c").unwrap();
        assert_eq!(s.held(), 3);
    }
}

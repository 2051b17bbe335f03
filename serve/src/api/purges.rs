//! `GET /v1/purges/{action_id}`: a purge receipt — where the purge stands in each copy kledger
//! keeps (`docs/privacy.md`), and `complete` once every one has passed it.
//!
//! Copies, and what "erased" means for each:
//! - `ledger`: every commit of the purge is in the outbox and the processor's state (its data
//!   keys destroyed there); with the processor in this process, its store's erasure of the
//!   older versions has run too.
//! - `keys_topic`: the destroyed keys' tombstones are written (known where the processor runs
//!   in this process) and the topic's compaction bound has passed.
//! - `views`: the view store folded the purge, ran its erasure, and published the account's
//!   View without the rows.
//! - `views_topic`: that View is published and the topic's compaction bound has passed.
//! - `sources`: the sources store folded the purge and ran its erasure (`not_kept` when the
//!   sources sink is off; `not_observed` in a process without the store). The receipt's
//!   `sources` names each source whose documents the purge erased, with their count.
//! - `vectors`: the vector sink applied the purge and its index's and key cache's erasures ran
//!   (`not_kept` when vectors are off; `not_observed` in a process that does not own the sink).
//! - `intents_topic`: the intents topic's retention bound has passed (the intents that carried
//!   the purged text were recorded before the purge).
//!
//! Owner, or a principal of the tenant with the role `role_privacy`; anything else, and an
//! action the view store has not folded as a purge, is the uniform `unavailable`.

use std::time::Instant;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use kledger_state::StateRead;
use schemars::JsonSchema;
use serde::Serialize;

use super::owns;
use super::read::{blocking, finish};
use super::{AccountParam, Api, ApiError, Caller, now_ms, target};
use kledger_kafka::topics::KEYS_COMPACTION_MS;

/// The role that may read any account's purge receipts in its tenant.
pub const PRIVACY_ROLE: &str = "role_privacy";

/// Where a purge stands in one copy.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct Copy {
    /// Which copy.
    pub copy: &'static str,
    /// `erased`, `pending`, `not_kept` (this deployment keeps no such copy) or `not_observed`
    /// (another process holds it).
    pub state: &'static str,
    /// When a copy erased by a time bound is erased at the latest (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<i64>,
}

/// A purge receipt.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PurgeReceipt {
    /// The purge's action.
    pub action_id: String,
    /// The account.
    pub account_id: String,
    /// The purge's last commit folded.
    pub commit_seq: i64,
    /// Its record time (ms).
    pub recorded_at: i64,
    /// Ledger rows tombstoned.
    pub rows: u64,
    /// The sources whose documents the purge erased (people, conversations, calendar, screen),
    /// with how many (as the sources store folded them).
    pub sources: Vec<SourceRows>,
    /// Every copy has passed the purge.
    pub complete: bool,
    /// Each copy.
    pub copies: Vec<Copy>,
}

/// Documents of one source a purge erased.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct SourceRows {
    /// `people`, `conversations`, `calendar` or `screen`.
    pub source: &'static str,
    /// Documents (every version) tombstoned.
    pub rows: u64,
}

impl From<kledger_state::erasure::CopyReport> for Copy {
    fn from(c: kledger_state::erasure::CopyReport) -> Self {
        Copy {
            copy: c.copy,
            state: c.state.as_str(),
            by: c.by,
        }
    }
}

/// How long after a record's time the broker has compacted it at the latest (ms):
/// `kafka.compaction_slack_ms`, else twice the keys topic's compaction bound (an external
/// broker) or the embedded broker's maintenance interval.
fn broker_slack_ms(api: &Api) -> i64 {
    if let Some(ms) = api.config.kafka.compaction_slack_ms {
        return ms.max(0);
    }
    if !api.config.embedded() {
        return 2 * KEYS_COMPACTION_MS;
    }
    maintenance_interval_ms(&api.config.embedded.storage).unwrap_or(600_000)
}

/// The `maintenance_interval` of an embedded broker's storage URL (`1s`, `500ms`, `10m`).
fn maintenance_interval_ms(storage: &str) -> Option<i64> {
    let v = storage
        .split_once('?')?
        .1
        .split('&')
        .find_map(|kv| kv.strip_prefix("maintenance_interval="))?;
    let split = v.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = v.split_at(split);
    let n: i64 = n.parse().ok()?;
    Some(match unit {
        "ms" => n,
        "s" => n * 1_000,
        "m" => n * 60_000,
        "h" => n * 3_600_000,
        _ => return None,
    })
}

/// The receipt of `action_id` of `account`; `None` when the view store folded no such purge.
/// What this process sees of each copy is gathered here; what it means is
/// [`kledger_state::erasure::copies`]'.
fn receipt(api: &Api, account: &str, action_id: &str) -> Result<Option<PurgeReceipt>, ApiError> {
    let views = api.views.get();
    let Some(mark) = views.purge(account, action_id)? else {
        return Ok(None);
    };
    // The processor's state, and the key tombstones it queues, where this process runs it.
    let (ledger_erased, tombstones_written) = match &api.state {
        Some(store) => {
            let p = kledger_processors::routing::partition_for(account.as_bytes(), api.partitions);
            let prefix = kledger_state::keys::account(p, account)?;
            let queued = !store.scan(kledger_state::Cf::Shred, &prefix, 1)?.is_empty();
            (!store.erasures().is_pending(&prefix), !queued)
        }
        None => (true, true),
    };
    let (source_copy, sources) = source_copies(api, account, action_id, &mark)?;
    let slack = broker_slack_ms(api);
    let seen = kledger_state::erasure::Seen {
        folded: mark.complete,
        recorded_at: mark.recorded_at,
        ledger_erased,
        tombstones_written,
        view_published: !views.view_pending(account)?,
        views_erased: !views.erasure_pending(account),
        vectors: vectors(api, account, &mark)?,
        sources: source_copy,
        compaction_ms: slack,
        intents_retention_ms: api.config.kafka.intents_retention_ms.max(0) + slack,
    };
    let (copies, complete) = kledger_state::erasure::copies(&seen, now_ms());
    Ok(Some(PurgeReceipt {
        action_id: action_id.to_owned(),
        account_id: account.to_owned(),
        commit_seq: mark.commit_seq,
        recorded_at: mark.recorded_at,
        rows: mark.rows,
        sources,
        complete,
        copies: copies.into_iter().map(Copy::from).collect(),
    }))
}

/// The sources store's copy as [`kledger_state::erasure::Seen::sources`] holds it, and the
/// documents of each source the purge erased.
fn source_copies(
    api: &Api,
    account: &str,
    action_id: &str,
    mark: &kledger_state::PurgeMark,
) -> Result<(Option<Option<bool>>, Vec<SourceRows>), ApiError> {
    if !api.config.sources.enabled {
        return Ok((None, Vec::new()));
    }
    let Some(store) = api.sources.as_ref().map(|s| s.get()) else {
        return Ok((Some(None), Vec::new()));
    };
    let Some(seen) = store.purge(account, action_id)? else {
        return Ok((Some(Some(false)), Vec::new()));
    };
    let done =
        seen.complete && seen.commit_seq >= mark.commit_seq && !store.erasure_pending(account);
    let rows = kledger_state::SOURCE_ORDER
        .iter()
        .zip(seen.by_source)
        .filter(|(_, n)| *n > 0)
        .map(|(s, rows)| SourceRows {
            source: s.as_str(),
            rows,
        })
        .collect();
    Ok((Some(Some(done)), rows))
}

/// The vector copy as [`kledger_state::erasure::Seen::vectors`] holds it.
fn vectors(
    api: &Api,
    account: &str,
    mark: &kledger_state::PurgeMark,
) -> Result<Option<Option<bool>>, ApiError> {
    if !api.config.vectors.enabled {
        return Ok(None);
    }
    let Some(search) = api.search.as_ref().and_then(|s| s.get()) else {
        return Ok(Some(None));
    };
    let generation = search.live.get();
    let Ok(marks) = generation.marks() else {
        return Ok(Some(None));
    };
    let applied = marks.applied(account)? >= mark.commit_seq;
    let erased = !generation.index.erasure().due()
        && !marks
            .erasures()
            .is_pending(&kledger_state::keycache::entry(account, ""));
    Ok(Some(Some(applied && erased)))
}

/// Purges the pending gauges look at per round at most.
const WATCHED_MAX: usize = 100_000;
/// How often the pending gauges are computed.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Keeps [`kledger_runtime::metrics::PURGES_PENDING`] and [`kledger_runtime::metrics::PURGE_PENDING_SECONDS`]
/// current: purges the view store folded whose receipt is not complete, and the oldest one's
/// age. Ends at shutdown.
pub fn watch(api: Api, shutdown: kledger_runtime::shutdown::Shutdown) {
    std::thread::Builder::new()
        .name("kledger-purges".into())
        .spawn(move || {
            while !shutdown.sleep(WATCH_EVERY) {
                match pending(&api) {
                    Ok((n, oldest_ms)) => {
                        metrics::gauge!(kledger_runtime::metrics::PURGES_PENDING).set(n as f64);
                        metrics::gauge!(kledger_runtime::metrics::PURGE_PENDING_SECONDS)
                            .set(oldest_ms as f64 / 1_000.0);
                    }
                    Err(e) => tracing::warn!(error = %e.message(), "purge receipts: reading the view store failed"),
                }
            }
        })
        .map(|_| ())
        .unwrap_or_else(|e| tracing::error!(error = %e, "purge receipts: no watcher thread"));
}

/// (purges not complete, age of the oldest of them in ms).
fn pending(api: &Api) -> Result<(u64, i64), ApiError> {
    let now = now_ms();
    let (mut n, mut oldest) = (0u64, 0i64);
    for (account, action, _) in api.views.get().purges(WATCHED_MAX)? {
        if let Some(r) = receipt(api, &account, &action)?
            && !r.complete
        {
            n += 1;
            oldest = oldest.max(now - r.recorded_at);
        }
    }
    Ok((n, oldest))
}

/// `GET /v1/purges/{action_id}`.
pub async fn purge(
    State(api): State<Api>,
    Caller(p): Caller,
    Path(action_id): Path<String>,
    Query(q): Query<AccountParam>,
) -> Response {
    let started = Instant::now();
    let r = async {
        let account = target(&p, q.account.as_deref())?;
        if !owns(&p, &account) && !p.roles.iter().any(|r| r == PRIVACY_ROLE) {
            return Err(ApiError::unavailable());
        }
        if action_id.len() > 1_024 {
            return Err(ApiError::unavailable());
        }
        let api = api.clone();
        blocking(move || receipt(&api, &account, &action_id)?.ok_or_else(ApiError::unavailable))
            .await
            .map(axum::Json)
    }
    .await;
    finish("purges", started, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maintenance_intervals_are_read_off_the_storage_url() {
        assert_eq!(
            maintenance_interval_ms("sqlite://b/t.db?maintenance_interval=1s"),
            Some(1_000)
        );
        assert_eq!(
            maintenance_interval_ms("sqlite://b/t.db?x=1&maintenance_interval=10m"),
            Some(600_000)
        );
        assert_eq!(maintenance_interval_ms("sqlite://b/t.db"), None);
        assert_eq!(
            maintenance_interval_ms("memory://tansu/?maintenance_interval=x"),
            None
        );
    }
}

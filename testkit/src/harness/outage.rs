//! A long broker outage while kledger serves: on librdkafka's mock cluster, the only broker
//! goes down mid-stream for a minute. The processor fails, reports itself degraded and keeps
//! retrying; the read API (served from the local view store) answers throughout; when the
//! broker is back the processor resumes by itself and the oracle holds. Then, with nothing left
//! to decide, the broker goes down again: the processor reports it (degraded) all the same, and
//! is well again once the broker is back; so does every sink (`sinks_broker_unreachable`).

use std::time::{Duration, Instant};

use kledger_processors::access::Principal;
use kledger_schemas::OwnerKind;
use kledger_topology::app;
use kledger_topology::config::PrincipalConfig;
use rdkafka::mocking::MockCluster;

use super::Row;
use super::oracle::{Findings, check};
use crate::kafka::*;

/// What the outage check did and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutageFigures {
    /// How long the broker was down, seconds.
    pub down_secs: u64,
    /// Read-API requests during the outage, and how many were answered 200.
    pub api_requests: usize,
    /// Of those, answered 200.
    pub api_ok: usize,
    /// Whether the processor reported itself degraded during the outage.
    pub degraded_seen: bool,
    /// Whether it answered everything afterwards without a restart.
    pub resumed: bool,
    /// With everything answered and the broker down again: whether the processor, with nothing
    /// to decide, reported that no broker was reachable.
    pub idle_degraded: bool,
    /// Whether that report was cleared after the broker came back.
    pub idle_cleared: bool,
    /// Whether every sink reported the broker out of reach during that outage.
    pub idle_sinks: bool,
    /// Whether none did any more after it came back.
    pub idle_sinks_cleared: bool,
    /// The sinks running then that never reported it.
    pub sinks_silent: Vec<String>,
    /// Whether the processor stayed alive.
    pub alive: bool,
    /// The oracle.
    pub oracle: Findings,
}

impl OutageFigures {
    /// The summary row.
    pub fn row(&self) -> Row {
        let o = &self.oracle;
        Row {
            check: "broker outage while serving (mock)",
            figures: format!(
                "broker down {} s mid-stream: read API answered {} of {} requests; processor degraded {}, alive {}, resumed {}; down again while idle: degraded {}, well again {}, sinks reported {}{}, cleared {}; commits {} of {}, lost {}, duplicated {}, forks {}",
                self.down_secs,
                self.api_ok,
                self.api_requests,
                yes(self.degraded_seen),
                yes(self.alive),
                yes(self.resumed),
                yes(self.idle_degraded),
                yes(self.idle_cleared),
                yes(self.idle_sinks),
                if self.sinks_silent.is_empty() {
                    String::new()
                } else {
                    format!(" (silent: {})", self.sinks_silent.join(", "))
                },
                yes(self.idle_sinks_cleared),
                o.commits,
                o.expected,
                o.lost,
                o.duplicated,
                o.forks
            ),
            ok: self.ok(),
        }
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.api_requests > 0
            && self.api_ok == self.api_requests
            && self.degraded_seen
            && self.alive
            && self.resumed
            && self.idle_degraded
            && self.idle_cleared
            && self.idle_sinks
            && self.idle_sinks_cleared
            && self.oracle.ok()
    }
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "NO" }
}

/// Polls `f` every 250 ms for at most `bound`; whether it held.
fn within(bound: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < bound {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    false
}

const PARTITIONS: i32 = 4;
const TOKEN: &str = "outage-reader-token-0123";

// Long on purpose: a harness check reads top to bottom as its steps (start, stream, outage, probes, verdict).
/// Runs the check with the broker down for `down_secs`.
pub fn outage(seed: u64, intents: usize, down_secs: u64) -> anyhow::Result<OutageFigures> {
    let mock = MockCluster::new(1)?;
    let dir = tempfile::tempdir()?;
    let mut c = config(
        &mock.bootstrap_servers(),
        dir.path(),
        PARTITIONS,
        "harness-outage",
    );
    c.kafka.create_topics = false;
    c.vectors.enabled = false;
    // Faults are aimed at the processor: no source intake (its topics are not on the mock).
    c.sources.intake = false;
    c.processor.degraded_after_attempts = 3;
    c.processor.degraded_after_ms = 10_000;
    c.processor.backoff_ms_max = 2_000;
    // A short delivery bound, so batches in flight fail within the outage (see faults.rs on
    // one request in flight on the mock).
    c.processor.delivery_timeout_ms = 5_000;
    c.kafka
        .producer_properties
        .insert("message.timeout.ms".into(), "4000".into());
    c.kafka
        .producer_properties
        .insert("max.in.flight.requests.per.connection".into(), "1".into());
    let port = kledger_topology::kafka::embedded::free_port()?;
    c.http.listen = format!("127.0.0.1:{port}");
    c.api.principals.insert(
        "reader".into(),
        PrincipalConfig {
            token: TOKEN.into(),
            principal: Principal {
                tenant_id: "t_acme".into(),
                team_id: None,
                agent_id: None,
                roles: Vec::new(),
                owner_kind: OwnerKind::User,
                owner_id: "u_reader".into(),
            },
        },
    );
    let t = c.topics();
    for name in [
        &t.intents,
        &t.outbox,
        &t.receipts,
        &t.views,
        &t.deadletter,
        &t.keys,
    ] {
        mock.create_topic(name, PARTITIONS, 1)?;
    }
    // A short first part, then a long one the processor is still deciding when the broker
    // goes down (its deliveries then fail, and the restores that follow cannot read). Both are
    // published before the processor starts, and the broker goes down as soon as the first
    // part is answered: each partition's share of the second part follows its share of the
    // first, so most of the second part is still to decide however fast the processor is.
    let records = stream(seed, 30, intents);
    let (first, _) = records.split_at(records.len() / 10);
    publish_all(&c, &records);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let running = rt.block_on(app::start(c.clone()))?;
    let answered_first = answered(&c, first, Duration::from_secs(120), || !running.finished());
    mock.broker_down(1)?;
    let auth = format!("Bearer {TOKEN}");
    let started = Instant::now();
    let (mut api_requests, mut api_ok, mut degraded_seen) = (0, 0, false);
    while started.elapsed() < Duration::from_secs(down_secs) {
        let (status, _) = http_request(
            port,
            "GET",
            "/v1/profile",
            &[("Authorization", auth.as_str())],
            "",
        );
        api_requests += 1;
        api_ok += usize::from(status == 200);
        degraded_seen |= running.status.degraded().is_some();
        std::thread::sleep(Duration::from_millis(500));
    }
    mock.broker_up(1)?;
    let resumed = answered_first.is_ok()
        && answered(&c, &records, Duration::from_secs(180), || {
            !running.finished()
        })
        .is_ok();
    // Down again with nothing left to decide: no request fails then, but the consumer's
    // statistics (every 5 s) show no broker connected, and the processor reports that once it
    // has lasted `degraded_after_ms` (before the lost session's rejoin would). It must be well
    // first, so the report seen is this outage's.
    let (mut idle_degraded, mut idle_cleared) = (false, false);
    let (mut idle_sinks, mut idle_sinks_cleared) = (false, false);
    let mut sinks_silent = Vec::new();
    // The sinks running (the views sink here): each reports the outage on its own.
    let sinks: Vec<String> = running.status.json()["sinks_caught_up"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    // Each sink reports on its own: which of them have, during the outage.
    let mut reported = std::collections::BTreeSet::<String>::new();
    let mut all_reported = || {
        reported.extend(
            running
                .status
                .unreachable_sinks()
                .into_iter()
                .map(str::to_owned),
        );
        !sinks.is_empty() && sinks.iter().all(|s| reported.contains(s))
    };
    // Well means joined too: a processor whose partitions were just revoked is not degraded
    // for `degraded_after_ms` either, and then for a reason of its own. And every sink reaches
    // the broker again after the first outage (else its report would count for this one).
    if resumed
        && within(Duration::from_secs(60), || {
            running.status.joined()
                && running.status.degraded().is_none()
                && running.status.unreachable_sinks().is_empty()
        })
    {
        mock.broker_down(1)?;
        idle_degraded = within(Duration::from_secs(40), || {
            all_reported();
            running
                .status
                .degraded()
                .is_some_and(|why| why.contains("no broker has been reachable"))
        });
        idle_sinks = all_reported() || within(Duration::from_secs(10), &mut all_reported);
        sinks_silent = sinks
            .iter()
            .filter(|s| !reported.contains(*s))
            .cloned()
            .collect();
        mock.broker_up(1)?;
        idle_cleared = within(Duration::from_secs(90), || {
            running.status.degraded().is_none()
        });
        idle_sinks_cleared = within(Duration::from_secs(30), || {
            running.status.unreachable_sinks().is_empty()
        });
    }
    let alive = !running.finished();
    let stopped = rt.block_on(running.stop());
    let (want, _) = expected(&c, &records, PARTITIONS);
    let (unique, _) = dedup_identical(&commits(&c.kafka.bootstrap_servers, &c));
    let mut oracle = check(&unique, &want);
    if stopped.is_err() {
        oracle.lost = oracle.lost.max(1);
    }
    Ok(OutageFigures {
        down_secs,
        api_requests,
        api_ok,
        degraded_seen,
        resumed,
        idle_degraded,
        idle_cleared,
        idle_sinks,
        idle_sinks_cleared,
        sinks_silent,
        alive,
        oracle,
    })
}

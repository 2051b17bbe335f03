//! What `/readyz` reports: for the processor (role `apply`), joined the group, no assigned
//! partition still restoring and not degraded (`degraded` gives the reason while partitions
//! keep failing); for each projection sink, caught up with the outbox once since it started
//! (a fresh or rebuilt projection is not ready while it is being built). A sink whose broker
//! is out of reach stays ready: it serves what its store holds, and every replica of the read
//! API leaving rotation at once would turn a broker outage into a read outage; it is reported
//! under `sinks_broker_unreachable` (and `kledger_sink_broker_unreachable`) instead.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Shared processor status.
#[derive(Debug, Default)]
pub struct Status {
    joined: AtomicBool,
    stopped: AtomicBool,
    restoring: AtomicUsize,
    assigned: Mutex<Vec<i32>>,
    no_processor: AtomicBool,
    sinks: Mutex<BTreeMap<&'static str, bool>>,
    /// Sinks whose consumer reached no broker at its last statistics report.
    sinks_unreachable: Mutex<BTreeSet<&'static str>>,
    /// Why the processor is degraded (it keeps retrying), if it is.
    degraded: Mutex<Option<String>>,
    /// Partitions owned by no member of the processor's group (the coverage check).
    unowned: Mutex<Vec<i32>>,
    /// Sinks that have caught up with the outbox at least once since this process started:
    /// their replica holds every account (stale perhaps, never partial).
    served: Mutex<BTreeSet<&'static str>>,
}

impl Status {
    /// The consumer received its first assignment.
    pub fn set_joined(&self) {
        self.joined.store(true, Ordering::Relaxed);
    }

    /// The consumer's partitions were revoked and no assignment followed yet (a rebalance,
    /// or a group lost while the broker is out of reach): not ready until the next one.
    pub fn set_rejoining(&self) {
        self.joined.store(false, Ordering::Relaxed);
    }

    /// Whether the consumer received an assignment yet.
    pub fn joined(&self) -> bool {
        self.joined.load(Ordering::Relaxed)
    }

    /// The processor stopped.
    pub fn set_stopped(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Assigned partitions and how many are restoring.
    pub fn set_partitions(&self, assigned: Vec<i32>, restoring: usize) {
        self.restoring.store(restoring, Ordering::Relaxed);
        if let Ok(mut a) = self.assigned.lock() {
            *a = assigned;
        }
    }

    /// The processor is degraded (`Some(reason)`: a partition keeps failing and is retried
    /// with backoff) or well (`None`).
    pub fn set_degraded(&self, reason: Option<String>) {
        metrics::gauge!(crate::metrics::PROCESSOR_DEGRADED).set(if reason.is_some() {
            1.0
        } else {
            0.0
        });
        if let Ok(mut d) = self.degraded.lock() {
            *d = reason;
        }
    }

    /// Partitions the processor's group leaves unowned (empty: none).
    pub fn set_unowned(&self, partitions: Vec<i32>) {
        if let Ok(mut u) = self.unowned.lock() {
            *u = partitions;
        }
    }

    fn unowned(&self) -> Vec<i32> {
        self.unowned.lock().map(|u| u.clone()).unwrap_or_default()
    }

    /// Why the processor is degraded, if it is.
    pub fn degraded(&self) -> Option<String> {
        self.degraded.lock().ok().and_then(|d| d.clone())
    }

    /// This process runs no processor (its roles exclude `apply`).
    pub fn set_no_processor(&self) {
        self.no_processor.store(true, Ordering::Relaxed);
    }

    /// Whether sink `name` has caught up with the outbox since it started.
    pub fn set_sink(&self, name: &'static str, caught_up: bool) {
        if let Ok(mut s) = self.sinks.lock() {
            s.insert(name, caught_up);
        }
        if let Ok(mut s) = self.served.lock() {
            if caught_up {
                s.insert(name);
            }
            metrics::gauge!(crate::metrics::SINK_SERVING, "sink" => name)
                .set(if s.contains(name) { 1.0 } else { 0.0 });
        }
    }

    /// Whether this process's replica of sink `name`'s projection can answer for every
    /// account: it has caught up with the outbox once since the process started (a replica
    /// still filling would answer some accounts as empty). A projection this process does not
    /// write (another process's, followed) is taken as serving.
    pub fn replica_serving(&self, name: &'static str) -> bool {
        let registered = self.sinks.lock().is_ok_and(|s| s.contains_key(name));
        !registered || self.served.lock().is_ok_and(|s| s.contains(name))
    }

    /// Whether sink `name`'s consumer reached no broker at its last statistics report.
    pub fn set_sink_unreachable(&self, name: &'static str, unreachable: bool) {
        metrics::gauge!(crate::metrics::SINK_BROKER_UNREACHABLE, "sink" => name)
            .set(if unreachable { 1.0 } else { 0.0 });
        if let Ok(mut s) = self.sinks_unreachable.lock() {
            if unreachable {
                s.insert(name);
            } else {
                s.remove(name);
            }
        }
    }

    /// The sinks whose consumer reached no broker at its last statistics report.
    pub fn unreachable_sinks(&self) -> Vec<&'static str> {
        self.sinks_unreachable
            .lock()
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    fn processor_ready(&self) -> bool {
        self.no_processor.load(Ordering::Relaxed)
            || (self.joined.load(Ordering::Relaxed)
                && !self.stopped.load(Ordering::Relaxed)
                && self.restoring.load(Ordering::Relaxed) == 0
                && self.degraded().is_none()
                && self.unowned().is_empty())
    }

    /// Ready: the processor (if any) joined, runs and restores nothing; every sink caught up.
    pub fn ready(&self) -> bool {
        self.processor_ready()
            && self
                .sinks
                .lock()
                .map(|s| s.values().all(|&c| c))
                .unwrap_or(false)
    }

    /// Alive: not stopped.
    pub fn alive(&self) -> bool {
        !self.stopped.load(Ordering::Relaxed)
    }

    /// A JSON summary.
    pub fn json(&self) -> serde_json::Value {
        let assigned = self.assigned.lock().map(|a| a.clone()).unwrap_or_default();
        let sinks = self.sinks.lock().map(|s| s.clone()).unwrap_or_default();
        serde_json::json!({
            "ready": self.ready(),
            "processor": !self.no_processor.load(Ordering::Relaxed),
            "sinks_caught_up": sinks,
            "sinks_broker_unreachable": self.unreachable_sinks(),
            "joined": self.joined.load(Ordering::Relaxed),
            "stopped": self.stopped.load(Ordering::Relaxed),
            "restoring": self.restoring.load(Ordering::Relaxed),
            "assigned": assigned,
            "degraded": self.degraded(),
            "unowned": self.unowned(),
        })
    }
}

//! What `/readyz` reports: joined the group, and no assigned partition still restoring.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Shared processor status.
#[derive(Debug, Default)]
pub struct Status {
    joined: AtomicBool,
    stopped: AtomicBool,
    restoring: AtomicUsize,
    assigned: Mutex<Vec<i32>>,
}

impl Status {
    /// The consumer received its first assignment.
    pub fn set_joined(&self) {
        self.joined.store(true, Ordering::Relaxed);
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

    /// Ready: joined, running, nothing restoring.
    pub fn ready(&self) -> bool {
        self.joined.load(Ordering::Relaxed)
            && !self.stopped.load(Ordering::Relaxed)
            && self.restoring.load(Ordering::Relaxed) == 0
    }

    /// Alive: not stopped.
    pub fn alive(&self) -> bool {
        !self.stopped.load(Ordering::Relaxed)
    }

    /// A JSON summary.
    pub fn json(&self) -> serde_json::Value {
        let assigned = self.assigned.lock().map(|a| a.clone()).unwrap_or_default();
        serde_json::json!({
            "ready": self.ready(),
            "joined": self.joined.load(Ordering::Relaxed),
            "stopped": self.stopped.load(Ordering::Relaxed),
            "restoring": self.restoring.load(Ordering::Relaxed),
            "assigned": assigned,
        })
    }
}

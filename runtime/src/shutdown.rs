//! The shutdown signal of a process: triggered once, seen by every part, and waited on
//! instead of polled with sleeps (a part that pauses between retries wakes at once).
//!
//! May not touch: anything else; every layer may use it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
struct Inner {
    triggered: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    notify: tokio::sync::Notify,
}

/// A shutdown signal; clones share it.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(Arc<Inner>);

impl Shutdown {
    /// A signal not yet triggered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Triggers it: every waiter wakes, every later look sees it.
    pub fn trigger(&self) {
        self.0.triggered.store(true, Ordering::SeqCst);
        let _guard = self.0.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.0.wake.notify_all();
        self.0.notify.notify_waiters();
    }

    /// Whether it was triggered.
    pub fn is_triggered(&self) -> bool {
        self.0.triggered.load(Ordering::Relaxed)
    }

    /// Sleeps for `pause`, or less when triggered meanwhile. Returns whether it was triggered.
    pub fn sleep(&self, pause: Duration) -> bool {
        let until = Instant::now() + pause;
        let mut guard = self.0.lock.lock().unwrap_or_else(|e| e.into_inner());
        while !self.is_triggered() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            guard = match self.0.wake.wait_timeout(guard, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        self.is_triggered()
    }

    /// Waits until it is triggered (async).
    pub async fn wait(&self) {
        loop {
            let notified = self.0.notify.notified();
            if self.is_triggered() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_ends_when_triggered() {
        let s = Shutdown::new();
        let t = s.clone();
        let started = Instant::now();
        let h = std::thread::spawn(move || t.sleep(Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(50));
        s.trigger();
        assert!(h.join().unwrap());
        assert!(started.elapsed() < Duration::from_secs(30));
        assert!(
            s.sleep(Duration::from_secs(30)),
            "a triggered signal does not sleep"
        );
    }

    #[test]
    fn a_sleep_without_trigger_lasts_its_pause() {
        let s = Shutdown::new();
        let started = Instant::now();
        assert!(!s.sleep(Duration::from_millis(30)));
        assert!(started.elapsed() >= Duration::from_millis(30));
    }
}

//! The in-memory twin of the RocksDB store: same keys, same semantics, no durability.

use std::collections::BTreeMap;
use std::sync::RwLock;

use crate::StateError;
use crate::keys::{Cf, partition};
use crate::store::{Entries, StateRead, StateStore, Visit, WriteSet};

type Tables = BTreeMap<Cf, BTreeMap<Vec<u8>, Vec<u8>>>;

/// A store held in ordered maps.
#[derive(Debug, Default)]
pub struct MemoryStore {
    cfs: RwLock<Tables>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> Result<std::sync::RwLockReadGuard<'_, Tables>, StateError> {
        self.cfs
            .read()
            .map_err(|_| StateError::Corrupt("memory store lock poisoned".into()))
    }
}

impl StateRead for MemoryStore {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self.read()?.get(&cf).and_then(|m| m.get(key)).cloned())
    }

    fn scan(&self, cf: Cf, prefix: &[u8], limit: usize) -> Result<Entries, StateError> {
        let guard = self.read()?;
        let Some(m) = guard.get(&cf) else {
            return Ok(Vec::new());
        };
        Ok(m.range(prefix.to_vec()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }
}

impl StateStore for MemoryStore {
    fn write_all(&self, sets: &[&WriteSet]) -> Result<(), StateError> {
        let mut guard = self
            .cfs
            .write()
            .map_err(|_| StateError::Corrupt("memory store lock poisoned".into()))?;
        for (cf, k, v) in sets.iter().flat_map(|w| w.iter()) {
            let m = guard.entry(cf).or_default();
            match v {
                Some(v) => m.insert(k.to_vec(), v.to_vec()),
                None => m.remove(k),
            };
        }
        Ok(())
    }

    fn drop_partition(&self, p: i32) -> Result<(), StateError> {
        let prefix = partition(p);
        let mut guard = self
            .cfs
            .write()
            .map_err(|_| StateError::Corrupt("memory store lock poisoned".into()))?;
        for m in guard.values_mut() {
            m.retain(|k, _| !k.starts_with(&prefix));
        }
        Ok(())
    }

    fn for_each(&self, cf: Cf, f: Visit<'_>) -> Result<(), StateError> {
        let guard = self.read()?;
        if let Some(m) = guard.get(&cf) {
            for (k, v) in m {
                f(k, v)?;
            }
        }
        Ok(())
    }
}

//! kledger patch (`KLEDGER-PATCH.md`, change 4): the on-disk store of a mutable keyword or
//! numeric index, absent while appendable indexes live in memory
//! ([`super::set_in_memory_appendable_indexes`]). Every write and maintenance call is a no-op
//! without a store, so the indexes keep upstream's calls and error messages.

use std::path::{Path, PathBuf};

use crate::common::counter::referenced_counter::HwMetricRefCounter;
use crate::common::types::PointOffsetType;
use crate::gridstore::{Blob, Gridstore, Result};
use crate::segment::common::Flusher;
use crate::segment::common::operation_error::{OperationError, OperationResult};

/// Whether a mutable index opening at `path` lives in memory. If so, the files a persisted
/// index left there are deleted first: nothing writes them any more, so they would go stale.
pub(crate) fn in_memory_only(path: &Path) -> OperationResult<bool> {
    if !super::in_memory_appendable_indexes() {
        return Ok(false);
    }
    if path.exists() {
        std::fs::remove_dir_all(path)?;
    }
    Ok(true)
}

/// A mutable index's gridstore, or none (in memory only).
#[derive(Debug)]
pub struct IndexStore<V>(Option<Gridstore<V>>);

impl<V> IndexStore<V> {
    /// No store: the index lives in memory only.
    pub(crate) fn none() -> Self {
        Self(None)
    }

    /// Whether values are written to disk.
    pub(crate) fn is_persisted(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn flusher(&self) -> Flusher {
        match &self.0 {
            Some(store) => {
                let flush = store.flusher();
                Box::new(move || flush().map_err(OperationError::from))
            }
            None => Box::new(|| Ok(())),
        }
    }
}

impl<V: Blob> IndexStore<V> {
    pub(crate) fn put_value(
        &mut self,
        point_offset: PointOffsetType,
        value: &V,
        hw_counter: HwMetricRefCounter,
    ) -> Result<bool> {
        match &mut self.0 {
            Some(store) => store.put_value(point_offset, value, hw_counter),
            None => Ok(false),
        }
    }

    pub(crate) fn delete_value(&mut self, point_offset: PointOffsetType) -> Result<Option<V>> {
        match &mut self.0 {
            Some(store) => store.delete_value(point_offset),
            None => Ok(None),
        }
    }

    pub(crate) fn clear(&mut self) -> Result<()> {
        self.0.as_mut().map_or(Ok(()), Gridstore::clear)
    }

    pub(crate) fn wipe(self) -> Result<()> {
        self.0.map_or(Ok(()), Gridstore::wipe)
    }

    pub(crate) fn clear_cache(&self) -> Result<()> {
        self.0.as_ref().map_or(Ok(()), Gridstore::clear_cache)
    }

    pub(crate) fn files(&self) -> Vec<PathBuf> {
        self.0.as_ref().map(Gridstore::files).unwrap_or_default()
    }
}

impl<V> From<Gridstore<V>> for IndexStore<V> {
    fn from(store: Gridstore<V>) -> Self {
        Self(Some(store))
    }
}

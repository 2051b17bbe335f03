use crate::gridstore::Blob;
use crate::segment::index::field_index::index_store::IndexStore;

use self::inner::MutableMapIndexInner;
use super::MapIndexKey;

pub(super) mod inner;
mod lifecycle;
pub mod read_only;
mod read_ops;

pub struct MutableMapIndex<N: MapIndexKey + ?Sized>
where
    Vec<<N as MapIndexKey>::Owned>: Blob + Send + Sync,
{
    pub(super) inner: MutableMapIndexInner<N>,
    /// No store when the index lives in memory only (kledger patch, change 4).
    pub(super) storage: IndexStore<Vec<<N as MapIndexKey>::Owned>>,
}

use crate::gridstore::{Blob, Gridstore};

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
    /// `None` when the index lives in memory only (kledger patch, change 4:
    /// [`crate::segment::index::field_index::set_in_memory_appendable_indexes`]).
    pub(super) storage: Option<Gridstore<Vec<<N as MapIndexKey>::Owned>>>,
}

//! An in-process ledger for tests: the real decide + state code over the in-memory store,
//! one record at a time, with record positions assigned the way a fresh topic would.

use std::collections::BTreeMap;

use kledger_processors::routing::partition_for;
use kledger_processors::{Decision, Limits, RecordMeta};
use kledger_schemas::avro::{AvroCodec, Reader};
use kledger_schemas::{Commit, IntentRecord, Row};
use kledger_state::{Applier, Cf, MemoryStore, StateStore, keys};

/// The real apply path over a [`MemoryStore`].
#[derive(Debug)]
pub struct Ledger {
    store: MemoryStore,
    partitions: i32,
    limits: Limits,
    next_offset: BTreeMap<i32, i64>,
    /// Every commit, in decision order.
    pub commits: Vec<Commit>,
    /// Every record applied, in order (what to publish for the Kafka path to see the same).
    pub records: Vec<IntentRecord>,
}

impl Ledger {
    /// An empty ledger over `partitions` partitions.
    pub fn new(partitions: i32) -> Self {
        Self::with_limits(partitions, Limits::default())
    }

    /// An empty ledger deciding within `limits` (a small record budget splits purges).
    pub fn with_limits(partitions: i32, limits: Limits) -> Self {
        Self {
            store: MemoryStore::new(),
            partitions,
            limits,
            next_offset: BTreeMap::new(),
            commits: Vec::new(),
            records: Vec::new(),
        }
    }

    /// The bounds and rules it decides within.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The store.
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }

    /// Assigns partition and offset (unless set) like a fresh topic with the murmur2
    /// partitioner would.
    pub fn position(&mut self, r: &IntentRecord) -> RecordMeta {
        let partition = r
            .partition
            .unwrap_or_else(|| partition_for(r.intent.account_id.as_bytes(), self.partitions));
        let next = self.next_offset.entry(partition).or_insert(0);
        let offset = r.offset.unwrap_or(*next);
        *next = offset + 1;
        RecordMeta {
            timestamp: r.timestamp,
            partition,
            offset,
        }
    }

    /// Decides one record and makes its writes durable in the store.
    pub fn apply(&mut self, r: &IntentRecord) -> Decision {
        let meta = self.position(r);
        self.apply_at(r, meta)
    }

    /// Decides one record at an explicit position.
    pub fn apply_at(&mut self, r: &IntentRecord, meta: RecordMeta) -> Decision {
        let mut applier = Applier::new(&self.store, self.limits);
        let d = applier
            .apply(&r.intent, &meta)
            .expect("memory store never fails");
        let writes = applier.into_writes();
        self.store.write(&writes).expect("memory store never fails");
        self.commits.extend(d.commits.iter().cloned());
        self.records.push(r.clone());
        d
    }

    /// A row as stored.
    pub fn row(&self, account: &str, memory_id: &str) -> Option<Row> {
        let p = partition_for(account.as_bytes(), self.partitions);
        let v = kledger_state::StateRead::get(
            &self.store,
            Cf::Rows,
            &keys::child(p, account, memory_id.as_bytes()).ok()?,
        )
        .ok()??;
        Row::decode(&mut Reader::new(&v)).ok()
    }

    /// Every stored row of an account, by memory id.
    pub fn rows(&self, account: &str) -> Vec<Row> {
        let p = partition_for(account.as_bytes(), self.partitions);
        let Ok(prefix) = keys::account(p, account) else {
            return Vec::new();
        };
        let entries = kledger_state::StateRead::scan(&self.store, Cf::Rows, &prefix, usize::MAX)
            .expect("memory store");
        entries
            .iter()
            .filter_map(|(_, v)| Row::decode(&mut Reader::new(v)).ok())
            .collect()
    }
}

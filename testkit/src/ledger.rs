//! An in-process ledger for tests: the real decide + state code over the in-memory store,
//! one record at a time, with record positions assigned the way a fresh topic would.

use std::collections::BTreeMap;

use kledger_processors::routing::partition_for;
use kledger_processors::{Decision, Limits, RecordMeta};
use kledger_schemas::avro::{AvroCodec, Reader};
use kledger_schemas::{Commit, IntentRecord, Row};
use kledger_state::{Applier, Cf, KeySource, MemoryStore, StateStore, keys};

/// Data keys derived from the account and memory id (SHA-256 over them), for tests only: the same row
/// gets the same key in every run and in any interleaving, so sealed commits compare byte for
/// byte. kledger itself draws every data key at random ([`kledger_state::RandomKeys`]); the
/// Kafka tests run that path.
#[derive(Debug, Clone, Copy, Default)]
pub struct DerivedKeys;

impl KeySource for DerivedKeys {
    fn new_key(
        &mut self,
        account: &str,
        memory_id: &str,
    ) -> Result<kledger_processors::seal::DataKey, kledger_state::StateError> {
        let derive = |what: &str| -> [u8; 32] {
            let mut h = kledger_processors::ids::FieldHasher::new(what);
            h.str(account).str(memory_id);
            h.finish()
        };
        let mut random = [0u8; 8];
        random.copy_from_slice(&derive("kledger.testkit.key_id")[..8]);
        Ok(kledger_processors::seal::DataKey {
            // As kledger's own ids: the row's tag, then (here derived) random bytes.
            id: kledger_processors::seal::key_id(memory_id, &random),
            key: derive("kledger.testkit.key"),
        })
    }
}

/// The keys-topic records of the data keys `commits` were sealed with by a [`Ledger`]
/// ([`DerivedKeys`]), as the processor writes them: what a projection's key cache reads
/// before it folds those commits. Offsets count from 0 per partition of `partitions`.
pub fn key_records(commits: &[Commit], partitions: i32) -> Vec<kledger_state::KeyRecord> {
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    let mut out = Vec::new();
    for c in commits {
        for op in &c.ops {
            let Some(s) = op
                .row
                .sealed
                .as_ref()
                .filter(|s| !s.ciphertext.0.is_empty())
            else {
                continue;
            };
            let key = DerivedKeys
                .new_key(&c.account_id, &op.row.memory_id)
                .expect("derived");
            assert_eq!(key.id, s.key_id, "sealed by a testkit ledger");
            let p = partition_for(c.account_id.as_bytes(), partitions);
            let offset = next.entry(p).or_insert(0);
            out.push(kledger_state::KeyRecord {
                partition: p,
                offset: *offset,
                key: keys::key_record_key(&c.account_id, &key.id),
                value: Some(keys::key_value(&key.key, &op.row.memory_id)),
            });
            *offset += 1;
        }
    }
    out
}

/// The real apply path over a [`MemoryStore`] (with [`DerivedKeys`]).
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
        let mut applier = Applier::with_keys(&self.store, self.limits, Box::new(DerivedKeys));
        let d = applier
            .apply(&r.intent, &meta)
            .expect("memory store never fails");
        let writes = applier.into_writes();
        self.store.write(&writes).expect("memory store never fails");
        self.commits.extend(d.commits.iter().cloned());
        self.records.push(r.clone());
        d
    }

    /// A row as stored, opened with its data key (rules v4).
    pub fn row(&self, account: &str, memory_id: &str) -> Option<Row> {
        let p = partition_for(account.as_bytes(), self.partitions);
        let v = kledger_state::StateRead::get(
            &self.store,
            Cf::Rows,
            &keys::child(p, account, memory_id.as_bytes()).ok()?,
        )
        .ok()??;
        Some(self.open(p, account, Row::decode(&mut Reader::new(&v)).ok()?))
    }

    /// Every stored row of an account, by memory id, opened with their data keys.
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
            .map(|r| self.open(p, account, r))
            .collect()
    }

    /// Opens a stored row with its data key from the store (as it is when it has none).
    fn open(&self, p: i32, account: &str, mut row: Row) -> Row {
        if let Some(s) = row.sealed.as_ref().filter(|s| !s.ciphertext.0.is_empty())
            && let Ok(Some(key)) = kledger_state::data_key(&self.store, p, account, &s.key_id)
        {
            kledger_processors::seal::open(account, &mut row, &key)
                .expect("a row opens with its key");
        }
        row
    }
}

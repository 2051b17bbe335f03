//! `kledger replay verify`: re-decide the intents topic into a scratch state and compare the
//! result, commit by commit, with the outbox.
//!
//! Per partition, in offset order: intents are decided in batches with the processor's own
//! code ([`crate::apply::batch::decide_batch`]) against the scratch state; every commit it
//! produces must be the next record of the outbox partition, byte for byte (which also makes
//! its head hash the same). A record of the outbox that repeats a commit already matched (same
//! account, seq and head hash: an old owner's write after a rebalance) is skipped and counted,
//! as the fold does. The first difference stops the run; it names the partition, the outbox
//! offset, the intent offset, the account and commit_seq, and the fields that differ.
//!
//! Starting from an intent offset (`--from partition:offset`) first folds the outbox commits of
//! earlier intents into the scratch state, so decisions see the state they saw live. The same
//! happens where the broker no longer holds the earliest intents (the intents topic is kept
//! for `kafka.intents_retention_ms`): a partition starts at its first retained intent, so the
//! check covers the retained window on top of a state folded from the outbox.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::Context;
use kledger_processors::seal::DataKey;
use kledger_processors::{Limits, ids};
use kledger_schemas::Commit;
use kledger_schemas::avro::{SchemaLookup, decode};
use kledger_state::{
    Applier, KeySource, Overlay, StateError, StateRead, StateStore, keys, restore_key_record,
    restore_record,
};
use rdkafka::message::{Message, OwnedMessage};
use std::time::Instant;

use kledger_kafka::clients::RestoreContext;
use kledger_kafka::reader::{PartitionReader, SOURCE_PROBE};
use kledger_runtime::config::Config;

use crate::apply::batch::{OutKind, Outgoing, REFUSED, Refused, decide_batch};
use kledger_kafka::codec::Codec;
use kledger_kafka::topics::Topics;

/// Field differences listed in a report at most.
pub const FIELD_DIFFS_MAX: usize = 20;

/// Reads one topic partition in offset order.
pub trait Source {
    /// The next record, or `None` at the end.
    fn next_record(&mut self) -> anyhow::Result<Option<OwnedMessage>>;
}

impl<I: Iterator<Item = OwnedMessage>> Source for I {
    fn next_record(&mut self) -> anyhow::Result<Option<OwnedMessage>> {
        Ok(self.next())
    }
}

/// What a verified partition held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Intents re-decided.
    pub intents: u64,
    /// Commits compared and found identical.
    pub commits: u64,
    /// Outbox records skipped as identical repeats of a matched commit.
    pub repeats: u64,
    /// Outbox commits folded before the start offset (not compared).
    pub folded: u64,
    /// Outbox commits taken as they are because their intent touches rows a purge has since
    /// erased (their data keys are destroyed, so the content cannot be decided again): their
    /// chain and head hashes are checked, their content not (rules v4).
    pub adopted: u64,
    /// Partitions that started later than asked, at their first retained intent (the broker
    /// deleted the earlier ones): partition → that intent's offset (`i64::MAX`: none retained).
    pub expired: BTreeMap<i32, i64>,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.intents += o.intents;
        self.commits += o.commits;
        self.repeats += o.repeats;
        self.folded += o.folded;
        self.adopted += o.adopted;
        self.expired.extend(&o.expired);
    }
}

/// How replay and outbox differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffKind {
    /// The outbox record is not the commit replay produced.
    Mismatch,
    /// Replay produced a commit the outbox does not have (the outbox ended).
    MissingFromOutbox,
    /// The outbox has a commit replay did not produce.
    NotProduced,
}

/// The first difference found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// What differs.
    pub kind: DiffKind,
    /// The partition.
    pub partition: i32,
    /// The outbox record's offset (none when the outbox ended).
    pub outbox_offset: Option<i64>,
    /// The intent offset, account and commit_seq of the outbox record where there is one (a
    /// record that does not decode: of the replayed commit), else of the replayed commit.
    pub intent_offset: Option<i64>,
    /// The account (see `intent_offset`).
    pub account_id: String,
    /// The commit_seq (see `intent_offset`).
    pub commit_seq: i64,
    /// Fields that differ: (path, replayed, outbox).
    pub fields: Vec<(String, String, String)>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            DiffKind::Mismatch => "outbox record differs from the replayed commit",
            DiffKind::MissingFromOutbox => "replayed commit missing from the outbox",
            DiffKind::NotProduced => "outbox commit not produced by replay",
        };
        write!(
            f,
            "{what}: partition {} outbox offset {} intent offset {} account {} commit_seq {}",
            self.partition,
            self.outbox_offset
                .map_or_else(|| "-".to_owned(), |o| o.to_string()),
            self.intent_offset
                .map_or_else(|| "-".to_owned(), |o| o.to_string()),
            self.account_id,
            self.commit_seq
        )?;
        for (path, replayed, outbox) in &self.fields {
            write!(f, "\n  {path}: replayed {replayed} / outbox {outbox}")?;
        }
        Ok(())
    }
}

/// The result of verifying partitions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Totals over the partitions verified.
    pub counts: Counts,
    /// Partitions verified completely.
    pub partitions: Vec<i32>,
    /// The first difference, if any (verification stops there).
    pub difference: Option<Difference>,
}

/// The outbox partition being compared, with one record held back.
struct Cursor<'a> {
    outbox: &'a mut dyn Source,
    held: Option<OwnedMessage>,
}

impl Cursor<'_> {
    fn next(&mut self) -> anyhow::Result<Option<OwnedMessage>> {
        match self.held.take() {
            Some(r) => Ok(Some(r)),
            None => self.outbox.next_record(),
        }
    }
}

/// What verifying one partition shares between its steps.
struct Walk<'a, S: ?Sized> {
    store: &'a S,
    codec: &'a Codec,
    limits: Limits,
    p: i32,
    counts: Counts,
    /// Last matched (or folded) commit_seq per account: what a repeat may repeat.
    matched: BTreeMap<String, i64>,
    cursor: Cursor<'a>,
}

/// Data keys read from the keys topic, by (account, memory id): the key each new row was
/// sealed with (the first written, as the outbox's first commit used), so replayed commits are
/// byte for byte the outbox's. A row whose key a purge destroyed is sealed under a scratch key
/// of its own: its content is still decided again from its intent, and checked through its MAC
/// (which the head hash covers), but its ciphertext cannot be reproduced
/// ([`same_but_sealing`]).
#[derive(Default)]
struct ReplayKeys(BTreeMap<(String, String), DataKey>);

impl KeySource for &ReplayKeys {
    fn new_key(&mut self, account: &str, memory_id: &str) -> Result<DataKey, StateError> {
        match self.0.get(&(account.to_owned(), memory_id.to_owned())) {
            Some(k) => Ok(k.clone()),
            None => kledger_state::RandomKeys.new_key(account, memory_id),
        }
    }
}

/// Reads partition `p` of the keys topic into `store` (as a restore does) and returns the
/// keys by row.
fn read_keys<S: StateStore + ?Sized>(
    store: &S,
    p: i32,
    keys_source: &mut dyn Source,
) -> anyhow::Result<ReplayKeys> {
    let mut by_row = ReplayKeys::default();
    let mut destroyed = std::collections::BTreeSet::new();
    let mut overlay = Overlay::new(store);
    while let Some(m) = keys_source.next_record()? {
        let k = m.key().unwrap_or_default();
        restore_key_record(&mut overlay, p, m.offset(), k, m.payload())
            .with_context(|| format!("keys partition {p} offset {}", m.offset()))?;
        let Some((acct, key_id)) = keys::parse_key_record_key(k) else {
            continue;
        };
        match m.payload().filter(|v| !v.is_empty()) {
            Some(v) => {
                if let Some((key, memory_id)) = keys::parse_key_value(v)? {
                    by_row
                        .0
                        .entry((acct.to_owned(), memory_id))
                        .or_insert(DataKey {
                            id: key_id.to_owned(),
                            key,
                        });
                }
            }
            None => {
                destroyed.insert((acct.to_owned(), key_id.to_owned()));
            }
        }
    }
    by_row
        .0
        .retain(|(acct, _), k| !destroyed.contains(&(acct.clone(), k.id.clone())));
    store.write(&overlay.into_writes())?;
    Ok(by_row)
}

/// Whether two commits are the same decision sealed under other data keys (an old owner's
/// write sealed a new row under its own key; a purge has destroyed the key a row was sealed
/// with): equal head hashes, equal but for the rows' key ids and ciphertexts, and every
/// ciphertext of `got` whose key `store` still holds opens to the content its MAC names. The
/// content of a row whose key is destroyed is checked by its MAC alone.
fn same_but_sealing<S: StateStore + ?Sized>(
    want: &Commit,
    got: &Commit,
    store: &S,
    p: i32,
    limits: &Limits,
) -> anyhow::Result<bool> {
    let Some(secret) = limits.secret() else {
        return Ok(false);
    };
    let unsealed = |c: &Commit| {
        let mut c = c.clone();
        for op in &mut c.ops {
            if let Some(s) = &mut op.row.sealed {
                s.key_id.clear();
                s.ciphertext = Default::default();
            }
        }
        c
    };
    if !(want.keyed && want.head_hash == got.head_hash && unsealed(want) == unsealed(got)) {
        return Ok(false);
    }
    let acct = &got.account_id;
    for op in &got.ops {
        let Some(s) = op
            .row
            .sealed
            .as_ref()
            .filter(|s| !s.ciphertext.0.is_empty())
        else {
            continue;
        };
        let Some(key) = kledger_state::data_key(store, p, acct, &s.key_id)? else {
            // Destroyed by a purge: nothing can open it any more, replay included.
            continue;
        };
        let mut row = op.row.clone();
        if kledger_processors::seal::open(acct, &mut row, &key).is_err()
            || kledger_processors::seal::mac(secret, acct, &row) != s.mac
        {
            return Ok(false);
        }
    }
    Ok(true)
}

impl<S: StateStore + ?Sized> Walk<'_, S> {
    /// Matches the replayed commits `out` against the next outbox records, skipping repeats;
    /// the first difference.
    fn match_commits(&mut self, out: &[Outgoing]) -> anyhow::Result<Option<Difference>> {
        for out in out.iter().filter(|o| o.kind == OutKind::Outbox) {
            let want: Commit =
                decode(&out.payload, self.codec).context("decode a replayed commit")?;
            loop {
                let Some(rec) = self.cursor.next()? else {
                    return Ok(Some(Difference {
                        kind: DiffKind::MissingFromOutbox,
                        partition: self.p,
                        outbox_offset: None,
                        intent_offset: Some(want.intent_offset),
                        account_id: want.account_id.clone(),
                        commit_seq: want.commit_seq,
                        fields: Vec::new(),
                    }));
                };
                let got = decode_commit(&rec, self.codec);
                let same = rec.payload() == Some(out.payload.as_slice())
                    || match &got {
                        Ok(g) => same_but_sealing(&want, g, self.store, self.p, &self.limits)?,
                        Err(_) => false,
                    };
                if same {
                    self.matched
                        .insert(want.account_id.clone(), want.commit_seq);
                    self.counts.commits += 1;
                    break;
                }
                if is_repeat(self.store, self.p, &rec, &self.matched, self.codec)? {
                    self.counts.repeats += 1;
                    continue;
                }
                // Named by the outbox record (where it is); the fields show what replay made.
                let fields = match &got {
                    Ok(got) => field_diff(&want, got),
                    Err(e) => vec![("record".into(), "a commit".into(), e.clone())],
                };
                let named = got.as_ref().unwrap_or(&want);
                return Ok(Some(Difference {
                    kind: DiffKind::Mismatch,
                    partition: self.p,
                    outbox_offset: Some(rec.offset()),
                    intent_offset: Some(named.intent_offset),
                    account_id: named.account_id.clone(),
                    commit_seq: named.commit_seq,
                    fields,
                }));
            }
        }
        Ok(None)
    }

    /// Takes the outbox's commits of the intent at `offset` as they are (their head hashes and
    /// chain checked by the fold): the intent touches rows a purge has erased since.
    fn adopt(&mut self, offset: i64) -> anyhow::Result<()> {
        let mut overlay = Overlay::new(self.store);
        while let Some(rec) = self.cursor.next()? {
            match decode_commit(&rec, self.codec) {
                Ok(c) if c.intent_offset == offset => {
                    restore_record(
                        &mut overlay,
                        self.p,
                        rec.offset(),
                        rec.payload().unwrap_or_default(),
                        self.codec,
                    )
                    .with_context(|| {
                        format!(
                            "adopting outbox partition {} offset {}",
                            self.p,
                            rec.offset()
                        )
                    })?;
                    self.matched.insert(c.account_id, c.commit_seq);
                    self.counts.adopted += 1;
                }
                _ => {
                    self.cursor.held = Some(rec);
                    break;
                }
            }
        }
        self.store.write(&overlay.into_writes())?;
        Ok(())
    }
}

/// Verifies one partition: `intents` from `from` (or from the first retained intent after it),
/// `outbox` from its start, with the data keys of `keys` (read first). Long on purpose:
/// the comparison walks two topics in step (folding what precedes the start, deciding a batch,
/// matching each commit, skipping repeats, adopting what purges made undecidable, reporting
/// the first difference), and its state is shared by every step (`Walk`).
#[allow(clippy::too_many_arguments)]
pub fn verify_partition<S: StateStore + ?Sized>(
    store: &S,
    topics: &Topics,
    partitions: i32,
    p: i32,
    from: i64,
    intents: &mut dyn Source,
    outbox: &mut dyn Source,
    keys_source: &mut dyn Source,
    codec: &Codec,
    limits: Limits,
    refused: &Refused,
    batch_records: usize,
    progress: &dyn Fn(u64),
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<(Counts, Option<Difference>)> {
    let row_keys = read_keys(store, p, keys_source)?;
    let mut w = Walk {
        store,
        codec,
        limits,
        p,
        counts: Counts::default(),
        matched: BTreeMap::new(),
        cursor: Cursor { outbox, held: None },
    };
    // The first intent at or after `from` that the broker still holds is the start: the
    // commits of every intent before it are folded, not compared.
    let mut first: Option<OwnedMessage> = None;
    while let Some(m) = intents.next_record()? {
        if m.offset() >= from {
            first = Some(m);
            break;
        }
    }
    let start = first.as_ref().map_or(i64::MAX, |m| m.offset());
    if start > from {
        w.counts.expired.insert(p, start);
    }
    if start > 0 {
        let mut overlay = Overlay::new(store);
        while let Some(rec) = w.cursor.next()? {
            match decode_commit(&rec, codec) {
                Ok(c) if c.intent_offset < start => {
                    restore_record(
                        &mut overlay,
                        p,
                        rec.offset(),
                        rec.payload().unwrap_or_default(),
                        codec,
                    )
                    .with_context(|| {
                        format!("folding outbox partition {p} offset {}", rec.offset())
                    })?;
                    w.matched.insert(c.account_id, c.commit_seq);
                    w.counts.folded += 1;
                }
                _ => {
                    w.cursor.held = Some(rec);
                    break;
                }
            }
        }
        store.write(&overlay.into_writes())?;
    }
    let decide = |batch: &[OwnedMessage]| -> Result<_, StateError> {
        let mut applier = Applier::with_keys(store, limits, Box::new(&row_keys));
        let decided = decide_batch(
            &mut applier,
            batch,
            topics,
            partitions,
            codec,
            limits.record_bytes_max,
            refused,
        )?;
        store.write(&applier.into_writes())?;
        Ok(decided)
    };
    let mut batch = Vec::with_capacity(batch_records);
    let mut ended = false;
    while !ended {
        if stop() {
            // A lower partition differs: this one's result is not needed.
            return Ok((w.counts, None));
        }
        batch.clear();
        batch.extend(first.take());
        while batch.len() < batch_records {
            match intents.next_record()? {
                Some(m) if m.offset() < start => {}
                Some(m) => batch.push(m),
                None => {
                    ended = true;
                    break;
                }
            }
        }
        if batch.is_empty() {
            break;
        }
        w.counts.intents += batch.len() as u64;
        progress(batch.len() as u64);
        match decide(&batch) {
            Ok(decided) => {
                if let Some(d) = w.match_commits(&decided.out)? {
                    return Ok((w.counts, Some(d)));
                }
            }
            Err(StateError::Shredded { .. }) => {
                // Nothing of the batch was written: one intent at a time, adopting the outbox's
                // commits of those a purge made undecidable.
                for m in &batch {
                    match decide(std::slice::from_ref(m)) {
                        Ok(decided) => {
                            if let Some(d) = w.match_commits(&decided.out)? {
                                return Ok((w.counts, Some(d)));
                            }
                        }
                        Err(StateError::Shredded { .. }) => w.adopt(m.offset())?,
                        Err(e) => return Err(e.into()),
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    while let Some(rec) = w.cursor.next()? {
        if is_repeat(store, p, &rec, &w.matched, codec)? {
            w.counts.repeats += 1;
            continue;
        }
        let got = decode_commit(&rec, codec).ok();
        return Ok((
            w.counts,
            Some(Difference {
                kind: DiffKind::NotProduced,
                partition: p,
                outbox_offset: Some(rec.offset()),
                intent_offset: got.as_ref().map(|c| c.intent_offset),
                account_id: got
                    .as_ref()
                    .map(|c| c.account_id.clone())
                    .unwrap_or_default(),
                commit_seq: got.as_ref().map_or(0, |c| c.commit_seq),
                fields: Vec::new(),
            }),
        ));
    }
    Ok((w.counts, None))
}

/// A partition's intents, outbox and keys-topic readers.
pub type Sources = (Box<dyn Source>, Box<dyn Source>, Box<dyn Source>);

/// Partitions verified at once (each waits mostly on its fetches).
pub const WORKERS: usize = 4;

/// Runs [`verify_partition`] over every partition, [`WORKERS`] at a time. The report names the
/// difference of the lowest partition that has one; partitions above it stop early.
#[allow(clippy::too_many_arguments)]
pub fn verify<S: StateStore + Sync + ?Sized>(
    store: &S,
    topics: &Topics,
    partitions: i32,
    from: &BTreeMap<i32, i64>,
    open: &(dyn Fn(i32) -> anyhow::Result<Sources> + Sync),
    codec: &Codec,
    limits: Limits,
    refused: &Refused,
    batch_records: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> anyhow::Result<Report> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicI32, Ordering};
    let next = AtomicI32::new(0);
    let lowest_failed = AtomicI32::new(i32::MAX);
    type Outcome = anyhow::Result<(Counts, Option<Difference>)>;
    let results: Mutex<BTreeMap<i32, Outcome>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS.min(partitions.max(1) as usize) {
            scope.spawn(|| {
                loop {
                    let p = next.fetch_add(1, Ordering::Relaxed);
                    if p >= partitions || p > lowest_failed.load(Ordering::Relaxed) {
                        return;
                    }
                    let start = from.get(&p).copied().unwrap_or(0);
                    let stop = || p > lowest_failed.load(Ordering::Relaxed);
                    let r = open(p).and_then(|(mut intents, mut outbox, mut keys)| {
                        verify_partition(
                            store,
                            topics,
                            partitions,
                            p,
                            start,
                            intents.as_mut(),
                            outbox.as_mut(),
                            keys.as_mut(),
                            codec,
                            limits,
                            refused,
                            batch_records,
                            progress,
                            &stop,
                        )
                    });
                    if !matches!(r, Ok((_, None))) {
                        lowest_failed.fetch_min(p, Ordering::Relaxed);
                    }
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(p, r);
                }
            });
        }
    });
    let mut report = Report::default();
    for (p, r) in results.into_inner().unwrap_or_else(|e| e.into_inner()) {
        let (counts, diff) = r?;
        report.counts.add(&counts);
        if diff.is_some() {
            report.difference = diff;
            break;
        }
        report.partitions.push(p);
    }
    Ok(report)
}

fn decode_commit(rec: &OwnedMessage, codec: &dyn SchemaLookup) -> Result<Commit, String> {
    decode(rec.payload().unwrap_or_default(), codec).map_err(|e| e.to_string())
}

/// Whether `rec` repeats a commit already matched: same account and seq, a head hash that is
/// the hash of its content and equal to the one the scratch state holds for that seq.
fn is_repeat<S: StateRead + ?Sized>(
    store: &S,
    p: i32,
    rec: &OwnedMessage,
    matched: &BTreeMap<String, i64>,
    codec: &dyn SchemaLookup,
) -> anyhow::Result<bool> {
    let Ok(mut c) = decode_commit(rec, codec) else {
        return Ok(false);
    };
    if matched.get(&c.account_id).is_none_or(|&m| c.commit_seq > m) {
        return Ok(false);
    }
    if ids::head_hash(&mut c) != c.head_hash {
        return Ok(false);
    }
    let have = store.get(
        kledger_state::keys::Cf::Chain,
        &keys::chain(p, &c.account_id, c.commit_seq)?,
    )?;
    Ok(have.is_some_and(|h| ids::to_hex(&h) == c.head_hash))
}

/// The fields of two commits that differ, as (path, replayed, outbox), at most
/// [`FIELD_DIFFS_MAX`].
pub fn field_diff(want: &Commit, got: &Commit) -> Vec<(String, String, String)> {
    let (a, b) = (
        serde_json::to_value(want).unwrap_or_default(),
        serde_json::to_value(got).unwrap_or_default(),
    );
    let mut out = Vec::new();
    diff_values("", &a, &b, &mut out);
    if out.is_empty() {
        // Same fields, different bytes: an encoding difference.
        out.push(("bytes".into(), "canonical".into(), "other encoding".into()));
    }
    out
}

fn diff_values(
    path: &str,
    a: &serde_json::Value,
    b: &serde_json::Value,
    out: &mut Vec<(String, String, String)>,
) {
    use serde_json::Value;
    if out.len() >= FIELD_DIFFS_MAX || a == b {
        return;
    }
    let join = |k: &str| {
        if path.is_empty() {
            k.to_owned()
        } else {
            format!("{path}.{k}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let null = Value::Null;
                diff_values(
                    &join(k),
                    x.get(k).unwrap_or(&null),
                    y.get(k).unwrap_or(&null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                diff_values(&format!("{path}[{i}]"), u, v, out);
            }
        }
        _ => {
            let short = |v: &Value| v.to_string().chars().take(200).collect::<String>();
            out.push((path.to_owned(), short(a), short(b)));
        }
    }
}

/// One topic partition as a [`Source`] (a to-the-end `PartitionReader` over it).
#[derive(Debug)]
pub struct TopicSource {
    reader: PartitionReader<RestoreContext>,
    buffer: std::collections::VecDeque<OwnedMessage>,
    /// Records read per fetch round at most (`bulk.records_max`).
    records_max: usize,
}

impl TopicSource {
    /// Reads `topic`/`partition` from `from`.
    pub fn open(config: &Config, topic: &str, partition: i32, from: i64) -> anyhow::Result<Self> {
        Ok(Self {
            reader: PartitionReader::source(
                config,
                topic,
                "replay",
                &BTreeMap::from([(partition, from)]),
                SOURCE_PROBE,
            )?,
            buffer: Default::default(),
            records_max: config.bulk.records_max,
        })
    }
}

impl Source for TopicSource {
    fn next_record(&mut self) -> anyhow::Result<Option<OwnedMessage>> {
        while self.buffer.is_empty() {
            match self.reader.next_to_end(self.records_max)? {
                Some(b) => self.buffer.extend(b),
                None => return Ok(None),
            }
        }
        Ok(self.buffer.pop_front())
    }
}

/// The intents whose commit the broker refused for good, from the dead-letter topic (code
/// `record_refused`): the processor answered them `rejected` without a commit, and replay
/// answers them the same way. The broker's refusal is not a function of the ledger's history,
/// so it is read back rather than decided again.
pub fn refused_intents(
    config: &Config,
    topics: &Topics,
    partitions: i32,
) -> anyhow::Result<Refused> {
    let mut refused = Refused::new();
    // From each partition's first retained record (the topic has the intents' retention).
    let from: BTreeMap<i32, i64> = kledger_kafka::topics::watermarks(
        &kledger_kafka::clients::client_config(config),
        &topics.deadletter,
        partitions,
    )?
    .into_iter()
    .enumerate()
    .map(|(p, (low, _))| (p as i32, low))
    .collect();
    let mut reader =
        PartitionReader::source(config, &topics.deadletter, "replay", &from, SOURCE_PROBE)?;
    while let Some(batch) = reader.next_to_end(config.bulk.records_max)? {
        for m in batch {
            let header = |name: &str| -> Option<String> {
                use rdkafka::message::Headers;
                m.headers()?
                    .iter()
                    .find(|h| h.key == name)
                    .and_then(|h| h.value)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            };
            if header("kledger.error.code").as_deref() != Some(REFUSED)
                || header("kledger.source.topic").as_deref() != Some(topics.intents.as_str())
            {
                continue;
            }
            let position = header("kledger.source.partition")
                .and_then(|p| p.parse().ok())
                .zip(header("kledger.source.offset").and_then(|o| o.parse().ok()));
            if let Some(pos) = position {
                let reason = header("kledger.error.message").unwrap_or_default();
                refused.insert(pos, crate::apply::batch::RefusedAt { reason, times: 1 });
            }
        }
    }
    Ok(refused)
}

/// `kledger replay verify` against the configured topics: re-decides into a scratch RocksDB
/// under `scratch` (a fresh directory, removed afterwards), starting each partition at
/// `from` (default 0). Blocking.
pub fn verify_topics(
    config: &Config,
    from: &BTreeMap<i32, i64>,
    scratch: &std::path::Path,
    show_progress: bool,
) -> anyhow::Result<Report> {
    let bootstrap = kledger_kafka::clients::client_config(config);
    let topics = config.topics();
    let partitions = kledger_kafka::topics::check(&bootstrap, &topics)?;
    if let Some((p, _)) = from
        .iter()
        .find(|(p, o)| !(0..partitions).contains(*p) || **o < 0)
    {
        anyhow::bail!("--from {p}: no such partition, or a negative offset");
    }
    anyhow::ensure!(
        !scratch.exists(),
        "scratch directory {} exists: replay starts from empty state",
        scratch.display()
    );
    // Each partition starts where asked, or at its first retained intent when retention
    // deleted the ones before it (the commits of those are folded, not compared).
    let starts: BTreeMap<i32, i64> =
        kledger_kafka::topics::watermarks(&bootstrap, &topics.intents, partitions)?
            .iter()
            .enumerate()
            .map(|(p, (low, _))| {
                let p = p as i32;
                (p, from.get(&p).copied().unwrap_or(0).max(*low))
            })
            .collect();
    let total: u64 =
        kledger_kafka::topics::high_watermarks(&bootstrap, &topics.intents, partitions)?
            .iter()
            .enumerate()
            .map(|(p, h)| (h - starts[&(p as i32)]).max(0) as u64)
            .sum();
    let bar = kledger_runtime::progress::bar(Some(total), "intents replayed", show_progress);
    let started = Instant::now();
    let result = (|| {
        let store = kledger_state::RocksStore::open(scratch, &config.state.rocks())?;
        let codec = Codec::connect(config)?;
        let open = |p: i32| -> anyhow::Result<Sources> {
            let start = starts.get(&p).copied().unwrap_or(0);
            Ok((
                Box::new(TopicSource::open(config, &topics.intents, p, start)?),
                Box::new(TopicSource::open(config, &topics.outbox, p, 0)?),
                Box::new(TopicSource::open(config, &topics.keys, p, 0)?),
            ))
        };
        let secret = if config.limits.rules() >= kledger_processors::Rules::V4 {
            crate::keys::ledger_secret(config, &topics.keys)?
        } else {
            Default::default()
        };
        let limits = config.limits.decide(secret);
        let refused = refused_intents(config, &topics, partitions)?;
        verify(
            &store,
            &topics,
            partitions,
            from,
            &open,
            &codec,
            limits,
            &refused,
            config.bulk.records_max,
            &|n| bar.inc(n),
        )
    })();
    bar.finish_and_clear();
    let _ = std::fs::remove_dir_all(scratch);
    let report = result?;
    let secs = started.elapsed().as_secs_f64();
    tracing::info!(
        intents = report.counts.intents,
        commits = report.counts.commits,
        repeats = report.counts.repeats,
        folded = report.counts.folded,
        partitions = report.partitions.len(),
        secs,
        rate = report.counts.intents as f64 / secs.max(1e-9),
        ok = report.difference.is_none(),
        "replay verify finished"
    );
    Ok(report)
}

/// Parses `partition:offset`.
pub fn parse_from(s: &str) -> Result<(i32, i64), String> {
    let (p, o) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: expected partition:offset"))?;
    Ok((
        p.trim()
            .parse()
            .map_err(|e| format!("partition {p:?}: {e}"))?,
        o.trim().parse().map_err(|e| format!("offset {o:?}: {e}"))?,
    ))
}

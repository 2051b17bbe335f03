//! Kafka test tools: an in-process broker, configurations for children, topic readers,
//! expected outputs (what `kledger apply` gives) and the outbox oracle. The Kafka tests of
//! `topology/` and the reliability harness share them. They panic on failure: they are for
//! tests and the harness, not for production code.

use std::collections::BTreeMap;
use std::io::{BufReader, Cursor};
use std::path::Path;
use std::time::{Duration, Instant};

use kledger_schemas::avro::decode;
use kledger_schemas::{Commit, IntentRecord, Receipt};
use kledger_state::{MemoryStore, digest};
use kledger_topology::config::Config;
use kledger_topology::kafka::codec::Codec;
use kledger_topology::kafka::embedded::{EmbeddedBroker, free_port};
use kledger_topology::{kafka::topics, pipeline::offline, pipeline::publish};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};

/// A broker in this process, on its own runtime (so blocking rdkafka calls in the test thread
/// never starve it).
pub struct TestBroker {
    /// The broker's runtime.
    pub rt: tokio::runtime::Runtime,
    pub broker: Option<EmbeddedBroker>,
    pub bootstrap: String,
}

impl TestBroker {
    pub fn start() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let port = free_port().unwrap();
        let broker = rt
            .block_on(EmbeddedBroker::start(
                &format!("127.0.0.1:{port}"),
                "memory://tansu/",
            ))
            .unwrap();
        let bootstrap = broker.bootstrap();
        Self {
            rt,
            broker: Some(broker),
            bootstrap,
        }
    }
}

impl std::fmt::Debug for TestBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestBroker")
            .field("bootstrap", &self.bootstrap)
            .finish()
    }
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        if let Some(b) = self.broker.take() {
            b.stop();
        }
    }
}

/// A child process that is stopped ([`stop`]) when dropped, so a test that fails leaves no
/// process behind; it derefs to the child.
#[derive(Debug)]
pub struct ChildGuard(Option<std::process::Child>);

impl ChildGuard {
    /// Guards `child`.
    pub fn new(child: std::process::Child) -> Self {
        Self(Some(child))
    }
}

impl std::ops::Deref for ChildGuard {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        self.0.as_ref().expect("a guarded child")
    }
}

impl std::ops::DerefMut for ChildGuard {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.0.as_mut().expect("a guarded child")
    }
}

impl From<ChildGuard> for std::process::Child {
    fn from(mut g: ChildGuard) -> Self {
        g.0.take().expect("a guarded child")
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            stop(c);
        }
    }
}

/// A `kledger broker` child process (the binary at `bin`) with `storage`, working in `dir`
/// (where a relative sqlite path lands), its log in `dir/broker.log`; stopped when dropped, so
/// a panicking test leaves no broker behind. It outlives the processors a test kills, as a
/// broker does in production.
pub struct BrokerProcess {
    _child: ChildGuard,
    pub bootstrap: String,
}

impl BrokerProcess {
    pub fn start(bin: &Path, dir: &Path, storage: &str) -> anyhow::Result<Self> {
        let bootstrap = format!("127.0.0.1:{}", free_port()?);
        let log = std::fs::File::create(dir.join("broker.log"))?;
        let child = std::process::Command::new(bin)
            .args(["broker", "--listen", &bootstrap, "--storage", storage])
            .env("KLEDGER_LOG__FILTER", "warn")
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()?;
        let broker = Self {
            _child: ChildGuard::new(child),
            bootstrap,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(&broker.bootstrap).is_err() {
            anyhow::ensure!(Instant::now() < deadline, "the broker did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(broker)
    }
}

impl std::fmt::Debug for BrokerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerProcess")
            .field("bootstrap", &self.bootstrap)
            .finish()
    }
}

/// A configuration for tests: external bootstrap, no HTTP, short group timeouts.
pub fn config(bootstrap: &str, state: &Path, partitions: i32, group: &str) -> Config {
    let mut c = Config::default();
    c.kafka.bootstrap_servers = bootstrap.to_owned();
    c.kafka.partitions = partitions;
    c.kafka.group_id = group.to_owned();
    c.kafka
        .consumer_properties
        .insert("session.timeout.ms".into(), "6000".into());
    c.kafka
        .consumer_properties
        .insert("heartbeat.interval.ms".into(), "500".into());
    c.state.dir = state.to_owned();
    // RocksDB ignores a subdirectory it did not create: one temp dir holds both stores.
    c.views.dir = state.join("views");
    c.vectors.dir = state.join("vectors");
    c.http.listen = String::new();
    c.processor.batch.records_max = 500;
    // The lexical embedder keeps the many tests that do not measure retrieval cheap on two
    // cores; the tests of search (the model, the API end to end, the access harness, the
    // retrieval set) use the default, the local model.
    c.vectors.embedder.kind = kledger_topology::config::EmbedderKind::Hash;
    // Expiry's sweep reads the wall clock: the generated streams' expired rows would be purged
    // by intents no offline expectation has. The tests of expiry turn it on.
    c.policy.ttl.purge = false;
    c
}

/// Environment variables giving a child `kledger run` the same configuration.
pub fn child_env(c: &Config, http: &str) -> Vec<(String, String)> {
    vec![
        (
            "KLEDGER_KAFKA__BOOTSTRAP_SERVERS".into(),
            c.kafka.bootstrap_servers.clone(),
        ),
        (
            "KLEDGER_KAFKA__PARTITIONS".into(),
            c.kafka.partitions.to_string(),
        ),
        ("KLEDGER_KAFKA__GROUP_ID".into(), c.kafka.group_id.clone()),
        (
            "KLEDGER_KAFKA__TOPIC_PREFIX".into(),
            c.kafka.topic_prefix.clone(),
        ),
        (
            "KLEDGER_KAFKA__CONSUMER_PROPERTIES__SESSION_TIMEOUT_MS".into(),
            "6000".into(),
        ),
        (
            "KLEDGER_KAFKA__CONSUMER_PROPERTIES__HEARTBEAT_INTERVAL_MS".into(),
            "500".into(),
        ),
        (
            "KLEDGER_STATE__DIR".into(),
            c.state.dir.display().to_string(),
        ),
        (
            "KLEDGER_VIEWS__DIR".into(),
            c.views.dir.display().to_string(),
        ),
        (
            "KLEDGER_VECTORS__DIR".into(),
            c.vectors.dir.display().to_string(),
        ),
        ("KLEDGER_HTTP__LISTEN".into(), http.to_owned()),
        (
            "KLEDGER_POLICY__TTL__PURGE".into(),
            c.policy.ttl.purge.to_string(),
        ),
        (
            "KLEDGER_VECTORS__EMBEDDER__KIND".into(),
            serde_json::to_value(c.vectors.embedder.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
        ),
        (
            "KLEDGER_PROCESSOR__BATCH__RECORDS_MAX".into(),
            c.processor.batch.records_max.to_string(),
        ),
        ("KLEDGER_LOG__FILTER".into(), "info".into()),
    ]
}

/// One HTTP/1.0 request to 127.0.0.1:`port`: (status, body).
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: x\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    (status, body)
}

pub fn create_topics(b: &TestBroker, c: &Config) {
    b.rt.block_on(topics::create(
        &kledger_topology::kafka::clients::client_at(&b.bootstrap, []),
        &c.topics(),
        c.kafka.partitions,
        1,
        c.limits.kafka_message_bytes(),
    ))
    .unwrap();
}

/// Records whose JSON form reads back equal (NaN has none).
pub fn json_safe(records: Vec<IntentRecord>) -> Vec<IntentRecord> {
    records
        .into_iter()
        .filter(|r| {
            serde_json::from_str::<IntentRecord>(&serde_json::to_string(r).unwrap())
                .ok()
                .as_ref()
                == Some(r)
        })
        .collect()
}

/// A generated stream of `n` records over `accounts` accounts, JSON-safe.
pub fn stream(seed: u64, accounts: usize, n: usize) -> Vec<IntentRecord> {
    use crate::{GenConfig, Generator};
    json_safe(
        Generator::new(GenConfig {
            seed,
            accounts,
            source_pct: 8,
            ..GenConfig::default()
        })
        .take(n)
        .collect(),
    )
}

pub fn jsonl(records: &[IntentRecord]) -> String {
    records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect()
}

pub fn publish_all(c: &Config, records: &[IntentRecord]) {
    let text = jsonl(records);
    let s = publish::publish(
        c,
        c.kafka.partitions,
        &mut BufReader::new(Cursor::new(text)),
        None,
        false,
    )
    .unwrap();
    assert_eq!(s.published as usize, records.len());
}

/// The ledger's secret on `c`'s keys topic (made when there is none): what `kledger apply`
/// keys ids and hashes with to decide as the processor does (rules v4).
pub fn ledger_secret(c: &Config) -> kledger_processors::ids::LedgerSecret {
    kledger_topology::pipeline::keys::ledger_secret(c, &c.topics().keys).unwrap()
}

/// Makes `to`'s ledger key its ids and hashes as `from`'s does: writes `from`'s secret as the
/// first secret candidate on `to`'s keys topic (before `to`'s processor starts). Two ledgers
/// fed the same intents then commit alike but for their data keys.
pub fn share_secret(from: &Config, to: &Config) {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let secret = ledger_secret(from);
    let producer: BaseProducer = kledger_topology::kafka::clients::client_config(to)
        .create()
        .unwrap();
    let mut key = kledger_state::keys::SECRET_RECORD_PREFIX.to_vec();
    key.extend_from_slice(b"shared-by-test");
    producer
        .send(
            BaseRecord::to(&to.topics().keys)
                .partition(0)
                .key(&key)
                .payload(&secret.0[..]),
        )
        .map_err(|(e, _)| e)
        .unwrap();
    producer.flush(Duration::from_secs(10)).unwrap();
    assert_eq!(
        ledger_secret(to),
        secret,
        "{} had a secret",
        to.topics().keys
    );
}

/// What `kledger apply` gives on the same input, with the ledger secret of `c`'s keys topic:
/// commits (in order) and the state digest.
pub fn expected(c: &Config, records: &[IntentRecord], partitions: i32) -> (Vec<Commit>, String) {
    expected_within(c, records, partitions, Default::default())
}

/// [`expected`] within `limits` (another record budget); the secret is `c`'s.
pub fn expected_within(
    c: &Config,
    records: &[IntentRecord],
    partitions: i32,
    limits: kledger_processors::Limits,
) -> (Vec<Commit>, String) {
    expected_offline(
        records,
        partitions,
        kledger_processors::Limits {
            secret: ledger_secret(c),
            ..limits
        },
    )
}

/// [`expected`] with the ledger's `secret` given (read while the broker ran).
pub fn expected_with_secret(
    secret: kledger_processors::ids::LedgerSecret,
    records: &[IntentRecord],
    partitions: i32,
) -> (Vec<Commit>, String) {
    expected_offline(
        records,
        partitions,
        kledger_processors::Limits {
            secret,
            ..Default::default()
        },
    )
}

fn expected_offline(
    records: &[IntentRecord],
    partitions: i32,
    limits: kledger_processors::Limits,
) -> (Vec<Commit>, String) {
    let store = MemoryStore::new();
    let (mut r, mut c) = (Vec::new(), Vec::new());
    offline::apply(
        &store,
        &mut BufReader::new(Cursor::new(jsonl(records))),
        partitions,
        limits,
        kledger_topology::config::BulkConfig::default().records_max,
        offline::Sinks {
            receipts: &mut r,
            commits: Some(&mut c),
        },
    )
    .unwrap();
    let commits = String::from_utf8(c)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (commits, digest(&store).unwrap())
}

/// `commits` as a fresh outbox would hold them: each on `partition_of(commit)`, at offsets
/// counting from 0 per partition in the order given.
pub fn positioned<'a>(
    commits: impl IntoIterator<Item = &'a Commit>,
    partition_of: impl Fn(&Commit) -> i32,
) -> Vec<kledger_topology::pipeline::project::OutboxCommit> {
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    commits
        .into_iter()
        .map(|c| {
            let partition = partition_of(c);
            let o = next.entry(partition).or_insert(0);
            *o += 1;
            kledger_topology::pipeline::project::OutboxCommit {
                partition,
                offset: *o - 1,
                commit: c.clone(),
            }
        })
        .collect()
}

/// One record read back.
#[derive(Debug, Clone)]
pub struct Rec {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub payload: Vec<u8>,
    pub headers: BTreeMap<String, String>,
    /// The record timestamp (ms); -1 when the record has none.
    pub timestamp: i64,
}

/// Every record of every partition of `topic`, in partition then offset order: read from the
/// beginning until each partition reports its end (no offset lookups: tansu can answer those
/// with stale values).
pub fn read_all(bootstrap: &str, topic: &str, partitions: i32) -> Vec<Rec> {
    read_all_within(bootstrap, topic, partitions, Duration::from_secs(60)).unwrap_or_else(|open| {
        panic!("reading {topic} read nothing for 60 s; open partitions {open:?}")
    })
}

/// [`read_all`], or the partitions still open when nothing was read for `stall` (a topic
/// whose records retention is deleting while it is read can leave a fetch hanging).
pub fn read_all_within(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    stall: Duration,
) -> Result<Vec<Rec>, std::collections::BTreeSet<i32>> {
    read_all_with(
        kledger_topology::kafka::clients::client_at(bootstrap, []),
        topic,
        partitions,
        stall,
    )
}

/// [`read_all_within`] with a client of `cluster` (its security settings).
pub fn read_all_with(
    mut cluster: rdkafka::ClientConfig,
    topic: &str,
    partitions: i32,
    stall: Duration,
) -> Result<Vec<Rec>, std::collections::BTreeSet<i32>> {
    let consumer: BaseConsumer = cluster
        .set("group.id", "kledger-test-reader")
        .set("enable.partition.eof", "true")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    let mut open = std::collections::BTreeSet::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
        open.insert(p);
    }
    consumer.assign(&tpl).unwrap();
    let mut out: Vec<Rec> = Vec::new();
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    // Stalled, not slow: the bound is on time without a record (a long topic read on a busy
    // machine takes as long as it takes).
    let mut deadline = Instant::now() + stall;
    while !open.is_empty() {
        if Instant::now() >= deadline {
            return Err(open);
        }
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => {
                deadline = Instant::now() + stall;
                // Keep each offset once (a re-fetch after a broker hiccup may repeat records).
                let n = next.entry(m.partition()).or_insert(0);
                if m.offset() < *n {
                    continue;
                }
                *n = m.offset() + 1;
                let headers = m
                    .headers()
                    .map(|h| {
                        h.iter()
                            .map(|x| {
                                (
                                    x.key.to_owned(),
                                    String::from_utf8_lossy(x.value.unwrap_or_default())
                                        .into_owned(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                out.push(Rec {
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().map(<[u8]>::to_vec),
                    payload: m.payload().unwrap_or_default().to_vec(),
                    headers,
                    timestamp: m.timestamp().to_millis().unwrap_or(-1),
                });
            }
            Some(Err(KafkaError::PartitionEOF(p))) => {
                open.remove(&p);
            }
            Some(Err(e)) => panic!("reading {topic}: {e}"),
            None => {}
        }
    }
    out.sort_by_key(|r| (r.partition, r.offset));
    Ok(out)
}

/// Every record of `topic` on `bootstrap`, read by a client of `c`'s cluster (its security
/// settings), or a panic after 60 s without a record.
fn read_all_of(bootstrap: &str, c: &Config, topic: &str) -> Vec<Rec> {
    let mut cluster = kledger_topology::kafka::clients::client_config(c);
    cluster.set("bootstrap.servers", bootstrap);
    read_all_with(cluster, topic, c.kafka.partitions, Duration::from_secs(60)).unwrap_or_else(
        |open| panic!("reading {topic} read nothing for 60 s; open partitions {open:?}"),
    )
}

pub fn commits(bootstrap: &str, c: &Config) -> Vec<(i32, Commit)> {
    let codec = Codec::connect(c).unwrap();
    read_all_of(bootstrap, c, &c.topics().outbox)
        .into_iter()
        .map(|r| (r.partition, decode::<Commit>(&r.payload, &codec).unwrap()))
        .collect()
}

pub fn receipts(bootstrap: &str, c: &Config) -> Vec<Receipt> {
    let codec = Codec::connect(c).unwrap();
    read_all_of(bootstrap, c, &c.topics().receipts)
        .into_iter()
        .map(|r| decode::<Receipt>(&r.payload, &codec).unwrap())
        .collect()
}

/// The partition the murmur2 partitioner places `r` in.
pub fn partition_of(r: &IntentRecord, partitions: i32) -> i32 {
    kledger_processors::routing::partition_for(r.intent.account_id.as_bytes(), partitions)
}

/// Intents published per partition, as the murmur2 partitioner places them.
pub fn per_partition(records: &[IntentRecord], partitions: i32) -> BTreeMap<i32, i64> {
    let mut m = BTreeMap::new();
    for r in records {
        *m.entry(partition_of(r, partitions)).or_insert(0) += 1;
    }
    m
}

/// The intent offsets the receipts topic answers, per intents partition.
pub fn answered_offsets(c: &Config) -> BTreeMap<i32, std::collections::BTreeSet<i64>> {
    let mut got: BTreeMap<i32, std::collections::BTreeSet<i64>> = BTreeMap::new();
    for r in receipts(&c.kafka.bootstrap_servers, c) {
        got.entry(r.intent_partition)
            .or_default()
            .insert(r.intent_offset);
    }
    got
}

/// Waits until the receipts answer every intent record (`extra` records per partition beyond
/// `records`, e.g. dead letters, are answered on the dead-letter topic and not waited for).
pub fn wait_answered(c: &Config, records: &[IntentRecord], timeout: Duration) {
    if let Err(why) = answered(c, records, timeout, || true) {
        panic!("{why}");
    }
}

/// [`wait_answered`] that gives up as soon as `alive()` is false (the processor stopped), so a
/// test can report why instead of waiting out the timeout.
pub fn answered(
    c: &Config,
    records: &[IntentRecord],
    timeout: Duration,
    alive: impl Fn() -> bool,
) -> Result<(), String> {
    let want = per_partition(records, c.kafka.partitions);
    let deadline = Instant::now() + timeout;
    loop {
        let got = answered_offsets(c);
        let behind: Vec<(i32, usize, i64)> = want
            .iter()
            .map(|(p, n)| (*p, got.get(p).map_or(0, |s| s.len()), *n))
            .filter(|(_, have, n)| (*have as i64) < *n)
            .collect();
        if behind.is_empty() {
            return Ok(());
        }
        let why = format!("not every intent answered: (partition, answered, published) {behind:?}");
        if !alive() {
            return Err(format!("the processor stopped; {why}"));
        }
        if Instant::now() >= deadline {
            return Err(why);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Commits per partition, in offset order.
pub fn by_partition(
    commits: impl IntoIterator<Item = (i32, Commit)>,
) -> BTreeMap<i32, Vec<Commit>> {
    let mut m: BTreeMap<i32, Vec<Commit>> = BTreeMap::new();
    for (p, c) in commits {
        m.entry(p).or_default().push(c);
    }
    m
}

/// Drops repeated commits (same account and seq), asserting each repeat is byte-identical to
/// the first (what a zombie writes, and the fold ignores). Returns the rest and the count.
pub fn dedup_identical(got: &[(i32, Commit)]) -> (Vec<(i32, Commit)>, usize) {
    let mut seen: BTreeMap<(String, i64), &Commit> = BTreeMap::new();
    let mut out = Vec::new();
    let mut repeats = 0;
    for (p, c) in got {
        match seen.get(&(c.account_id.clone(), c.commit_seq)) {
            Some(first) => {
                // An old owner seals a new row under its own data key: the same decision.
                assert_eq!(
                    comparable(first),
                    comparable(c),
                    "a repeated commit differs: a fork"
                );
                repeats += 1;
            }
            None => {
                seen.insert((c.account_id.clone(), c.commit_seq), c);
                out.push((*p, c.clone()));
            }
        }
    }
    (out, repeats)
}

/// `c` without what only its data keys decide (rules v4): sealed rows' content emptied (as on
/// the wire), no key ids, no ciphertexts. Two commits of one decision sealed under different
/// keys (the processor's and `kledger apply`'s) are then equal, and their head hashes (which
/// cover the content's MACs) must be equal too.
pub fn comparable(c: &Commit) -> Commit {
    let mut c = c.clone();
    for op in &mut c.ops {
        if op.row.sealed.is_some() {
            kledger_processors::seal::blank(&mut op.row);
        }
        if let Some(s) = &mut op.row.sealed {
            s.key_id.clear();
            s.ciphertext = Default::default();
        }
    }
    c
}

/// Asserts the outbox holds exactly the expected commits, each once, in per-partition order,
/// and that commit_seq is gapless per account (commits compared as [`comparable`]).
pub fn assert_outbox_exact(got: &[(i32, Commit)], expected: &[Commit]) {
    let want = by_partition(expected.iter().map(|c| (c.intent_partition, c.clone())));
    let have = by_partition(got.iter().cloned());
    assert_eq!(
        have.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "partitions with commits"
    );
    for (p, w) in &want {
        let h = &have[p];
        for (i, (a, b)) in h.iter().zip(w).enumerate() {
            let (a, b) = (&comparable(a), &comparable(b));
            if a != b {
                for (path, outbox, expected) in kledger_topology::pipeline::replay::field_diff(a, b)
                {
                    eprintln!("differs at {path}: outbox {outbox} / expected {expected}");
                }
                for x in h.iter().filter(|x| x.account_id == a.account_id) {
                    eprintln!(
                        "outbox of the diverging account: {} seq {} action {} offset {} prev {} head {}",
                        x.account_id,
                        x.commit_seq,
                        x.action_id,
                        x.intent_offset,
                        &x.prev_hash[..8],
                        &x.head_hash[..8]
                    );
                }
            }
            assert!(
                a == b,
                "partition {p} commit {i}: outbox has {} seq {} action {} offset {}; expected {} seq {} action {} offset {}",
                a.account_id,
                a.commit_seq,
                a.action_id,
                a.intent_offset,
                b.account_id,
                b.commit_seq,
                b.action_id,
                b.intent_offset
            );
        }
        assert_eq!(
            h.len(),
            w.len(),
            "partition {p}: {} commits in the outbox, {} expected",
            h.len(),
            w.len()
        );
    }
    let mut seqs: BTreeMap<&str, i64> = BTreeMap::new();
    for (_, c) in got {
        let s = seqs.entry(&c.account_id).or_insert(0);
        assert_eq!(c.commit_seq, *s + 1, "{} commit_seq gap", c.account_id);
        *s = c.commit_seq;
    }
}

/// A `kledger run` child (the binary at `bin`) with `c`'s configuration and `env` on top,
/// serving HTTP on `http_port`, writing its log to `dir/<tag>.log`.
pub fn spawn_kledger(
    bin: &Path,
    c: &Config,
    http_port: u16,
    dir: &Path,
    tag: &str,
    env: &[(&str, &str)],
) -> ChildGuard {
    let base = child_env(c, &format!("127.0.0.1:{http_port}"));
    spawn_with_env(bin, &base, env, dir, tag)
}

/// A `kledger run` child with exactly `base` and `env` as its `KLEDGER_*` variables, its log in
/// `dir/<tag>.log`.
pub fn spawn_with_env(
    bin: &Path,
    base: &[(String, String)],
    env: &[(&str, &str)],
    dir: &Path,
    tag: &str,
) -> ChildGuard {
    let log = std::fs::File::create(dir.join(format!("{tag}.log"))).unwrap();
    let child = std::process::Command::new(bin)
        .arg("run")
        .envs(base.iter().cloned())
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    ChildGuard::new(child)
}

/// A `kledger run` child (the binary at `bin`) that runs only the processor (no sinks), with
/// `c`'s configuration and its log in `dir/<tag>.log`, once it is ready.
pub fn spawn_processor(bin: &Path, c: &Config, dir: &Path, tag: &str) -> ChildGuard {
    let port = free_port().unwrap();
    let env = [
        ("KLEDGER_VIEWS__ENABLED", "false"),
        ("KLEDGER_VECTORS__ENABLED", "false"),
    ];
    let mut child = spawn_kledger(bin, c, port, dir, tag, &env);
    wait_ready(&mut child, port, dir, tag);
    child
}

/// GET `path` on 127.0.0.1:`port`: (status, body); none when nothing answers.
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    Some((status, body))
}

/// Waits until the child serving HTTP on `port` is ready (panics with its log if it exits).
pub fn wait_ready(child: &mut std::process::Child, port: u16, dir: &Path, tag: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some((200, _)) = get(port, "/readyz") {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(dir.join(format!("{tag}.log"))).unwrap_or_default();
            panic!("{tag} exited with {status} before ready:\n{log}");
        }
        assert!(Instant::now() < deadline, "{tag} not ready in time");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stops a child with SIGTERM (SIGKILL after 30 s).
pub fn stop(child: impl Into<std::process::Child>) {
    let mut child: std::process::Child = child.into();
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .stderr(std::process::Stdio::null())
        .status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

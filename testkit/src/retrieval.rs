//! The retrieval-quality set (`testkit/data/retrieval`, made by its `generate.py`) and its
//! evaluation: the set's rows are projected into a fresh vector index with the vector sink's
//! own code, and each question is asked through `search_knowledge`'s ranking
//! ([`kledger_topology::serve::api::search::rank`], the owner's access filter), and through
//! the baselines: BM25 alone and the dense model alone, over an index of the rows' content as
//! it is ([`plain_index`]). Hits are counted at 1, 5 and 10, with the mean
//! reciprocal rank, per method, split (dev: tuning, test: reporting) and category.
//!
//! A question is a hit at k when one of its relevant rows is in the first k (a multi-fact
//! question also reports the share of its rows found: `rows@5`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use kledger_processors::access::Principal;
use kledger_processors::bm25::Bm25;
use kledger_processors::ids::{memory_id_of, memory_uuid};
use kledger_processors::payload::{AccountRef, access_filter, collection_name};
use kledger_schemas::{
    Acl, AssertionClass, Change, Commit, CommitOp, Extractor, Kind, OwnerKind, Row, Sensitivity,
    SensitivityLevel, Source, Status, Subject, Tenant, Visibility, WriteReason,
};
use kledger_state::MarkStore;
use kledger_topology::pipeline::project::OutboxCommit;
use kledger_topology::serve::api::search::{Fuse, Fusion, KeywordThreads, rank};
use kledger_topology::vector::embedder::Embedder;
use kledger_topology::vector::{QueryVector, VectorGen, VectorIndex};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// The default embedder (the local model), from `KLEDGER_VECTORS__EMBEDDER__MODEL_DIR` or its
/// default directory (`scripts/dev.sh` installs it there).
pub fn default_embedder() -> anyhow::Result<Arc<dyn Embedder>> {
    let mut config = kledger_topology::config::EmbedderConfig::default();
    if let Some(dir) = std::env::var_os("KLEDGER_VECTORS__EMBEDDER__MODEL_DIR") {
        config.model_dir = dir.into();
    }
    Ok(Arc::from(kledger_topology::vector::embedder_from_config(
        &config,
    )?))
}

/// The set's directory in the repository.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/retrieval")
}

/// One row of the set.
#[derive(Debug, Clone, Deserialize)]
pub struct SetRow {
    /// The set's id (`a07-r0042`).
    pub id: String,
    /// `t_bench/user/u_07`.
    pub account: String,
    /// fact | document | trigger.
    pub kind: Kind,
    /// The one-line content.
    pub content: String,
    /// A document's body.
    #[serde(default)]
    pub body: Option<String>,
    /// Slot, if any.
    #[serde(default)]
    pub slot: Option<String>,
    /// Subject.
    pub subject: Subject,
    /// Effective from (ms).
    pub valid_from: i64,
    /// Effective until (ms).
    #[serde(default)]
    pub valid_to: Option<i64>,
    /// active | superseded | closed.
    pub status: Status,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The conversation session it was said in (the conversation set only).
    #[serde(default)]
    pub session: Option<String>,
}

/// One question of the set.
#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    /// The set's id.
    pub id: String,
    /// The account asked about.
    pub account: String,
    /// The question.
    pub question: String,
    /// Ids of the rows that answer it.
    pub relevant: Vec<String>,
    /// paraphrase | lexical | temporal | third_party | multi_fact | document | trigger.
    pub category: String,
    /// dev | test.
    pub split: String,
}

/// The set.
#[derive(Debug, Clone)]
pub struct Set {
    /// Rows.
    pub rows: Vec<SetRow>,
    /// Questions.
    pub questions: Vec<Question>,
}

fn lines<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{}:{}", path.display(), i + 1))
        })
        .collect()
}

/// Loads the set from `dir`.
pub fn load(dir: &Path) -> anyhow::Result<Set> {
    Ok(Set {
        rows: lines(&dir.join("rows.jsonl"))?,
        questions: lines(&dir.join("questions.jsonl"))?,
    })
}

/// The conversation set's directory in the repository (`testkit/data/conversations`, made by
/// its `generate.py`, independently of the retrieval set's generator).
pub fn conversations_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/conversations")
}

/// Which rows of the conversation set an index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Corpus {
    /// The raw turns, `Speaker: text`.
    Turns,
    /// The facts an extractor wrote from them.
    Facts,
}

impl Corpus {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Corpus::Turns => "turns",
            Corpus::Facts => "facts",
        }
    }
}

/// A question of the conversation set, with its evidence in both corpora.
#[derive(Debug, Clone, Deserialize)]
struct ConversationQuestion {
    id: String,
    account: String,
    question: String,
    category: String,
    evidence_turns: Vec<String>,
    evidence_facts: Vec<String>,
    split: String,
}

/// Loads one corpus of the conversation set from `dir`: its rows, and every question with the
/// evidence in that corpus as its relevant rows.
pub fn load_conversations(dir: &Path, corpus: Corpus) -> anyhow::Result<Set> {
    let file = match corpus {
        Corpus::Turns => "turns.jsonl",
        Corpus::Facts => "facts.jsonl",
    };
    let questions: Vec<ConversationQuestion> = lines(&dir.join("questions.jsonl"))?;
    Ok(Set {
        rows: lines(&dir.join(file))?,
        questions: questions
            .into_iter()
            .map(|q| Question {
                id: q.id,
                account: q.account,
                question: q.question,
                relevant: match corpus {
                    Corpus::Turns => q.evidence_turns,
                    Corpus::Facts => q.evidence_facts,
                },
                category: q.category,
                split: q.split,
            })
            .collect(),
    })
}

/// The memory id of a set row: a ULID of its `valid_from` and 80 bits of its id's SHA-256.
pub fn memory_id(id: &str, valid_from: i64) -> String {
    let d = Sha256::digest(id.as_bytes());
    let mut random = [0u8; 16];
    random[6..].copy_from_slice(&d[..10]);
    memory_id_of((u128::from(valid_from as u64) << 80) | u128::from_be_bytes(random))
}

fn owner_of(account: &str) -> anyhow::Result<AccountRef> {
    AccountRef::parse(account).with_context(|| format!("account {account}"))
}

/// A set row as a ledger row of its account (private, normal sensitivity, one revision).
pub fn row(r: &SetRow) -> anyhow::Result<Row> {
    let a = owner_of(&r.account)?;
    Ok(Row {
        memory_id: memory_id(&r.id, r.valid_from),
        kind: r.kind,
        content: r.content.clone(),
        body: r.body.clone(),
        condition: (r.kind == Kind::Trigger)
            .then(|| [("when".to_owned(), "always".to_owned())].into()),
        slot: r.slot.clone(),
        subject: r.subject.clone(),
        valid_from: r.valid_from,
        valid_to: r.valid_to,
        expires_at: None,
        recorded_at: r.valid_from,
        status: r.status,
        superseded_by: None,
        closed_reason: None,
        write_reason: WriteReason::DirectUserStatement,
        intent_backed: true,
        user_asserted: true,
        assertion_class: AssertionClass::Confirmed,
        confidence: None,
        curation_weight: 0,
        sensitivity: Sensitivity {
            level: SensitivityLevel::Normal,
            labels: Vec::new(),
        },
        visibility: Visibility::Private,
        acl: Acl::default(),
        tags: r.tags.clone(),
        lang: Some("en".into()),
        evidence: Vec::new(),
        embedding: None,
        authority: 600,
        revision: 1,
        content_hash: kledger_processors::ids::to_hex(&Sha256::digest(r.content.as_bytes())),
        commit_seq: 1,
        action_id: r.id.clone(),
        source: Source {
            source_id: format!("chat_{}", r.id),
            source_type: "chat_message".into(),
            source_version: String::new(),
            author_id: None,
        },
        extractor: Extractor {
            name: "retrieval-set".into(),
            version: "1".into(),
        },
        tenant: Tenant {
            tenant_id: a.tenant_id.clone(),
            team_id: None,
            project_id: None,
            agent_id: None,
            owner_kind: OwnerKind::User,
            owner_id: a.owner_id.clone(),
        },
        generation: 0,
        sealed: None,
        record: None,
    })
}

/// The set's rows as one commit per account (seq 1), placed in one partition.
fn commits(set: &Set) -> anyhow::Result<Vec<OutboxCommit>> {
    let mut by_account: BTreeMap<&str, Vec<Row>> = BTreeMap::new();
    for r in &set.rows {
        by_account.entry(&r.account).or_default().push(row(r)?);
    }
    Ok(by_account
        .into_iter()
        .enumerate()
        .map(|(i, (account, rows))| OutboxCommit {
            partition: 0,
            offset: i as i64,
            commit: Commit {
                account_id: account.to_owned(),
                commit_seq: 1,
                prev_hash: String::new(),
                head_hash: String::new(),
                action_id: format!("load-{account}"),
                intent_digest: String::new(),
                recorded_at: 1_767_225_600_000,
                intent_partition: 0,
                intent_offset: i as i64,
                generation: 0,
                rebased: false,
                ops: rows
                    .into_iter()
                    .map(|row| CommitOp {
                        change: Change::Created,
                        row,
                    })
                    .collect(),
                continues: false,
                keyed: false,
            },
        })
        .collect())
}

/// The set projected into a fresh embedded index under `dir` with `embedder`'s vectors,
/// through the vector sink's code; its point ids by set row id.
pub fn index(
    set: &Set,
    embedder: &Arc<dyn Embedder>,
    dir: &Path,
) -> anyhow::Result<(Arc<dyn VectorIndex>, BTreeMap<Uuid, String>)> {
    let name = collection_name("text", embedder.dim(), 1);
    let index: Arc<dyn VectorIndex> = Arc::new(kledger_topology::vector::edge::EdgeIndex::open(
        &dir.join("index"),
        &name,
        embedder.dim(),
    )?);
    let g = VectorGen {
        index: index.clone(),
        embedder: embedder.clone(),
        marks: Some(MarkStore::open(&dir.join("marks"))?),
    };
    let commits = commits(set)?;
    let read: Vec<(i32, i64)> = commits.iter().map(|c| (c.partition, c.offset)).collect();
    kledger_topology::pipeline::project::vectors::project(
        &g,
        embedder.as_ref(),
        &commits,
        read.into_iter(),
    )?;
    let mut ids = BTreeMap::new();
    for r in &set.rows {
        let m = memory_id(&r.id, r.valid_from);
        let u = memory_uuid(&m).and_then(|u| Uuid::parse_str(&u).ok());
        ids.insert(u.context("memory id")?, r.id.clone());
    }
    Ok((index, ids))
}

/// The set's rows in a fresh embedded index under `dir` as the baselines see them: each row's
/// content as it is, embedded by `embedder` and counted by BM25 (no tags, no body, no
/// pronouns dropped: [`kledger_processors::index_text`] is kledger's, not the baselines').
pub fn plain_index(
    set: &Set,
    embedder: &Arc<dyn Embedder>,
    dir: &Path,
) -> anyhow::Result<Arc<dyn VectorIndex>> {
    let name = collection_name("text", embedder.dim(), 1);
    let index: Arc<dyn VectorIndex> = Arc::new(kledger_topology::vector::edge::EdgeIndex::open(
        &dir.join("plain"),
        &name,
        embedder.dim(),
    )?);
    let info = kledger_processors::payload::EmbeddingInfo {
        model: embedder.model().to_owned(),
        dim: embedder.dim(),
    };
    let rows: Vec<Row> = set.rows.iter().map(row).collect::<anyhow::Result<_>>()?;
    for chunk in rows.chunks(500) {
        let texts: Vec<&str> = chunk.iter().map(|r| r.content.as_str()).collect();
        let dense = embedder.embed(&texts)?;
        let points = chunk
            .iter()
            .zip(dense)
            .map(|(r, d)| {
                let id = memory_uuid(&r.memory_id)
                    .and_then(|u| Uuid::parse_str(&u).ok())
                    .context("memory id")?;
                Ok(kledger_topology::vector::Point {
                    id,
                    dense: d,
                    sparse: Bm25::default().document(&r.content),
                    payload: kledger_processors::payload::payload(r, &info, r.recorded_at),
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        index.upsert(points)?;
    }
    Ok(index)
}

/// A way of answering a question.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// search_knowledge's ranking with these fusion settings (kledger's index).
    Search(Fusion),
    /// BM25 alone over the rows' content (a plain index).
    Bm25,
    /// The dense model alone over the rows' content (a plain index).
    Dense,
    /// The dense provider alone over kledger's index text (for information: what the fusion
    /// adds to kledger's own dense candidates).
    DenseIndexed,
}

impl Method {
    /// Its name in tables.
    pub fn name(&self) -> &'static str {
        match self {
            Method::Search(_) => "search_knowledge",
            Method::Bm25 => "bm25",
            Method::Dense => "dense",
            Method::DenseIndexed => "dense (kledger text)",
        }
    }
}

/// Results asked for per question (the most a table reports, recall@10).
pub const RESULTS: usize = 10;

/// The set row ids `method` answers `q` with, best first (at most [`RESULTS`]).
pub fn answer(
    index: &Arc<dyn VectorIndex>,
    embedder: &dyn Embedder,
    ids: &BTreeMap<Uuid, String>,
    method: Method,
    q: &Question,
    keywords: &KeywordThreads,
) -> anyhow::Result<Vec<String>> {
    let filter = owner_filter(&q.account)?;
    let found = match method {
        Method::Search(f) => rank(index, embedder, &f, &filter, &q.question, RESULTS, keywords)?,
        Method::Bm25 => {
            let s = Bm25::default().query(&q.question);
            if s.indices.is_empty() {
                Vec::new()
            } else {
                index.query(QueryVector::Sparse(s), &filter, RESULTS)?
            }
        }
        Method::Dense => index.query(
            QueryVector::Dense(embedder.embed_query(&q.question)?),
            &filter,
            RESULTS,
        )?,
        Method::DenseIndexed => index.query(
            QueryVector::Dense(
                embedder.embed_query(&kledger_processors::index_text::query(&q.question))?,
            ),
            &filter,
            RESULTS,
        )?,
    };
    Ok(found
        .into_iter()
        .take(RESULTS)
        .filter_map(|(u, _)| ids.get(&u).cloned())
        .collect())
}

/// Hits of one group of questions.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scores {
    /// Questions.
    pub n: usize,
    /// Questions with a relevant row first.
    pub at1: usize,
    /// … in the first 5.
    pub at5: usize,
    /// … in the first 10.
    pub at10: usize,
    /// Sum of 1 / rank of the first relevant row (0 when none in the first 10).
    pub rr: f64,
    /// Sum over questions of the share of their relevant rows in the first 5.
    pub rows5: f64,
    /// Questions with a row of one of their relevant rows' sessions in the first 5 (sets
    /// whose rows have sessions).
    pub sessions5: usize,
}

impl Scores {
    /// Adds one question's answer.
    pub fn add(&mut self, relevant: &[String], answer: &[String]) {
        self.n += 1;
        let first = answer.iter().position(|a| relevant.contains(a));
        if let Some(r) = first {
            self.at1 += usize::from(r < 1);
            self.at5 += usize::from(r < 5);
            self.at10 += usize::from(r < 10);
            self.rr += 1.0 / (r as f64 + 1.0);
        }
        let found = relevant
            .iter()
            .filter(|r| answer.iter().take(5).any(|a| a == *r))
            .count();
        self.rows5 += found as f64 / relevant.len().max(1) as f64;
    }

    /// Adds one question's session-level hit: a row of a relevant session in the first 5.
    pub fn add_session(
        &mut self,
        sessions: &BTreeMap<&str, &str>,
        relevant: &[String],
        answer: &[String],
    ) {
        let wanted: Vec<&str> = relevant
            .iter()
            .filter_map(|r| sessions.get(r.as_str()).copied())
            .collect();
        let hit = answer
            .iter()
            .take(5)
            .filter_map(|a| sessions.get(a.as_str()))
            .any(|s| wanted.contains(s));
        self.sessions5 += usize::from(hit);
    }

    /// Session-level recall@5, as a fraction.
    pub fn session_rate(&self) -> f64 {
        self.sessions5 as f64 / self.n.max(1) as f64
    }

    /// recall@1, @5, @10, MRR and rows@5, as fractions.
    pub fn rates(&self) -> [f64; 5] {
        let n = self.n.max(1) as f64;
        [
            self.at1 as f64 / n,
            self.at5 as f64 / n,
            self.at10 as f64 / n,
            self.rr / n,
            self.rows5 / n,
        ]
    }
}

/// Scores by (split, category), and by split over all categories (category `all`).
pub type Table = BTreeMap<(String, String), Scores>;

/// Answers every question of `set` with `method`.
pub fn evaluate(
    set: &Set,
    index: &Arc<dyn VectorIndex>,
    embedder: &dyn Embedder,
    ids: &BTreeMap<Uuid, String>,
    method: Method,
) -> anyhow::Result<Table> {
    let keywords = KeywordThreads::default();
    let mut answers = Vec::with_capacity(set.questions.len());
    for q in &set.questions {
        answers.push(answer(index, embedder, ids, method, q, &keywords)?);
    }
    Ok(score(set, &answers))
}

/// The table of `answers` (one per question of `set`, in order).
pub fn score(set: &Set, answers: &[Vec<String>]) -> Table {
    let sessions: BTreeMap<&str, &str> = set
        .rows
        .iter()
        .filter_map(|r| Some((r.id.as_str(), r.session.as_deref()?)))
        .collect();
    let mut t = Table::new();
    for (q, a) in set.questions.iter().zip(answers) {
        for cat in [q.category.as_str(), "all"] {
            let s = t.entry((q.split.clone(), cat.to_owned())).or_default();
            s.add(&q.relevant, a);
            s.add_session(&sessions, &q.relevant, a);
        }
    }
    t
}

/// One question's candidates: dense, nameless dense, keyword.
pub type Candidates = (Vec<(Uuid, f32)>, Vec<(Uuid, f32)>, Vec<(Uuid, f32)>);

/// Each question's dense, nameless dense and keyword candidates as search_knowledge's
/// providers return them (`depth` of each, under the owner's access filter), for fusing
/// offline with many settings.
pub fn candidates(
    set: &Set,
    index: &Arc<dyn VectorIndex>,
    embedder: &dyn Embedder,
    depth: usize,
) -> anyhow::Result<Vec<Candidates>> {
    let mut out = Vec::with_capacity(set.questions.len());
    for q in &set.questions {
        let filter = owner_filter(&q.account)?;
        let dense = index.query(
            QueryVector::Dense(
                embedder.embed_query(&kledger_processors::index_text::query(&q.question))?,
            ),
            &filter,
            depth,
        )?;
        let nameless = match kledger_processors::index_text::query_nameless(&q.question) {
            Some(t) => index.query(
                QueryVector::Dense(embedder.embed_query(&t)?),
                &filter,
                depth,
            )?,
            None => dense.clone(),
        };
        let s = Bm25::default().query(&q.question);
        let keyword = if s.indices.is_empty() {
            Vec::new()
        } else {
            index.query(QueryVector::Sparse(s), &filter, depth)?
        };
        out.push((dense, nameless, keyword));
    }
    Ok(out)
}

/// The answers `fusion` makes of precomputed [`candidates`] (each list cut to the fusion's
/// depth for [`RESULTS`] results), as set row ids.
pub fn fuse_offline(
    candidates: &[Candidates],
    fusion: &Fusion,
    ids: &BTreeMap<Uuid, String>,
) -> Vec<Vec<String>> {
    let depth = RESULTS * fusion.depth;
    let cut = |l: &[(Uuid, f32)]| l[..l.len().min(depth)].to_vec();
    candidates
        .iter()
        .map(|(d, n, k)| {
            fusion
                .fuse(&cut(d), &cut(n), &cut(k))
                .into_iter()
                .take(RESULTS)
                .filter_map(|(u, _)| ids.get(&u).cloned())
                .collect()
        })
        .collect()
}

/// The owner's access filter of `account`.
fn owner_filter(account: &str) -> anyhow::Result<serde_json::Value> {
    let a = owner_of(account)?;
    let owner = Principal {
        tenant_id: a.tenant_id.clone(),
        team_id: None,
        agent_id: None,
        roles: Vec::new(),
        owner_kind: OwnerKind::User,
        owner_id: a.owner_id.clone(),
    };
    Ok(access_filter(&owner, &a, &[]))
}

/// The fusion settings a `tune` run searches: score fusion (divided by the best, and min-max)
/// at every split of the weight between the dense list, the nameless dense list and BM25 in
/// steps of 0.1 (BM25 at least 0.1), and rank fusion at dense weights 1..=6 and rank constants
/// 2..=60, each at 2 and 4 candidates per result.
pub fn fusion_grid() -> Vec<Fusion> {
    let mut grid = Vec::new();
    for depth in [2usize, 4] {
        for min_max in [false, true] {
            for dense in 0..=9u8 {
                for nameless in 0..=(9 - dense) {
                    let keyword = 10 - dense - nameless;
                    grid.push(Fusion {
                        dense: f32::from(dense) / 10.0,
                        nameless: f32::from(nameless) / 10.0,
                        keyword: f32::from(keyword) / 10.0,
                        fuse: Fuse::Score { min_max },
                        depth,
                    });
                }
            }
        }
        for dense in [1.0f32, 2.0, 4.0, 6.0] {
            for k in [2.0f32, 10.0, 60.0] {
                grid.push(Fusion {
                    dense,
                    nameless: 0.0,
                    keyword: 1.0,
                    fuse: Fuse::Rank { k },
                    depth,
                });
            }
        }
    }
    grid
}

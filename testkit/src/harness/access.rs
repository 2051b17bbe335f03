//! Access: a world of accounts in two tenants whose rows carry random visibility, ACL lists,
//! sensitivity, kinds, subjects and statuses (built through the real decide path, folded into
//! a view store and the embedded vector index by the sinks' own code), queried by random
//! principals through the read API's functions — search_knowledge, read_playbook,
//! get_entity_timeline and profile. Every row an answer shows is checked against the rules as
//! cm_payload_v1 and the sensitivity table state them ([`spec`]); restricted rows must never
//! reach the vector index; read_playbook must answer missing and foreign ids alike.

use std::collections::BTreeMap;
use std::sync::Arc;

use kledger_processors::access::{Principal, SENSITIVE_READER_ROLE};
use kledger_schemas::*;
use kledger_state::{MarkStore, ViewStore};
use kledger_topology::config::Config;
use kledger_topology::serve::api::read::{
    ProfileParams, after_wait, profile_answer, read_playbook,
};
use kledger_topology::serve::api::search::{SearchRequest, search_knowledge};
use kledger_topology::serve::api::timeline::{TimelineParams, entity_timeline};
use kledger_topology::vector::VectorGen;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Row as SummaryRow;
use crate::Ledger;
use crate::build::{close, document, fact, intent, purge, third_party, trigger};

/// The rules as cm_payload_v1 and kledger's sensitivity table state them: may `p` read `r`.
pub fn spec(p: &Principal, r: &Row) -> bool {
    let owner = r.tenant.tenant_id == p.tenant_id
        && r.tenant.owner_kind == p.owner_kind
        && r.tenant.owner_id == p.owner_id;
    let in_acl = p
        .agent_id
        .as_ref()
        .is_some_and(|a| r.acl.read_agent_ids.contains(a))
        || p.team_id
            .as_ref()
            .is_some_and(|t| r.acl.read_team_ids.contains(t))
        || p.roles.iter().any(|x| r.acl.read_role_ids.contains(x));
    let visibility = match r.visibility {
        Visibility::Private => owner,
        Visibility::Confidential => owner || in_acl,
        Visibility::Public => owner || r.tenant.team_id.is_none() || r.tenant.team_id == p.team_id,
    };
    let sensitivity = match r.sensitivity.level {
        SensitivityLevel::Normal => true,
        SensitivityLevel::Sensitive => owner || p.roles.iter().any(|x| x == SENSITIVE_READER_ROLE),
        SensitivityLevel::Restricted => owner,
    };
    r.tenant.tenant_id == p.tenant_id && r.status != Status::Tombstoned && visibility && sensitivity
}

const TENANTS: &[&str] = &["t_a", "t_b"];
const TEAMS: &[&str] = &["team_x", "team_y"];
const AGENTS: &[&str] = &["agt_1", "agt_2"];
const ROLES: &[&str] = &["role_admin", "role_ops", SENSITIVE_READER_ROLE];
const OWNERS: &[(OwnerKind, &str)] = &[
    (OwnerKind::User, "u_1"),
    (OwnerKind::User, "u_2"),
    (OwnerKind::User, "u_3"),
    (OwnerKind::Agent, "agt_1"),
    (OwnerKind::Team, "team_x"),
];
const ENTITIES: &[&str] = &["e_1", "e_2", "e_3"];
const WORDS: &[&str] = &["tea", "lisbon", "report", "dentist", "budget", "garden"];
const TIME: i64 = 1_767_225_600_000;

/// What the access check did and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessFigures {
    /// Accounts in the world.
    pub accounts: usize,
    /// Rows in the world (every status).
    pub rows: usize,
    /// Restricted rows.
    pub restricted: usize,
    /// Queries per endpoint.
    pub queries: BTreeMap<&'static str, u64>,
    /// Rows shown that the rules forbid (the first few described in `examples`).
    pub leaked: usize,
    /// Descriptions of the first leaks.
    pub examples: Vec<String>,
    /// Points in the vector index for restricted rows.
    pub restricted_indexed: usize,
    /// read_playbook answers that told a missing id from a foreign one.
    pub playbook_oracle: usize,
    /// Rows the answers showed (all checked): a check over empty answers would prove nothing.
    pub shown: u64,
    /// `min_commit_seq` probes of accounts the prober does not own (every read, through the
    /// async layer the HTTP endpoints and MCP tools share): count, existence and position.
    pub wait_probes: u64,
    /// Probes whose answer differed from the one for an account that does not exist (a count
    /// or existence oracle).
    pub wait_oracle: usize,
    /// The owner's own probes that did not answer `409 not_caught_up` with its positions.
    pub owner_waits_wrong: usize,
    /// Median time of a probe of an account with commits, and of one without, µs.
    pub wait_probe_us: (u64, u64),
}

/// How far apart the two medians of [`AccessFigures::wait_probe_us`] may be, µs: a refusal that
/// read the account would cost a store read more.
pub const WAIT_PROBE_SPREAD_US_MAX: u64 = 2_000;

impl AccessFigures {
    /// The summary row.
    pub fn row(&self) -> SummaryRow {
        let total: u64 = self.queries.values().sum();
        let per: Vec<String> = self
            .queries
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        SummaryRow {
            check: "access",
            figures: format!(
                "{total} queries ({}) showing {} rows, over {} accounts / {} rows ({} restricted): leaked {}{}, restricted points in the index {}, read_playbook telling missing from foreign {}; {} min_commit_seq probes of others' accounts telling them from an unknown one {} (median {} / {} us with / without commits), owner's waits wrong {}",
                per.join(", "),
                self.shown,
                self.accounts,
                self.rows,
                self.restricted,
                self.leaked,
                if self.examples.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", self.examples.join("; "))
                },
                self.restricted_indexed,
                self.playbook_oracle,
                self.wait_probes,
                self.wait_oracle,
                self.wait_probe_us.0,
                self.wait_probe_us.1,
                self.owner_waits_wrong
            ),
            ok: self.ok(),
        }
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.leaked == 0
            && self.restricted_indexed == 0
            && self.playbook_oracle == 0
            && self.shown > 0
            && self.wait_probes > 0
            && self.wait_oracle == 0
            && self.owner_waits_wrong == 0
            && self.wait_probe_us.0.abs_diff(self.wait_probe_us.1) <= WAIT_PROBE_SPREAD_US_MAX
    }
}

fn account(t: &str, k: OwnerKind, o: &str) -> String {
    format!("{t}/{}/{o}", k.as_str())
}

fn some<R: Rng>(rng: &mut R, xs: &[&str]) -> Vec<String> {
    xs.iter()
        .filter(|_| rng.random_bool(0.3))
        .map(|s| (*s).to_owned())
        .collect()
}

// Long on purpose: the world's accounts, rows, closes and purges are built in one visible sequence.
/// Builds the world: `rows_per_account` writes per account, then some closes and purges.
fn world(seed: u64, rows_per_account: usize) -> (Ledger, Vec<String>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut l = Ledger::new(4);
    let mut accounts = Vec::new();
    let mut n = 0usize;
    for t in TENANTS {
        for (k, o) in OWNERS {
            let acct = account(t, *k, o);
            accounts.push(acct.clone());
            for _ in 0..rows_per_account {
                n += 1;
                let word = WORDS.choose(&mut rng).copied().unwrap_or("tea");
                // Unique, fixed-width content: a forbidden row's text is recognisable anywhere.
                let content = format!("note {n:06} about {word}");
                let mut op = match rng.random_range(0..4) {
                    0 => document(&content, &format!("step one for {n:06}")),
                    1 => trigger(&content, &[("when", "monday")]),
                    2 => third_party(
                        ENTITIES.choose(&mut rng).copied().unwrap_or("e_1"),
                        &content,
                    ),
                    _ => fact(&content),
                };
                op.visibility = *[
                    Visibility::Private,
                    Visibility::Confidential,
                    Visibility::Public,
                ]
                .choose(&mut rng)
                .unwrap_or(&Visibility::Private);
                op.acl = Acl {
                    read_team_ids: some(&mut rng, TEAMS),
                    read_agent_ids: some(&mut rng, AGENTS),
                    read_role_ids: some(&mut rng, ROLES),
                };
                op.sensitivity.level = *[
                    SensitivityLevel::Normal,
                    SensitivityLevel::Normal,
                    SensitivityLevel::Sensitive,
                    SensitivityLevel::Restricted,
                ]
                .choose(&mut rng)
                .unwrap_or(&SensitivityLevel::Normal);
                let reason = crate::largest::reason_for(op.kind);
                let mut i = intent(&acct, &format!("w{n}"), reason, 0, vec![Op::Assert(op)]);
                i.tenant.team_id = TEAMS
                    .choose(&mut rng)
                    .map(|s| (*s).to_owned())
                    .filter(|_| rng.random_bool(0.7));
                i.tenant.agent_id = None;
                l.apply(&IntentRecord {
                    timestamp: TIME + n as i64,
                    partition: None,
                    offset: None,
                    intent: i,
                });
            }
        }
    }
    // Close or purge a share of the rows, so superseded, closed and tombstoned rows exist.
    let rows: Vec<(String, Row)> = l
        .commits
        .iter()
        .flat_map(|c| {
            c.ops
                .iter()
                .map(move |o| (c.account_id.clone(), o.row.clone()))
        })
        .collect();
    for (acct, row) in &rows {
        if !rng.random_bool(0.15) {
            continue;
        }
        n += 1;
        let op = if rng.random_bool(0.5) {
            close(row, "no longer true")
        } else {
            purge(row, "forget this")
        };
        let reason = if matches!(op, Op::Purge(_)) {
            WriteReason::DirectUserStatement
        } else {
            crate::largest::reason_for(row.kind)
        };
        let mut i = intent(acct, &format!("x{n}"), reason, 0, vec![op]);
        crate::build::plan(&mut i, row);
        i.tenant.team_id = row.tenant.team_id.clone();
        i.tenant.agent_id = None;
        l.apply(&IntentRecord {
            timestamp: TIME + n as i64,
            partition: None,
            offset: None,
            intent: i,
        });
    }
    (l, accounts)
}

fn principal<R: Rng>(rng: &mut R) -> Principal {
    let (k, o) = *OWNERS.choose(rng).unwrap_or(&OWNERS[0]);
    Principal {
        tenant_id: (*TENANTS.choose(rng).unwrap_or(&"t_a")).to_owned(),
        team_id: TEAMS
            .choose(rng)
            .map(|s| (*s).to_owned())
            .filter(|_| rng.random_bool(0.6)),
        agent_id: AGENTS
            .choose(rng)
            .map(|s| (*s).to_owned())
            .filter(|_| rng.random_bool(0.4)),
        roles: some(rng, ROLES),
        owner_kind: k,
        owner_id: o.to_owned(),
    }
}

/// A read's effective and record times: now (half the reads), or a random point of the world's
/// history (a bitemporal read).
fn when(rng: &mut impl Rng) -> (Option<i64>, Option<i64>) {
    if rng.random_bool(0.5) {
        return (None, None);
    }
    let as_of = TIME + rng.random_range(0..20_000_000i64);
    let known_at = rng
        .random_bool(0.5)
        .then(|| TIME + rng.random_range(0..20_000_000i64));
    (Some(as_of), known_at)
}

// Long on purpose: a harness check reads top to bottom as its steps (world, index, queries, verdict).
/// Runs `queries` queries (at least) against a world built with `seed`.
pub fn access(seed: u64, queries: u64) -> anyhow::Result<AccessFigures> {
    let (ledger, accounts) = world(seed, 40);
    let dir = tempfile::tempdir()?;
    // Project the world with the sinks' own code.
    let views = ViewStore::open(&dir.path().join("views"), 32 << 20)?;
    // The default embedder (the local model): the access filter runs before ranking on both
    // providers whatever the vectors.
    let embedder = crate::retrieval::default_embedder()?;
    let index = kledger_topology::vector::edge::EdgeIndex::open(
        &dir.path().join("index"),
        &kledger_processors::payload::collection_name("text", embedder.dim(), 1),
        embedder.dim(),
    )?;
    let g = VectorGen {
        index: Arc::new(index),
        embedder: embedder.clone(),
        marks: Some(MarkStore::open(&dir.path().join("marks"))?),
    };
    // The data keys the sinks read from the keys topic before they fold (rules v4).
    let keys = crate::ledger::key_records(&ledger.commits, 4);
    kledger_state::KeyCache::add(&views, &keys)?;
    kledger_state::KeyCache::add(g.marks()?, &keys)?;
    let positioned = crate::kafka::positioned(&ledger.commits, |c| c.intent_partition);
    for chunk in positioned.chunks(500) {
        let read: Vec<(i32, i64)> = chunk.iter().map(|c| (c.partition, c.offset)).collect();
        kledger_topology::pipeline::project::views::fold(&views, chunk, read.iter().copied())?;
        kledger_topology::pipeline::project::vectors::project(
            &g,
            embedder.as_ref(),
            chunk,
            read.into_iter(),
        )?;
    }
    // Every row as it stands, by account; and each row's text tag as first written (a purge
    // erases the content: the tag still recognises it).
    let mut rows: BTreeMap<String, BTreeMap<String, Row>> = BTreeMap::new();
    let mut tags: BTreeMap<String, String> = BTreeMap::new();
    for c in &ledger.commits {
        for op in &c.ops {
            if let Some(tag) = op.row.content.get(..11) {
                tags.entry(op.row.memory_id.clone())
                    .or_insert_with(|| tag.to_owned());
            }
            rows.entry(c.account_id.clone())
                .or_default()
                .insert(op.row.memory_id.clone(), op.row.clone());
        }
    }
    let mut f = AccessFigures {
        accounts: accounts.len(),
        rows: rows.values().map(BTreeMap::len).sum(),
        restricted: rows
            .values()
            .flat_map(BTreeMap::values)
            .filter(|r| r.sensitivity.level == SensitivityLevel::Restricted)
            .count(),
        ..AccessFigures::default()
    };
    // Restricted rows never reach the index.
    let by_id: BTreeMap<&str, &Row> = rows
        .values()
        .flat_map(BTreeMap::values)
        .map(|r| (r.memory_id.as_str(), r))
        .collect();
    for (_, payload) in g.index.scan()? {
        let id = payload
            .get("memory_id")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        if by_id
            .get(id)
            .is_none_or(|r| r.sensitivity.level == SensitivityLevel::Restricted)
        {
            f.restricted_indexed += 1;
        }
    }
    let api = crate::offline::api(dir.path(), Config::default(), 4, views, Some(g))?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xACCE55);
    let leak = |f: &mut AccessFigures, what: String| {
        f.leaked += 1;
        if f.examples.len() < 3 {
            f.examples.push(what);
        }
    };
    let mut count = 0u64;
    while count < queries {
        let p = principal(&mut rng);
        let own = account(&p.tenant_id, p.owner_kind, &p.owner_id);
        let target = match rng.random_range(0..10) {
            0..6 => own.clone(),
            6..9 => accounts
                .iter()
                .filter(|a| a.starts_with(&format!("{}/", p.tenant_id)))
                .collect::<Vec<_>>()
                .choose(&mut rng)
                .map(|a| (*a).clone())
                .unwrap_or(own.clone()),
            _ => accounts.choose(&mut rng).cloned().unwrap_or(own.clone()),
        };
        let empty = BTreeMap::new();
        let in_account = rows.get(&target).unwrap_or(&empty);
        let forbidden = |r: &Row| !spec(&p, r);
        let acct = Some(target.as_str());
        match count % 4 {
            0 => {
                *f.queries.entry("profile").or_insert(0) += 1;
                // Now, or a bitemporal point: access holds at every effective and record time.
                let (as_of, known_at) = when(&mut rng);
                let q = ProfileParams {
                    account: acct.map(str::to_owned),
                    as_of: Some(as_of.unwrap_or(TIME + 10_000_000)),
                    known_at,
                    ..ProfileParams::default()
                };
                if let Ok(a) = profile_answer(&api, &p, &q) {
                    f.shown += a.profile.lines().count() as u64;
                    for r in in_account.values().filter(|r| forbidden(r)) {
                        let tag = tags.get(&r.memory_id).map_or("", String::as_str);
                        if (!tag.is_empty() && a.profile.contains(tag))
                            || a.playbook_index.contains(&r.memory_id)
                        {
                            leak(
                                &mut f,
                                format!("profile shows {} to {:?}", r.memory_id, p.owner_id),
                            );
                        }
                    }
                }
            }
            1 => {
                *f.queries.entry("read_playbook").or_insert(0) += 1;
                let docs: Vec<&Row> = in_account
                    .values()
                    .filter(|r| r.kind == Kind::Document)
                    .collect();
                let id = match rng.random_range(0..3) {
                    0 => docs
                        .choose(&mut rng)
                        .map(|r| r.memory_id.clone())
                        .unwrap_or_default(),
                    1 => by_id
                        .keys()
                        .copied()
                        .collect::<Vec<_>>()
                        .choose(&mut rng)
                        .map(|s| (*s).to_owned())
                        .unwrap_or_default(),
                    _ => format!("mem_01KE{:022}", rng.random_range(0..1_000_000u64)),
                };
                let (as_of, known_at) = when(&mut rng);
                let q = ProfileParams {
                    account: acct.map(str::to_owned),
                    as_of,
                    known_at,
                    ..ProfileParams::default()
                };
                match read_playbook(&api, &p, &id, &q) {
                    Ok(a) => {
                        f.shown += 1;
                        let shown = in_account.get(&a.memory_id);
                        if shown.is_none_or(|r| forbidden(r) || r.kind != Kind::Document) {
                            leak(
                                &mut f,
                                format!("read_playbook shows {id} to {:?}", p.owner_id),
                            );
                        }
                    }
                    Err(e) => {
                        // Missing, foreign or unreadable: one answer (other tenants: 403; a
                        // history read of another owner's account: 403 history_not_allowed,
                        // whatever the id).
                        let cross = !target.starts_with(&format!("{}/", p.tenant_id));
                        let code = e.code();
                        let history = (as_of.is_some() || known_at.is_some()) && target != own;
                        if history && !cross {
                            if code != "history_not_allowed" {
                                f.playbook_oracle += 1;
                            }
                        } else if (!cross && code != "unavailable")
                            || (cross && code == "unavailable")
                        {
                            f.playbook_oracle += 1;
                        }
                    }
                }
            }
            2 => {
                *f.queries.entry("get_entity_timeline").or_insert(0) += 1;
                let entity = if rng.random_bool(0.3) {
                    "user".to_owned()
                } else {
                    (*ENTITIES.choose(&mut rng).unwrap_or(&"e_1")).to_owned()
                };
                let (as_of, known_at) = when(&mut rng);
                let q = TimelineParams {
                    account: acct.map(str::to_owned),
                    sources: None,
                    limit: Some(40),
                    history: rng.random_bool(0.5),
                    audit: rng.random_bool(0.5),
                    as_of,
                    known_at,
                    min_commit_seq: None,
                    wait_ms: None,
                };
                if let Ok(a) = entity_timeline(&api, &p, &entity, &q) {
                    f.shown += a.items.len() as u64;
                    for item in &a.items {
                        if in_account.get(&item.memory_id).is_none_or(forbidden) {
                            leak(
                                &mut f,
                                format!("timeline shows {} to {:?}", item.memory_id, p.owner_id),
                            );
                        }
                    }
                }
            }
            _ => {
                *f.queries.entry("search_knowledge").or_insert(0) += 1;
                let query = format!(
                    "{} {}",
                    WORDS.choose(&mut rng).unwrap_or(&"tea"),
                    WORDS.choose(&mut rng).unwrap_or(&"tea")
                );
                let (as_of, known_at) = when(&mut rng);
                let req = SearchRequest {
                    query,
                    limit: Some(20),
                    kinds: Vec::new(),
                    account: acct.map(str::to_owned),
                    as_of,
                    known_at,
                    min_commit_seq: None,
                    wait_ms: None,
                };
                if let Ok(a) = search_knowledge(&api, &p, req) {
                    f.shown += a.results.len() as u64;
                    for h in &a.results {
                        if in_account.get(&h.memory_id).is_none_or(forbidden) {
                            leak(
                                &mut f,
                                format!("search shows {} to {:?}", h.memory_id, p.owner_id),
                            );
                        }
                    }
                }
            }
        }
        count += 1;
    }
    wait_probes(&api, &accounts, &mut rng, &mut f)?;
    Ok(f)
}

/// One read of every kind with `min_commit_seq`, through [`after_wait`] (the layer the HTTP
/// endpoints and the MCP tools share): the answer's status, code, message and detail.
fn probe_reads(
    rt: &tokio::runtime::Runtime,
    api: &kledger_topology::serve::api::Api,
    p: &Principal,
    account: &str,
    min: i64,
) -> Vec<String> {
    let answer = |r: Result<String, kledger_topology::serve::api::ApiError>| match r {
        Ok(_) => "ok".to_owned(),
        Err(e) => format!(
            "{} {} {} {}",
            e.status(),
            e.code(),
            e.message(),
            e.detail().map(|d| d.to_string()).unwrap_or_default()
        ),
    };
    let acct = Some(account.to_owned());
    let mut out = Vec::new();
    for read in 0..4 {
        let (a, p2) = (api.clone(), p.clone());
        let q = ProfileParams {
            account: acct.clone(),
            min_commit_seq: Some(min),
            wait_ms: Some(0),
            ..ProfileParams::default()
        };
        let t = TimelineParams {
            account: acct.clone(),
            sources: None,
            limit: None,
            history: false,
            audit: false,
            as_of: None,
            known_at: None,
            min_commit_seq: Some(min),
            wait_ms: Some(0),
        };
        let s = SearchRequest {
            query: "tea".into(),
            limit: None,
            kinds: Vec::new(),
            account: acct.clone(),
            as_of: None,
            known_at: None,
            min_commit_seq: Some(min),
            wait_ms: Some(0),
        };
        let vectors = read == 3;
        let r = rt.block_on(after_wait(
            api,
            p,
            acct.as_deref(),
            Some(min),
            Some(0),
            vectors,
            move || {
                match read {
                    0 => profile_answer(&a, &p2, &q).map(|_| ()),
                    1 => read_playbook(&a, &p2, "mem_01KE0000000000000000000000", &q).map(|_| ()),
                    2 => entity_timeline(&a, &p2, "user", &t).map(|_| ()),
                    _ => search_knowledge(&a, &p2, s).map(|_| ()),
                }
                .map(|()| String::new())
            },
        ));
        out.push(answer(r));
    }
    out
}

/// Issue 44's oracle probes: `min_commit_seq` for an account the prober does not own answers
/// as for an account that does not exist, whatever it holds (count, existence), in the same
/// time; the owner's answers do tell its own positions.
fn wait_probes(
    api: &kledger_topology::serve::api::Api,
    accounts: &[String],
    rng: &mut ChaCha8Rng,
    f: &mut AccessFigures,
) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut with_commits = Vec::new();
    let mut without = Vec::new();
    for _ in 0..24 {
        let p = principal(rng);
        let own = account(&p.tenant_id, p.owner_kind, &p.owner_id);
        let unknown = format!(
            "{}/user/u_nobody_{}",
            p.tenant_id,
            rng.random_range(0..1_000u32)
        );
        for min in [1, 8, 1_000_000_000_000_000] {
            let baseline = probe_reads(&rt, api, &p, &unknown, min);
            for acct in accounts
                .iter()
                .filter(|a| a.starts_with(&format!("{}/", p.tenant_id)) && **a != own)
            {
                let started = std::time::Instant::now();
                let got = probe_reads(&rt, api, &p, acct, min);
                with_commits.push(started.elapsed().as_micros() as u64);
                let started = std::time::Instant::now();
                let again = probe_reads(&rt, api, &p, &unknown, min);
                without.push(started.elapsed().as_micros() as u64);
                f.wait_probes += 2 * got.len() as u64;
                f.wait_oracle += got
                    .iter()
                    .zip(&baseline)
                    .chain(again.iter().zip(&baseline))
                    .filter(|(a, b)| a != b)
                    .count();
            }
            // The owner's own account: a commit it has not reached is `409` with positions.
            if accounts.contains(&own) && min == 1_000_000_000_000_000 {
                for a in probe_reads(&rt, api, &p, &own, min) {
                    if !(a.starts_with("409") && a.contains("not_caught_up") && a.contains("views"))
                    {
                        f.owner_waits_wrong += 1;
                    }
                }
            }
        }
    }
    let median = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    };
    f.wait_probe_us = (median(&mut with_commits), median(&mut without));
    Ok(())
}

//! The demo, end to end (issue 49): the binary the README's demo command runs (`kledger run
//! --demo FILE`: the broker in its process, the local model, every role), fed FILE as a user
//! meets it. Rows from published to searchable: from the process's start (start-up included)
//! until every row is in the vector index (decide + view + embed + index), as rows/s; then
//! search_knowledge over HTTP as the rows' owners (one connection per request), p50 and p99.
//! Each run also reads where the time went off the process's metrics (embedding seconds,
//! decided by when) and its CPU time.
//!
//! The rows are the conversation set's (`testkit/data/conversations`): its raw turns
//! (`Speaker: text`, 16 words on average) and its extracted facts (shorter), each row its own
//! intent of one fact, in the set's order, repeated under further accounts when more rows are
//! asked for than the set has; the questions are the set's.
//!
//! `cargo bench -p kledger-topology --bench demo` (`-- N` rows per run, default 5,000; the
//! search runs use 10,000 rows; `-- runs R`, default 3; medians are printed). Goal: ≥ 500
//! rows/s, and search p99 ≤ 20 ms at 10k rows.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kledger_schemas::{IntentRecord, Op, WriteReason};
use kledger_testkit::build::{fact, intent};
use kledger_testkit::kafka::{get, http_request, stop};
use kledger_testkit::retrieval::{Corpus, Set, conversations_dir, load_conversations};
use kledger_topology::kafka::embedded::free_port;

/// Search requests per search run.
const SEARCHES: usize = 1_000;
/// Rows in the search runs.
const SEARCH_ROWS: usize = 10_000;

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The account of pass `pass` over the set for its account `account` (`t_conv/user/u_c03`):
/// the set's own on the first pass, `u_c03_p1` and on after.
fn account_of(account: &str, pass: usize) -> String {
    if pass == 0 {
        account.to_owned()
    } else {
        format!("{account}_p{pass}")
    }
}

/// `n` rows of `set` as the demo's intents file (JSON lines), one intent of one fact per row.
fn intents(set: &Set, n: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        let (pass, r) = (i / set.rows.len(), &set.rows[i % set.rows.len()]);
        let record = IntentRecord {
            timestamp: r.valid_from,
            partition: None,
            offset: None,
            intent: intent(
                &account_of(&r.account, pass),
                &format!("{}-{pass}", r.id),
                WriteReason::DirectUserStatement,
                0,
                vec![Op::Assert(fact(&r.content))],
            ),
        };
        out.push_str(&serde_json::to_string(&record).expect("intent"));
        out.push('\n');
    }
    out
}

/// The sum of a metric's samples (every label set).
fn metric(text: &str, name: &str) -> f64 {
    metric_of(text, name, "")
}

/// The sum of a metric's series whose labels contain `label` (`sink="vectors"`).
fn metric_of(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.starts_with(name)
                && matches!(l.as_bytes().get(name.len()), Some(b'{' | b' '))
                && l.contains(label)
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A principal per account of the set (the first pass's), as `KLEDGER_API__PRINCIPALS__*`.
fn principals(set: &Set) -> (Vec<(String, String)>, BTreeMap<String, String>) {
    let mut env = Vec::new();
    let mut tokens = BTreeMap::new();
    let accounts: std::collections::BTreeSet<&str> =
        set.rows.iter().map(|r| r.account.as_str()).collect();
    for (i, a) in accounts.into_iter().enumerate() {
        let mut parts = a.split('/');
        let (tenant, kind, owner) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        let name = format!("P{i}");
        let token = format!("demo-bench-token-{i:04}-0123456789");
        for (k, v) in [
            ("TOKEN", token.as_str()),
            ("TENANT_ID", tenant),
            ("OWNER_KIND", kind),
            ("OWNER_ID", owner),
        ] {
            env.push((
                format!("KLEDGER_API__PRINCIPALS__{name}__{k}"),
                v.to_owned(),
            ));
        }
        tokens.insert(a.to_owned(), token);
    }
    (env, tokens)
}

/// What one run measured.
struct Run {
    rows_per_s: f64,
    ready_s: f64,
    decided_s: f64,
    searchable_s: f64,
    embed_s: f64,
    sink_s: f64,
    first_s: f64,
    cpu_s: f64,
    search_ms: Vec<f64>,
}

/// CPU seconds (user + system) of process `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // After the command: state is field 0, utime 11, stime 12 (clock ticks, 100 a second).
    (ticks(11) + ticks(12)) / 100.0
}

fn run(set: &Set, n: usize, searches: usize) -> Run {
    let bin = Path::new(env!("CARGO_BIN_EXE_kledger"));
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("intents.jsonl");
    std::fs::write(&file, intents(set, n)).expect("intents file");
    let port = free_port().expect("port");
    let broker = free_port().expect("port");
    let (mut env, tokens) = principals(set);
    env.push(("KLEDGER_HTTP__LISTEN".into(), format!("127.0.0.1:{port}")));
    env.push((
        "KLEDGER_EMBEDDED__LISTEN".into(),
        format!("127.0.0.1:{broker}"),
    ));
    if let Ok(m) = std::env::var("KLEDGER_VECTORS__EMBEDDER__MODEL_DIR") {
        env.push(("KLEDGER_VECTORS__EMBEDDER__MODEL_DIR".into(), m));
    }
    let started = Instant::now();
    let child = spawn_demo(bin, &env, dir.path(), &file);
    let pid = child.id();
    let (mut ready_s, mut decided_s, mut first_s) = (None, None, None);
    // `DEMO_TRACE=1` prints the counters as they move (where a run's time goes).
    let trace = std::env::var_os("DEMO_TRACE").is_some();
    let mut seen = (0.0, 0.0, 0.0, 0.0);
    let deadline = started + Duration::from_secs(900);
    let metrics = loop {
        assert!(Instant::now() < deadline, "not searchable in 900 s");
        if ready_s.is_none() && matches!(get(port, "/readyz"), Some((200, _))) {
            ready_s = Some(started.elapsed().as_secs_f64());
        }
        if let Some((200, text)) = get(port, "/metrics") {
            if decided_s.is_none() && metric(&text, "kledger_intents_total") >= n as f64 {
                decided_s = Some(started.elapsed().as_secs_f64());
            }
            let points = metric(&text, "kledger_vector_points_total");
            if trace {
                let now = (
                    metric(&text, "kledger_intents_total"),
                    metric_of(&text, "kledger_sink_records_total", "sink=\"views\""),
                    metric_of(&text, "kledger_sink_records_total", "sink=\"vectors\""),
                    points,
                );
                if now != seen {
                    println!(
                        "  {:5.2} s: decided {}, views sink read {}, vector sink read {}, points {}",
                        started.elapsed().as_secs_f64(),
                        now.0,
                        now.1,
                        now.2,
                        now.3
                    );
                    seen = now;
                }
            }
            if first_s.is_none() && points > 0.0 {
                first_s = Some(started.elapsed().as_secs_f64());
            }
            if points >= n as f64 {
                break text;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let searchable_s = started.elapsed().as_secs_f64();
    let cpu_s = cpu_seconds(pid);
    let mut search_ms = Vec::new();
    for q in set.questions.iter().cycle().take(searches) {
        let auth = format!("Bearer {}", tokens[&q.account]);
        let body = serde_json::json!({ "query": q.question, "limit": 8 }).to_string();
        let t = Instant::now();
        let (status, answer) = http_request(
            port,
            "POST",
            "/v1/search",
            &[("Authorization", auth.as_str())],
            &body,
        );
        search_ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(status, 200, "{answer}");
    }
    stop(child);
    // `DEMO_LOG=FILE` keeps the last run's log (the tempdir goes with the run).
    if let Some(keep) = std::env::var_os("DEMO_LOG") {
        let _ = std::fs::copy(dir.path().join("kledger.log"), keep);
    }
    Run {
        rows_per_s: n as f64 / searchable_s,
        ready_s: ready_s.unwrap_or(f64::NAN),
        decided_s: decided_s.unwrap_or(f64::NAN),
        searchable_s,
        embed_s: metric(&metrics, "kledger_embed_seconds_sum"),
        sink_s: metric_of(
            &metrics,
            "kledger_sink_write_seconds_sum",
            "sink=\"vectors\"",
        ),
        first_s: first_s.unwrap_or(f64::NAN),
        cpu_s,
        search_ms,
    }
}

/// `kledger run --demo FILE` with `env`, its log in `dir/kledger.log`.
fn spawn_demo(
    bin: &Path,
    env: &[(String, String)],
    dir: &Path,
    file: &Path,
) -> kledger_testkit::kafka::ChildGuard {
    let log = std::fs::File::create(dir.join("kledger.log")).expect("log");
    let child = std::process::Command::new(bin)
        .arg("run")
        .arg("--demo")
        .arg(file)
        .envs(env.iter().cloned())
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .expect("kledger");
    kledger_testkit::kafka::ChildGuard::new(child)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs_at = args.iter().position(|a| a == "runs");
    let runs: usize = runs_at
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(3);
    let n: usize = args
        .iter()
        .enumerate()
        .filter(|(i, _)| runs_at.is_none_or(|r| *i != r + 1))
        .find_map(|(_, a)| a.parse().ok())
        .unwrap_or(5_000);
    println!(
        "the demo end to end: kledger run --demo FILE (embedded broker, local model, every role), {} cores",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    for corpus in [Corpus::Turns, Corpus::Facts] {
        let set = load_conversations(&conversations_dir(), corpus).expect("conversation set");
        let words = set
            .rows
            .iter()
            .map(|r| r.content.split_whitespace().count())
            .sum::<usize>() as f64
            / set.rows.len() as f64;
        let mut rates = Vec::new();
        for i in 0..runs {
            let r = run(&set, n, 0);
            println!(
                "{} ({words:.1} words a row), {n} rows, run {}: searchable after {:.1} s = {:.0} rows/s (ready {:.1} s, first row searchable {:.1} s, all decided {:.1} s; the vector sink busy {:.1} s, {:.1} s of it embedding; {:.1} s CPU, {:.2} cores)",
                corpus.name(),
                i + 1,
                r.searchable_s,
                r.rows_per_s,
                r.ready_s,
                r.first_s,
                r.decided_s,
                r.sink_s,
                r.embed_s,
                r.cpu_s,
                r.cpu_s / r.searchable_s
            );
            rates.push(r.rows_per_s);
        }
        println!(
            "{}: median {:.0} rows/s from published to searchable, start-up included (goal >= 500)",
            corpus.name(),
            median(rates)
        );
    }
    let set = load_conversations(&conversations_dir(), Corpus::Turns).expect("conversation set");
    let mut r = run(&set, SEARCH_ROWS, SEARCHES);
    println!(
        "search_knowledge over HTTP at {SEARCH_ROWS} rows ({} rows/s to searchable): {SEARCHES} searches, p50 {:.1} ms, p99 {:.1} ms (goal p99 <= 20 ms)",
        r.rows_per_s.round(),
        quantile(&mut r.search_ms, 0.5),
        quantile(&mut r.search_ms, 0.99)
    );
}

//! Many hosts (issue 45): three `kledger run` processes, each with its own working directory
//! (its own state, view store and vector index) and HTTP port, with the default roles and
//! timeouts, against one broker in a process of its own that admits only its SCRAM login (a real
//! SASL handshake on every client of every host).
//!
//! - **Every host answers every account alike**: each account's export, profile, timeline and
//!   search are equal on the three hosts (every host keeps a whole replica of the views and of
//!   the vector index).
//! - **Failover while idle**: one host is SIGKILLed with nothing to decide; every intents
//!   partition must be owned again (the survivors' `/readyz` `assigned`) within
//!   [`OWNED_WITHIN`], and every account's reads stay complete on the survivors.
//! - **Failover mid-stream**: another host is SIGKILLed while a stream is decided: owned again
//!   within the bound, every intent answered, the outbox equal to the offline decision (nothing
//!   lost or duplicated, no gap, no fork).
//! - **Rejoin**: both are started again; they catch up and every account reads the same on all
//!   three again.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kledger_schemas::IntentRecord;
use kledger_topology::config::Config;

use super::Row;
use super::oracle::{Findings, check};
use crate::kafka::*;

/// Hosts.
pub const HOSTS: usize = 3;
/// Partitions of the topics.
const PARTITIONS: i32 = 6;
/// Accounts of the streams.
const ACCOUNTS: usize = 10;
/// The bound on failover: every partition owned again this soon after a host died.
pub const OWNED_WITHIN: Duration = Duration::from_secs(30);

/// What the multi-host check did and found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostsFigures {
    /// Intents published in all.
    pub intents: usize,
    /// Accounts whose reads were compared across hosts, each time.
    pub accounts: usize,
    /// Whether every account read the same on every host, at the start and after the rejoin.
    pub equal_at_start: bool,
    /// After the rejoin.
    pub equal_after_rejoin: bool,
    /// Seconds from the idle kill until every partition was owned again.
    pub idle_owned_s: Option<f64>,
    /// Whether every account's export stayed complete on the survivors after the idle kill.
    pub idle_reads_complete: bool,
    /// Seconds from the mid-stream kill until every partition was owned again.
    pub midstream_owned_s: Option<f64>,
    /// Seconds from the mid-stream kill until every intent was answered.
    pub midstream_answered_s: Option<f64>,
    /// Local reads (profile) on a survivor: p50 and p99, ms.
    pub read_ms: (f64, f64),
    /// How long a host was cut off the broker (in a network namespace; none where this
    /// process may make none).
    pub cut_secs: Option<u64>,
    /// Seconds from the cut until the others held every partition.
    pub cut_owned_s: Option<f64>,
    /// Whether the stream decided during the cut was answered.
    pub cut_answered: bool,
    /// Whether every account read the same on every host once the cut host was back.
    pub equal_after_cut: bool,
    /// The outbox against the offline decision.
    pub oracle: Findings,
}

impl HostsFigures {
    /// The summary row.
    pub fn row(&self) -> Row {
        let s = |t: Option<f64>| t.map_or("never".to_owned(), |t| format!("{t:.1} s"));
        Row {
            check: "many hosts",
            figures: format!(
                "{HOSTS} hosts (own directories), broker in its own process with a SCRAM login; {} intents over {} accounts; every account equal on every host at start {}, after the rejoin {}; SIGKILL while idle: owned again after {} (bound {} s), reads complete {}; SIGKILL mid-stream: owned again after {}, all answered after {}; {}; commits {} of {}, lost {}, duplicated {}, forks {}, gaps {}; a local read p50 {:.1} ms / p99 {:.1} ms (no read is forwarded: every host holds every account)",
                self.intents,
                self.accounts,
                self.equal_at_start,
                self.equal_after_rejoin,
                s(self.idle_owned_s),
                OWNED_WITHIN.as_secs(),
                self.idle_reads_complete,
                s(self.midstream_owned_s),
                s(self.midstream_answered_s),
                match self.cut_secs {
                    Some(secs) => format!(
                        "a host cut off the broker {secs} s mid-stream (network namespace): the others owned its partitions after {}, the stream answered {}, every account equal again after it rejoined {}",
                        s(self.cut_owned_s),
                        self.cut_answered,
                        self.equal_after_cut
                    ),
                    None => "no network namespace here: the cut-off step did not run".to_owned(),
                },
                self.oracle.commits,
                self.oracle.expected,
                self.oracle.lost,
                self.oracle.duplicated,
                self.oracle.forks,
                self.oracle.gaps,
                self.read_ms.0,
                self.read_ms.1,
            ),
            ok: self.ok(),
        }
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        let within = |t: Option<f64>| t.is_some_and(|t| t <= OWNED_WITHIN.as_secs_f64());
        self.equal_at_start
            && self.equal_after_rejoin
            && within(self.idle_owned_s)
            && self.idle_reads_complete
            && within(self.midstream_owned_s)
            && self.midstream_answered_s.is_some()
            && self.oracle.ok()
            && (self.cut_secs.is_none()
                || (within(self.cut_owned_s) && self.cut_answered && self.equal_after_cut))
    }
}

/// One host: its directory, address and process (in a network namespace of its own, maybe).
struct Host {
    dir: PathBuf,
    ip: String,
    port: u16,
    netns: Option<String>,
    child: Option<ChildGuard>,
}

/// One HTTP/1.0 request to `ip:port`: (status, body); `None` when nothing answered.
fn http_at(
    ip: &str,
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let addr: std::net::SocketAddr = format!("{ip}:{port}").parse().ok()?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: x\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    Some((status, body))
}

/// A network namespace with a veth pair into it, for one host that can be cut off the broker
/// (root only; `ip` from iproute2). Removed when dropped.
struct Netns {
    name: String,
    /// The address of the root side (the broker listens there).
    outside: String,
    /// The address inside.
    inside: String,
    inside_link: String,
}

fn ip_cmd(args: &[&str]) -> bool {
    std::process::Command::new("ip")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Netns {
    /// A namespace with a link to the root namespace, if this process may make one.
    fn make() -> Option<Self> {
        let n = std::process::id() % 200 + 20;
        let name = format!("kl-host-{n}");
        let (out_link, in_link) = (format!("klh{n}a"), format!("klh{n}b"));
        let (outside, inside) = (format!("10.231.{n}.1"), format!("10.231.{n}.2"));
        let _ = ip_cmd(&["netns", "del", &name]);
        let ns = Self {
            name: name.clone(),
            outside: outside.clone(),
            inside: inside.clone(),
            inside_link: in_link.clone(),
        };
        let ok = ip_cmd(&["netns", "add", &name])
            && ip_cmd(&[
                "link", "add", &out_link, "type", "veth", "peer", "name", &in_link,
            ])
            && ip_cmd(&["link", "set", &in_link, "netns", &name])
            && ip_cmd(&["addr", "add", &format!("{outside}/30"), "dev", &out_link])
            && ip_cmd(&["link", "set", &out_link, "up"])
            && ip_cmd(&[
                "netns",
                "exec",
                &name,
                "ip",
                "addr",
                "add",
                &format!("{inside}/30"),
                "dev",
                &in_link,
            ])
            && ip_cmd(&["netns", "exec", &name, "ip", "link", "set", &in_link, "up"])
            && ip_cmd(&["netns", "exec", &name, "ip", "link", "set", "lo", "up"]);
        ok.then_some(ns)
    }

    /// Cuts the namespace off (its side of the link down), or joins it again.
    fn link(&self, up: bool) -> bool {
        ip_cmd(&[
            "netns",
            "exec",
            &self.name,
            "ip",
            "link",
            "set",
            &self.inside_link,
            if up { "up" } else { "down" },
        ])
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // The veth pair goes with the namespace.
        let _ = ip_cmd(&["netns", "del", &self.name]);
    }
}

/// The principal reading `account` (its owner) and its token.
fn principal_env(i: usize, account: &str) -> Vec<(String, String)> {
    let mut parts = account.splitn(3, '/');
    let (tenant, kind, owner) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let p = format!("KLEDGER_API__PRINCIPALS__P{i}");
    vec![
        (format!("{p}__TOKEN"), token(i)),
        (format!("{p}__TENANT_ID"), tenant.to_owned()),
        (format!("{p}__OWNER_KIND"), kind.to_owned()),
        (format!("{p}__OWNER_ID"), owner.to_owned()),
    ]
}

fn token(i: usize) -> String {
    format!("hosts-token-{i:04}-0123456789abcdef")
}

impl Host {
    fn start(&mut self, bin: &Path, env: &[(String, String)]) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("kledger.log"))?;
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut c = std::process::Command::new("ip");
                c.args(["netns", "exec", ns]).arg(bin);
                c
            }
            None => std::process::Command::new(bin),
        };
        let child = cmd
            .arg("run")
            .envs(env.iter().cloned())
            .env("KLEDGER_HTTP__LISTEN", format!("{}:{}", self.ip, self.port))
            .current_dir(&self.dir)
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()?;
        let mut child = ChildGuard::new(child);
        let deadline = Instant::now() + Duration::from_secs(90);
        while self.get("/readyz").map(|(s, _)| s) != Some(200) {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(self.dir.join("kledger.log")).unwrap_or_default();
                anyhow::bail!("a host exited with {status} before ready:\n{log}");
            }
            anyhow::ensure!(Instant::now() < deadline, "a host was not ready in time");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child = Some(child);
        Ok(())
    }

    fn get(&self, path: &str) -> Option<(u16, String)> {
        http_at(&self.ip, self.port, "GET", path, &[], "")
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The intents partitions this host's processor holds (none when it does not answer).
    fn assigned(&self) -> BTreeSet<i32> {
        self.get("/readyz")
            .and_then(|(_, body)| serde_json::from_str::<serde_json::Value>(&body).ok())
            .and_then(|v| {
                v["assigned"].as_array().map(|a| {
                    a.iter()
                        .filter_map(|p| p.as_i64())
                        .map(|p| p as i32)
                        .collect()
                })
            })
            .unwrap_or_default()
    }
}

/// What one account reads on the host at `port`: export, profile, timeline and search, with
/// what differs by the time of asking (as_of) left out.
fn reads(host: &Host, i: usize) -> Option<String> {
    let auth = format!("Bearer {}", token(i));
    let h = [("Authorization", auth.as_str())];
    let ask = |method, path, body| http_at(&host.ip, host.port, method, path, &h, body);
    let (s1, export) = ask("GET", "/v1/export", "")?;
    let (s2, profile) = ask("GET", "/v1/profile", "")?;
    let (s3, timeline) = ask("GET", "/v1/entities/user/timeline?limit=40", "")?;
    let (s4, search) = ask(
        "POST",
        "/v1/search",
        r#"{"query": "lives works likes", "limit": 20}"#,
    )?;
    if [s1, s2, s3, s4] != [200; 4] {
        return None;
    }
    let profile: serde_json::Value = serde_json::from_str(&profile).ok()?;
    let timeline: serde_json::Value = serde_json::from_str(&timeline).ok()?;
    Some(format!(
        "{export}\n{}\n{}\n{}\n{search}",
        profile["profile"], profile["playbook_index"], timeline["items"]
    ))
}

/// Waits (at most `within`) until every account reads the same on every host of `hosts`;
/// what they read, per account.
fn equal_everywhere(hosts: &[Host], within: Duration) -> Option<Vec<String>> {
    let deadline = Instant::now() + within;
    loop {
        let per_host: Vec<Option<Vec<String>>> = hosts
            .iter()
            .map(|h| (0..ACCOUNTS).map(|i| reads(h, i)).collect())
            .collect();
        if let Some(Some(first)) = per_host.first()
            && per_host.iter().all(|h| h.as_ref() == Some(first))
        {
            return Some(first.clone());
        }
        if Instant::now() > deadline {
            // Shown with the failure: who does not answer, who answers otherwise, and why.
            for (k, h) in per_host.iter().enumerate() {
                let differ = match (h, per_host.first()) {
                    (Some(a), Some(Some(b))) => a.iter().zip(b).filter(|(x, y)| x != y).count(),
                    _ => 0,
                };
                let ready = hosts[k].get("/readyz").map(|(s, b)| format!("{s} {b}"));
                let answers = if h.is_some() {
                    "answers"
                } else {
                    "does not answer"
                };
                eprintln!(
                    "hosts: host {k} {answers} every account; {differ} accounts' reads differ from host 0's; /readyz {ready:?}"
                );
                // Which of the reads (export, profile, playbook index, timeline, search) differ.
                if let (Some(a), Some(Some(b))) = (h, per_host.first()) {
                    for (n, (x, y)) in a.iter().zip(b).enumerate().filter(|(_, (x, y))| x != y) {
                        for (part, (px, py)) in x.split('\n').zip(y.split('\n')).enumerate() {
                            if px != py {
                                let cut = |t: &str| t.chars().take(600).collect::<String>();
                                eprintln!(
                                    "hosts: account {n}, read {part} (export, profile, index, timeline, search):\n  host {k}: {}\n  host 0: {}",
                                    cut(px),
                                    cut(py)
                                );
                            }
                        }
                    }
                }
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Prints the last `n` lines of the log at `path` that `keep` accepts, under `label` (when the
/// check fails).
fn print_log_tail(label: &str, path: &Path, keep: impl Fn(&str) -> bool, n: usize) {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().filter(|l| keep(l)).collect();
    eprintln!(
        "hosts: {label}, last {} of {} lines:",
        lines.len().min(n),
        lines.len()
    );
    for l in &lines[lines.len().saturating_sub(n)..] {
        eprintln!("  {}", l.chars().take(400).collect::<String>());
    }
}

/// Seconds until the hosts of `alive` together hold every intents partition (at most `within`).
fn owned_again(hosts: &[Host], alive: &[usize], since: Instant, within: Duration) -> Option<f64> {
    let all: BTreeSet<i32> = (0..PARTITIONS).collect();
    loop {
        let held: BTreeSet<i32> = alive.iter().flat_map(|&h| hosts[h].assigned()).collect();
        if held == all {
            return Some(since.elapsed().as_secs_f64());
        }
        if since.elapsed() > within {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(((v.len().max(1) - 1) as f64 * q).round() as usize)
        .copied()
        .unwrap_or(0.0)
}

// Long on purpose: a harness check reads top to bottom as its steps (broker, hosts, equal
// reads, idle kill, mid-stream kill, rejoin, verdict).
/// Runs the multi-host check with `intents` per stream (two streams).
pub fn hosts(bin: &Path, seed: u64, intents: usize, cut: Duration) -> anyhow::Result<HostsFigures> {
    let dir = tempfile::tempdir()?;
    // The last host in a network namespace of its own, where this process may make one (root,
    // iproute2): it can be cut off the broker. Every host reaches the broker at the address of
    // the namespace's link (a local address for the others).
    let netns = Netns::make();
    let broker_ip = netns
        .as_ref()
        .map_or("127.0.0.1".to_owned(), |n| n.outside.clone());
    // The broker, with its login, in a process of its own.
    let broker_dir = dir.path().join("broker");
    std::fs::create_dir_all(&broker_dir)?;
    let bootstrap = format!(
        "{broker_ip}:{}",
        kledger_topology::kafka::embedded::free_port()?
    );
    let log = std::fs::File::create(broker_dir.join("broker.log"))?;
    let _broker = ChildGuard::new(
        std::process::Command::new(bin)
            .args(["broker", "--listen", &bootstrap])
            .args([
                "--storage",
                "sqlite://b/tansu.db",
                "--credentials",
                "b/credentials",
            ])
            .env("KLEDGER_LOG__FILTER", "warn")
            .current_dir(&broker_dir)
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()?,
    );
    let creds = broker_dir.join("b/credentials");
    let deadline = Instant::now() + Duration::from_secs(30);
    let login = loop {
        if let Some(l) = kledger_topology::config::credentials::Credentials::load(&creds)?
            && std::net::TcpStream::connect(&bootstrap).is_ok()
        {
            break l;
        }
        anyhow::ensure!(Instant::now() < deadline, "the broker did not start");
        std::thread::sleep(Duration::from_millis(100));
    };
    // Every host's (and every command's) configuration: the broker, its login, the defaults.
    let mut env: Vec<(String, String)> = vec![
        ("KLEDGER_KAFKA__BOOTSTRAP_SERVERS".into(), bootstrap.clone()),
        ("KLEDGER_KAFKA__PARTITIONS".into(), PARTITIONS.to_string()),
        ("KLEDGER_VECTORS__EMBEDDER__KIND".into(), "hash".into()),
        ("KLEDGER_LOG__FILTER".into(), "info".into()),
        // No expiry sweep: the stream's expired rows would be purged by intents the offline
        // expectation has not (its clock is the wall clock).
        ("KLEDGER_POLICY__TTL__PURGE".into(), "false".into()),
    ];
    for (k, v) in login.client_properties() {
        let name = k.to_ascii_uppercase().replace('.', "_");
        env.push((format!("KLEDGER_KAFKA__COMMON_PROPERTIES__{name}"), v));
    }
    let records = stream(seed, ACCOUNTS, 2 * intents);
    let accounts: Vec<String> = {
        // The stream's accounts (its invalid intents name accounts that cannot exist).
        let mut a: Vec<String> = records
            .iter()
            .map(|r| r.intent.account_id.clone())
            .filter(|a| {
                let parts: Vec<&str> = a.split('/').collect();
                // Well-formed accounts only (the stream's invalid records name others, some
                // with characters no environment variable holds).
                parts.len() == 3
                    && parts[0].starts_with("t_")
                    && ["user", "agent", "team"].contains(&parts[1])
                    && !parts[2].is_empty()
                    && a.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_/-.:@".contains(c))
            })
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        a.truncate(ACCOUNTS);
        a
    };
    for (i, a) in accounts.iter().enumerate() {
        env.extend(principal_env(i, a));
    }
    let mut c = Config::default();
    c.kafka.bootstrap_servers = bootstrap.clone();
    c.kafka.partitions = PARTITIONS;
    for (k, v) in login.client_properties() {
        c.kafka.common_properties.insert(k.to_owned(), v);
    }
    let mut hosts: Vec<Host> = (0..HOSTS)
        .map(|h| {
            let ns = netns.as_ref().filter(|_| h == HOSTS - 1);
            Ok(Host {
                dir: dir.path().join(format!("h{h}")),
                ip: ns.map_or("127.0.0.1".to_owned(), |n| n.inside.clone()),
                port: kledger_topology::kafka::embedded::free_port()?,
                netns: ns.map(|n| n.name.clone()),
                child: None,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    for h in hosts.iter_mut() {
        h.start(bin, &env)?;
    }
    let mut f = HostsFigures {
        intents: 2 * intents,
        accounts: ACCOUNTS,
        ..HostsFigures::default()
    };
    let (first, second) = records.split_at(intents);
    super::publish_with(bin, dir.path(), &env, first)?;
    answered(&c, first, Duration::from_secs(180), || true).map_err(anyhow::Error::msg)?;
    let before = equal_everywhere(&hosts, Duration::from_secs(90));
    f.equal_at_start = before.is_some();
    // A local read's latency on one host.
    let mut read_ms = Vec::new();
    for n in 0..200 {
        let auth = format!("Bearer {}", token(n % ACCOUNTS));
        let t = Instant::now();
        let _ = http_at(
            &hosts[0].ip,
            hosts[0].port,
            "GET",
            "/v1/profile",
            &[("Authorization", &auth)],
            "",
        );
        read_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    f.read_ms = (
        quantile(&mut read_ms.clone(), 0.5),
        quantile(&mut read_ms, 0.99),
    );
    // Idle: the last host dies with nothing to decide.
    hosts[2].kill();
    let killed = Instant::now();
    f.idle_owned_s = owned_again(
        &hosts,
        &[0, 1],
        killed,
        OWNED_WITHIN + Duration::from_secs(30),
    );
    f.idle_reads_complete = before.as_ref().is_some_and(|want| {
        hosts[..2]
            .iter()
            .all(|h| (0..ACCOUNTS).all(|i| reads(h, i).as_ref() == want.get(i)))
    });
    // Mid-stream: the second host dies while the second stream is decided.
    super::publish_with(bin, dir.path(), &env, second)?;
    std::thread::sleep(Duration::from_millis(300));
    hosts[1].kill();
    let killed = Instant::now();
    f.midstream_owned_s = owned_again(&hosts, &[0], killed, OWNED_WITHIN + Duration::from_secs(30));
    f.midstream_answered_s = answered(&c, &records, Duration::from_secs(180), || true)
        .ok()
        .map(|()| killed.elapsed().as_secs_f64());
    // Both come back, catch up, and read the same as the survivor.
    hosts[1].start(bin, &env)?;
    hosts[2].start(bin, &env)?;
    f.equal_after_rejoin = equal_everywhere(&hosts, Duration::from_secs(120)).is_some();
    // Cut off: the host in the namespace loses the broker for `cut` while a third stream is
    // decided; the others take its partitions over; then it is joined again and catches up.
    let third = stream(seed ^ 0xC07, ACCOUNTS, intents / 2);
    let mut all: Vec<IntentRecord> = records.clone();
    if let Some(ns) = netns.as_ref().filter(|_| !cut.is_zero()) {
        super::publish_with(bin, dir.path(), &env, &third)?;
        all.extend(third.iter().cloned());
        ns.link(false);
        let cut_at = Instant::now();
        f.cut_owned_s = owned_again(
            &hosts,
            &[0, 1],
            cut_at,
            OWNED_WITHIN + Duration::from_secs(30),
        );
        f.cut_answered = answered(&c, &all, Duration::from_secs(180), || true).is_ok();
        std::thread::sleep(cut.saturating_sub(cut_at.elapsed()));
        ns.link(true);
        f.cut_secs = Some(cut_at.elapsed().as_secs());
        f.equal_after_cut = equal_everywhere(&hosts, Duration::from_secs(120)).is_some();
    }
    let (want, _) = expected(&c, &all, PARTITIONS);
    f.oracle = check(&commits(&bootstrap, &c), &want);
    if !f.ok() {
        let warning =
            |l: &str| (l.contains("WARN") || l.contains("ERROR")) && !l.contains("librdkafka");
        for (k, h) in hosts.iter().enumerate() {
            let label = format!("host {k}'s warnings");
            print_log_tail(&label, &h.dir.join("kledger.log"), warning, 30);
        }
        print_log_tail(
            "the broker's log",
            &broker_dir.join("broker.log"),
            |_| true,
            40,
        );
    }
    for h in hosts.iter_mut() {
        if let Some(child) = h.child.take() {
            stop(child);
        }
    }
    Ok(f)
}

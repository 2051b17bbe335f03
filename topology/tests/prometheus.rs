//! A real Prometheus server (Debian's `prometheus`, installed by the test setup) scrapes a
//! running kledger, and every PromQL expression of the shipped Grafana dashboard and alert
//! rules returns data through its HTTP API; `promtool check rules` passes on the rules.
//! Skipped, saying so, when `prometheus` is not installed (`scripts/dev.sh test` installs it).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use kledger_topology::app;

fn docker() -> std::path::PathBuf {
    let dir =
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into());
    std::path::PathBuf::from(dir).join("../docker")
}

fn installed(bin: &str) -> bool {
    Command::new(bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The instant-query result of `expr`: the vector's samples (Prometheus's JSON).
fn query(port: u16, expr: &str) -> serde_json::Value {
    let url = format!(
        "/api/v1/query?query={}",
        url::form_urlencoded::byte_serialize(expr.as_bytes()).collect::<String>()
    );
    let (status, body) = http_request(port, "GET", &url, &[], "");
    assert_eq!(status, 200, "{expr}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{expr}: {body}");
    v["data"]["result"].clone()
}

/// The part of an alert expression that must return data: each side of `and`/`or`, without
/// its comparison against a threshold (a rule that does not fire returns nothing, but the
/// series it compares must exist).
fn measured(expr: &str) -> Vec<String> {
    expr.split(" and ")
        .flat_map(|s| s.split(" or "))
        .map(|side| {
            let cut = [" > ", " == ", " < ", " >= ", " <= ", " != "]
                .iter()
                .filter_map(|op| side.rfind(op))
                .max()
                .unwrap_or(side.len());
            side[..cut].trim().to_owned()
        })
        .collect()
}

#[test]
fn prometheus_scrapes_kledger_and_every_dashboard_and_alert_query_returns_data() {
    if !installed("prometheus") || !installed("promtool") {
        eprintln!("SKIPPED: prometheus/promtool not installed (scripts/dev.sh test installs them)");
        return;
    }
    let rules = docker().join("alerts.yml");
    let check = Command::new("promtool")
        .args(["check", "rules"])
        .arg(&rules)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "promtool check rules: {}",
        String::from_utf8_lossy(&check.stdout)
    );

    // kledger with intents flowing and a read-API call.
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b.bootstrap, dir.path(), 4, "prometheus-e2e");
    let kledger_port = kledger_topology::kafka::embedded::free_port().unwrap();
    c.http.listen = format!("127.0.0.1:{kledger_port}");
    const TOKEN: &str = "prometheus-test-token-0123";
    c.api.principals.insert(
        "reader".into(),
        kledger_topology::config::PrincipalConfig {
            token: TOKEN.into(),
            principal: kledger_processors::access::Principal {
                tenant_id: "t_acme".into(),
                team_id: None,
                agent_id: None,
                roles: Vec::new(),
                owner_kind: kledger_schemas::OwnerKind::User,
                owner_id: "u_reader".into(),
            },
        },
    );
    create_topics(&b, &c);
    let records = stream(77, 20, 400);
    publish_all(&c, &records);
    // No dead letter is sent: every counter the dashboard and the alerts read (dead letters by
    // code among them) must be exported from the start, before its first event.
    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    wait_answered(&c, &records, Duration::from_secs(120));
    let auth = format!("Bearer {TOKEN}");
    let (status, _) = http_request(
        kledger_port,
        "GET",
        "/v1/profile",
        &[("Authorization", auth.as_str())],
        "",
    );
    assert_eq!(status, 200);

    // Prometheus scraping it every second with the shipped rules.
    let prom_port = kledger_topology::kafka::embedded::free_port().unwrap();
    let prom_dir = dir.path().join("prometheus");
    std::fs::create_dir_all(&prom_dir).unwrap();
    let cfg = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: kledger\n    static_configs:\n      - targets: [\"127.0.0.1:{kledger_port}\"]\n",
        rules.display()
    );
    std::fs::write(prom_dir.join("prometheus.yml"), cfg).unwrap();
    let log = std::fs::File::create(prom_dir.join("prometheus.log")).unwrap();
    let mut prom = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            prom_dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            prom_dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let result = (|| -> Result<(), String> {
        // Until the target is up and enough samples exist for rate() windows.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if let Some((200, body)) = get(prom_port, "/api/v1/query?query=up")
                && body.contains("\"1\"")
            {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("the target never came up: {}", log_of(&prom_dir)));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        std::thread::sleep(Duration::from_secs(12));
        let dash: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(docker().join("grafana/dashboards/kledger.json")).unwrap(),
        )
        .unwrap();
        let mut exprs: Vec<String> = dash["panels"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
            .map(|t| t["expr"].as_str().unwrap().to_owned())
            .collect();
        let alerts: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&rules).unwrap()).unwrap();
        for r in alerts["groups"][0]["rules"].as_sequence().unwrap() {
            exprs.extend(measured(r["expr"].as_str().unwrap()));
        }
        let empty: Vec<&String> = exprs
            .iter()
            .filter(|e| query(prom_port, e).as_array().is_none_or(|a| a.is_empty()))
            .collect();
        if !empty.is_empty() {
            return Err(format!(
                "{} of {} expressions returned no data: {empty:#?}",
                empty.len(),
                exprs.len()
            ));
        }
        // The rules are loaded.
        let (_, body) = get(prom_port, "/api/v1/rules").unwrap();
        if !body.contains("KledgerProcessorDegraded") {
            return Err(format!("rules not loaded: {body}"));
        }
        Ok(())
    })();
    let _ = prom.kill();
    let _ = prom.wait();
    b.rt.block_on(running.stop()).unwrap();
    if let Err(why) = result {
        panic!("{why}");
    }
}

fn log_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
}

#[test]
fn alert_expressions_are_measured_without_their_thresholds() {
    assert_eq!(
        measured("max by (instance) (kledger_processor_degraded) > 0"),
        vec!["max by (instance) (kledger_processor_degraded)"]
    );
    assert_eq!(
        measured("sum(a) > 1000 and sum(delta(a[10m])) > 0"),
        vec!["sum(a)", "sum(delta(a[10m]))"]
    );
    assert_eq!(
        measured("up{job=\"kledger\"} == 0"),
        vec!["up{job=\"kledger\"}"]
    );
}

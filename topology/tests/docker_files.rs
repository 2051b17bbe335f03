//! `docker/` cannot run on the build machine (no container runtime); these tests parse its
//! files and check them against kledger itself: the compose file runs Apache Kafka in KRaft
//! mode, Qdrant, Prometheus, Grafana and every kledger role from the Dockerfile; Prometheus
//! scrapes every role; the dashboard's panels cover the required views and query only metrics
//! kledger exports; Grafana's provisioning points at the mounted dashboard and Prometheus.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_yaml::Value;

fn docker() -> PathBuf {
    // The directory at run time: a shared target dir may hold a binary built from another clone.
    let dir =
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into());
    PathBuf::from(dir).join("../docker")
}

fn yaml(name: &str) -> Value {
    let text = std::fs::read_to_string(docker().join(name)).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_yaml::to_string(other).unwrap().trim().to_owned(),
    }
}

/// kledger services and their `--role` argument (merge keys resolved).
fn kledger_roles(compose: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, svc) in compose["services"].as_mapping().unwrap() {
        let mut svc = svc.clone();
        svc.apply_merge().unwrap();
        let name = s(name);
        if !name.starts_with("kledger") {
            continue;
        }
        assert_eq!(
            s(&svc["build"]["dockerfile"]),
            "docker/Dockerfile",
            "{name}"
        );
        let cmd: Vec<String> = svc["command"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(s)
            .collect();
        assert_eq!(cmd[0], "run", "{name}");
        let role = cmd
            .iter()
            .position(|a| a == "--role")
            .map(|i| cmd[i + 1].clone());
        let role = role.unwrap_or_else(|| panic!("{name} has no --role"));
        // The role parses as `kledger run --role` parses it.
        kledger_topology::app::Roles::parse(&role).unwrap();
        let env = &svc["environment"];
        assert_eq!(
            s(&env["KLEDGER_KAFKA__BOOTSTRAP_SERVERS"]),
            "kafka:9092",
            "{name}"
        );
        assert_eq!(s(&env["KLEDGER_HTTP__LISTEN"]), "0.0.0.0:9464", "{name}");
        out.push((name, role));
    }
    out
}

#[test]
fn compose_runs_kafka_in_kraft_mode_qdrant_monitoring_and_every_role() {
    let compose = yaml("compose.yaml");
    let services = compose["services"].as_mapping().unwrap();
    let kafka = &compose["services"]["kafka"];
    assert!(s(&kafka["image"]).starts_with("apache/kafka:"));
    let roles = s(&kafka["environment"]["KAFKA_PROCESS_ROLES"]);
    assert!(
        roles.contains("broker") && roles.contains("controller"),
        "KRaft: {roles}"
    );
    assert!(!kafka["environment"]["KAFKA_CONTROLLER_QUORUM_VOTERS"].is_null());
    assert!(s(&compose["services"]["qdrant"]["image"]).starts_with("qdrant/qdrant:"));
    assert!(s(&compose["services"]["prometheus"]["image"]).starts_with("prom/prometheus:"));
    assert!(s(&compose["services"]["grafana"]["image"]).starts_with("grafana/grafana:"));
    let kledger = kledger_roles(&compose);
    let all: BTreeSet<&str> = kledger.iter().flat_map(|(_, r)| r.split(',')).collect();
    for role in ["apply", "project-views", "project-qdrant", "api"] {
        assert!(all.contains(role), "no service runs {role}: {kledger:?}");
    }
    // Every named volume a service mounts is declared.
    let declared: BTreeSet<String> = compose["volumes"]
        .as_mapping()
        .unwrap()
        .keys()
        .map(s)
        .collect();
    for (name, svc) in services {
        let mut svc = svc.clone();
        svc.apply_merge().unwrap();
        for v in svc["volumes"].as_sequence().into_iter().flatten() {
            let src = s(v).split(':').next().unwrap().to_owned();
            if !src.starts_with('.') {
                assert!(
                    declared.contains(&src),
                    "{}: volume {src} undeclared",
                    s(name)
                );
            } else {
                assert!(docker().join(&src).exists(), "{}: {src} missing", s(name));
            }
        }
    }
}

#[test]
fn prometheus_scrapes_every_kledger_role() {
    let compose = yaml("compose.yaml");
    let prom = yaml("prometheus.yml");
    let targets: BTreeSet<String> = prom["scrape_configs"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|j| j["static_configs"].as_sequence().unwrap().clone())
        .flat_map(|c| c["targets"].as_sequence().unwrap().clone())
        .map(|t| s(&t))
        .collect();
    for (name, _) in kledger_roles(&compose) {
        assert!(
            targets.contains(&format!("{name}:9464")),
            "{name} not scraped: {targets:?}"
        );
    }
}

#[test]
fn the_dashboard_covers_the_required_panels_with_exported_metrics() {
    let text = std::fs::read_to_string(docker().join("grafana/dashboards/kledger.json")).unwrap();
    let dash: serde_json::Value = serde_json::from_str(&text).unwrap();
    let exprs: Vec<String> = dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().clone())
        .map(|t| t["expr"].as_str().unwrap().to_owned())
        .collect();
    let joined = exprs.join("\n");
    for required in [
        "kledger_intents_total",                // throughput by outcome
        "kledger_apply_latency_seconds_bucket", // apply latency quantiles
        "kledger_consumer_lag_records",         // lag per partition
        "kledger_restore_duration_seconds",     // restore time
        "kledger_sink_lag_records",             // sink lag
        "kledger_rocksdb_live_data_bytes",      // RocksDB size
    ] {
        assert!(joined.contains(required), "no panel uses {required}");
    }
    assert!(
        joined.contains("histogram_quantile(0.99"),
        "latency quantiles"
    );
    // Every metric a query names is one kledger exports.
    for e in &exprs {
        for word in e.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if !word.starts_with("kledger_") {
                continue;
            }
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suf| word.strip_suffix(suf))
                .unwrap_or(word);
            assert!(
                kledger_topology::metrics::ALL.contains(&base),
                "{word} is not a kledger metric"
            );
        }
    }
    // Panels do not overlap on the grid.
    let mut cells = BTreeSet::new();
    for p in dash["panels"].as_array().unwrap() {
        let g = &p["gridPos"];
        let (x, y, w, h) = (
            g["x"].as_u64().unwrap(),
            g["y"].as_u64().unwrap(),
            g["w"].as_u64().unwrap(),
            g["h"].as_u64().unwrap(),
        );
        assert!(x + w <= 24);
        for cx in x..x + w {
            for cy in y..y + h {
                assert!(cells.insert((cx, cy)), "panels overlap at {cx},{cy}");
            }
        }
    }
}

#[test]
fn grafana_provisioning_points_at_prometheus_and_the_mounted_dashboard() {
    let compose = yaml("compose.yaml");
    let ds = yaml("grafana/provisioning/datasources/prometheus.yml");
    assert_eq!(s(&ds["datasources"][0]["url"]), "http://prometheus:9090");
    let uid = s(&ds["datasources"][0]["uid"]);
    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(docker().join("grafana/dashboards/kledger.json")).unwrap(),
    )
    .unwrap();
    for p in dash["panels"].as_array().unwrap() {
        assert_eq!(p["datasource"]["uid"], uid.as_str());
    }
    let provider = yaml("grafana/provisioning/dashboards/kledger.yml");
    let path = s(&provider["providers"][0]["options"]["path"]);
    let mounts: Vec<String> = compose["services"]["grafana"]["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(s)
        .collect();
    assert!(
        mounts
            .iter()
            .any(|m| m.starts_with("./grafana/dashboards:") && m.contains(&path)),
        "dashboards mounted at {path}: {mounts:?}"
    );
}

/// The image builds `release` unless `--build-arg PROFILE=...` says otherwise, and every
/// profile the docs offer it exists in the workspace's `Cargo.toml`.
#[test]
fn the_dockerfile_builds_release_by_default_and_the_production_profile_exists() {
    let text = std::fs::read_to_string(docker().join("Dockerfile")).unwrap();
    let defaults: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ARG PROFILE="))
        .collect();
    assert_eq!(
        defaults,
        ["release"],
        "one PROFILE argument, release by default"
    );
    let manifest = std::fs::read_to_string(docker().join("../Cargo.toml")).unwrap();
    let production = manifest
        .split("\n[")
        .find(|section| section.starts_with("profile.production]"))
        .expect("a [profile.production] section");
    for line in [
        "inherits = \"release\"",
        "lto = \"fat\"",
        "codegen-units = 1",
    ] {
        assert!(
            production.lines().any(|l| l.trim() == line),
            "[profile.production] lacks {line}"
        );
    }
    let deploying = std::fs::read_to_string(docker().join("../docs/deploying.md")).unwrap();
    assert!(deploying.contains("--build-arg PROFILE=production"));
}

#[test]
fn the_dockerfile_is_multi_stage_and_ships_a_stripped_binary_with_symbols_apart() {
    let text = std::fs::read_to_string(docker().join("Dockerfile")).unwrap();
    let stages: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(stages.len(), 3, "{stages:?}");
    assert!(stages[0].contains(" AS builder"));
    assert!(stages[1].contains(" AS symbols"));
    assert!(
        stages[2].contains(" AS runtime"),
        "the runtime is the default target"
    );
    assert!(
        text.contains(
            "cargo build --profile \"$PROFILE\" --locked -p kledger-topology --bin kledger"
        )
    );
    assert!(text.contains("target/\"$PROFILE\"/kledger"));
    assert!(text.contains("objcopy --only-keep-debug"));
    assert!(text.contains("objcopy --strip-debug"));
    assert!(text.contains("COPY --from=builder /usr/local/bin/kledger"));
    assert!(text.contains("ENTRYPOINT [\"/usr/local/bin/kledger\"]"));
}

#[test]
fn compose_publishes_only_the_tls_proxy_and_the_monitoring_uis_on_localhost() {
    let compose = yaml("compose.yaml");
    for (name, svc) in compose["services"].as_mapping().unwrap() {
        let name = s(name);
        let ports: Vec<String> = svc["ports"]
            .as_sequence()
            .map(|p| p.iter().map(s).collect())
            .unwrap_or_default();
        match name.as_str() {
            "tls-proxy" | "prometheus" | "grafana" => {
                assert!(!ports.is_empty(), "{name} publishes nothing");
                for p in &ports {
                    assert!(
                        p.starts_with("127.0.0.1:"),
                        "{name} publishes {p} beyond localhost"
                    );
                }
            }
            _ => assert!(ports.is_empty(), "{name} publishes {ports:?}"),
        }
    }
    let caddy = std::fs::read_to_string(docker().join("caddy/Caddyfile")).unwrap();
    assert!(caddy.contains("tls internal") && caddy.contains("reverse_proxy kledger-views:9464"));
    let mounts = s(&compose["services"]["tls-proxy"]["volumes"]);
    assert!(
        mounts.contains("./caddy/Caddyfile:/etc/caddy/Caddyfile"),
        "{mounts}"
    );
}

#[test]
fn alert_rules_are_loaded_and_name_exported_metrics() {
    let rules = yaml("alerts.yml");
    let prom = yaml("prometheus.yml");
    assert!(s(&prom["rule_files"]).contains("/etc/prometheus/alerts.yml"));
    let compose = yaml("compose.yaml");
    assert!(
        s(&compose["services"]["prometheus"]["volumes"])
            .contains("./alerts.yml:/etc/prometheus/alerts.yml")
    );
    let alerts: Vec<(String, String)> = rules["groups"][0]["rules"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|r| (s(&r["alert"]), s(&r["expr"])))
        .collect();
    for required in [
        "KledgerProcessorDegraded",
        "KledgerProcessorDown",
        "KledgerConsumerLagGrowing",
        "KledgerSinkLag",
        "KledgerUnownedPartitions",
        "KledgerFork",
        "KledgerDeadLetters",
        "KledgerRecordsRejectedForSize",
    ] {
        assert!(
            alerts.iter().any(|(a, _)| a == required),
            "no alert {required}"
        );
    }
    for (name, expr) in &alerts {
        for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("kledger_") {
                assert!(
                    kledger_topology::metrics::ALL.contains(&word),
                    "{name}: {word} is not a kledger metric"
                );
            }
        }
    }
}

//! `kafka.common_properties` reaches every client of every command (issue 45): with
//! `security.protocol = SASL_PLAINTEXT` against a plaintext broker, each command that works with
//! the cluster — `topics create|check`, `publish`, `run` with each role, `replay verify`,
//! `rebuild`, `state restore --from-outbox`, `repartition`, `migrate apply` — fails within
//! seconds with one line naming the broker and the protocol: no hang, no secret printed. (The
//! one-builder test, `one_client_builder.rs`, holds that no client is built any other way; the
//! embedded default's SCRAM login is `kafka_process.rs`'s.)

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const PASSWORD: &str = "secured-test-password-0123456789";

#[test]
fn every_command_fails_fast_and_clearly_when_its_clients_cannot_log_in() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let c = config(&b.bootstrap, &dir.path().join("data"), 4, "g-secured");
    create_topics(&b, &c);
    let intents = dir.path().join("intents.jsonl");
    std::fs::write(&intents, jsonl(&stream(5, 3, 5))).unwrap();
    let plan = dir.path().join("plan.jsonl");
    std::fs::write(&plan, "").unwrap();
    let bin = env!("CARGO_BIN_EXE_kledger");
    let mut env = child_env(&c, "");
    env.extend(
        [
            ("SECURITY_PROTOCOL", "SASL_PLAINTEXT"),
            ("SASL_MECHANISM", "SCRAM-SHA-256"),
            ("SASL_USERNAME", "kledger"),
            ("SASL_PASSWORD", PASSWORD),
        ]
        .map(|(k, v)| {
            (
                format!("KLEDGER_KAFKA__COMMON_PROPERTIES__{k}"),
                v.to_owned(),
            )
        }),
    );
    let restore_dir = dir.path().join("restored").display().to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["topics", "create"],
        vec!["topics", "check"],
        vec!["publish", "--input", intents.to_str().unwrap()],
        vec!["run", "--role", "apply"],
        vec!["run", "--role", "project-views"],
        vec!["run", "--role", "project-qdrant"],
        vec!["run", "--role", "api"],
        vec!["run"],
        vec!["replay", "verify", "--quiet"],
        vec!["rebuild", "views", "--quiet"],
        vec![
            "state",
            "restore",
            "--from-outbox",
            "--quiet",
            "--state",
            &restore_dir,
        ],
        vec!["repartition", "--to", "8", "--topic-prefix", "moved"],
        vec![
            "migrate",
            "apply",
            "--plan",
            plan.to_str().unwrap(),
            "--quiet",
        ],
    ];
    for args in commands {
        let started = Instant::now();
        let mut child = Command::new(bin)
            .args(&args)
            .envs(env.iter().cloned())
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + String::from_utf8_lossy(&out.stdout).as_ref();
        let status = status.unwrap_or_else(|| panic!("{args:?} hung:\n{text}"));
        assert!(!status.success(), "{args:?} succeeded:\n{text}");
        let line = text
            .lines()
            .find(|l| l.starts_with("kledger: error:"))
            .unwrap_or_else(|| panic!("{args:?}: no error line:\n{text}"));
        eprintln!("{args:?}: {line}");
        assert!(
            line.contains(&b.bootstrap) && line.contains("SASL_PLAINTEXT"),
            "{args:?}: the line names neither the broker nor the protocol: {line}"
        );
        assert!(
            !text.contains(PASSWORD),
            "{args:?} printed the password:\n{text}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
}

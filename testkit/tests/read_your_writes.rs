//! Read-your-writes: a read given `min_commit_seq` (a receipt's consistency token) waits, at most
//! `wait_ms`, until the projections it reads from have applied that commit of the account — the
//! view store, and for search the vector index too — and answers `409 not_caught_up` with their
//! positions when they have not. Here the sinks are driven by hand: "stopped" is a commit not
//! folded yet, "running" is a fold that happens while the read waits.

use std::time::{Duration, Instant};

use kledger_processors::access::Principal;
use kledger_schemas::*;
use kledger_testkit::build::{fact, intent};
use kledger_testkit::ledger::Ledger;
use kledger_topology::config::Config;
use kledger_topology::pipeline::project::OutboxCommit;
use kledger_topology::serve::api::read::{ProfileParams, after_wait, profile_answer};
use kledger_topology::serve::api::search::{SearchRequest, search_knowledge};
use kledger_topology::serve::api::{Api, ApiError};

const A: &str = "t_acme/user/u_ryw";
const T0: i64 = 1_767_225_600_000;

fn owner() -> Principal {
    Principal {
        tenant_id: "t_acme".into(),
        team_id: None,
        agent_id: None,
        roles: Vec::new(),
        owner_kind: OwnerKind::User,
        owner_id: "u_ryw".into(),
    }
}

/// Folds `commits` into the view store and the vector index the way both sinks do.
fn project(api: &Api, commits: &[OutboxCommit]) {
    let read: Vec<(i32, i64)> = commits.iter().map(|c| (c.partition, c.offset)).collect();
    kledger_topology::pipeline::project::views::fold(
        &api.views.get(),
        commits,
        read.iter().copied(),
    )
    .unwrap();
    let search = api.search.as_ref().unwrap().get().unwrap();
    let g = search.live.get();
    kledger_topology::pipeline::project::vectors::project(
        &g,
        g.embedder.as_ref(),
        commits,
        read.into_iter(),
    )
    .unwrap();
}

/// Runs `read` as the HTTP endpoints and MCP tools do: after the asynchronous wait for
/// `min_commit_seq` ([`after_wait`]), on a runtime of its own.
fn waited<T: Send + 'static>(
    api: &Api,
    p: &Principal,
    account: Option<&str>,
    min_commit_seq: Option<i64>,
    wait_ms: u64,
    vectors: bool,
    read: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(after_wait(
            api,
            p,
            account,
            min_commit_seq,
            Some(wait_ms),
            vectors,
            read,
        ))
}

fn search(
    api: &Api,
    query: &str,
    min_commit_seq: Option<i64>,
    wait_ms: u64,
) -> Result<Vec<String>, (u16, &'static str, Option<serde_json::Value>)> {
    let req = SearchRequest {
        query: query.into(),
        limit: Some(5),
        kinds: Vec::new(),
        account: None,
        as_of: None,
        known_at: None,
        min_commit_seq,
        wait_ms: Some(wait_ms),
    };
    let a = api.clone();
    waited(
        api,
        &owner(),
        None,
        min_commit_seq,
        wait_ms,
        true,
        move || search_knowledge(&a, &owner(), req),
    )
    .map(|a| a.results.into_iter().map(|h| h.content).collect())
    .map_err(|e| (e.status().as_u16(), e.code(), e.detail().cloned()))
}

#[test]
fn a_read_waits_for_its_write_or_answers_not_caught_up() {
    let mut ledger = Ledger::new(4);
    let w = WriteReason::DirectUserStatement;
    for (n, text) in ["Lives in Porto", "Plays the cello on Sundays"]
        .iter()
        .enumerate()
    {
        let d = ledger.apply(&IntentRecord {
            timestamp: T0 + n as i64,
            partition: None,
            offset: None,
            intent: intent(
                A,
                &format!("a{n}"),
                w,
                n as i64,
                vec![Op::Assert(fact(text))],
            ),
        });
        assert_eq!(d.receipt.commit_seq, Some(n as i64 + 1));
    }
    let dir = tempfile::tempdir().unwrap();
    let (views, g) = kledger_testkit::offline::projections(dir.path(), &ledger.commits, 4).unwrap();
    let api =
        kledger_testkit::offline::api(dir.path(), Config::default(), 4, views, Some(g)).unwrap();
    let positioned = kledger_testkit::kafka::positioned(&ledger.commits, |c| c.intent_partition);
    // The sinks have applied the first commit only: they are stopped before the second.
    project(&api, &positioned[..1]);

    // Without a token nothing waits, and the second row is not there yet.
    let now = search(&api, "cello", None, 0).unwrap();
    assert!(!now.iter().any(|c| c.contains("cello")), "{now:?}");
    // The first commit is applied: its token answers at once.
    assert!(
        search(&api, "Porto", Some(1), 0)
            .unwrap()
            .iter()
            .any(|c| c.contains("Porto"))
    );
    // The second is not: 409 not_caught_up with the positions, within the wait.
    let started = Instant::now();
    let (status, code, detail) = search(&api, "cello", Some(2), 300).unwrap_err();
    assert_eq!((status, code), (409, "not_caught_up"));
    let detail = detail.expect("positions");
    assert_eq!(detail["min_commit_seq"], 2, "{detail}");
    assert_eq!(detail["positions"]["views"], 1, "{detail}");
    assert_eq!(detail["positions"]["vectors"], 1, "{detail}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the wait is bounded"
    );
    let q = ProfileParams {
        min_commit_seq: Some(2),
        wait_ms: Some(100),
        ..ProfileParams::default()
    };
    let e = profile_answer(&api, &owner(), &q).unwrap_err();
    assert_eq!(e.code(), "not_caught_up");
    let (a, q2) = (api.clone(), q.clone());
    let e = waited(&api, &owner(), None, Some(2), 100, false, move || {
        profile_answer(&a, &owner(), &q2)
    })
    .unwrap_err();
    assert_eq!(e.code(), "not_caught_up");
    // Only the owner may wait: another principal of the tenant is refused at once, the same for
    // this account as for one that does not exist (issue 44: no count or existence oracle).
    let teammate = Principal {
        owner_id: "u_other".into(),
        ..owner()
    };
    for account in [A, "t_acme/user/u_nobody"] {
        let (a, p) = (api.clone(), teammate.clone());
        let q = ProfileParams {
            account: Some(account.into()),
            min_commit_seq: Some(1),
            wait_ms: Some(1_000),
            ..ProfileParams::default()
        };
        let started = Instant::now();
        let e = waited(
            &api,
            &teammate,
            Some(account),
            Some(1),
            1_000,
            false,
            move || profile_answer(&a, &p, &q),
        )
        .unwrap_err();
        assert_eq!(
            (e.status().as_u16(), e.code()),
            (403, "wait_owner_only"),
            "{account}"
        );
        assert!(e.detail().is_none());
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "refused at once"
        );
    }
    // A wait beyond the bound is a bad request, not a long wait.
    assert_eq!(
        search(&api, "cello", Some(2), 30_001).unwrap_err().1,
        "bad_wait"
    );

    // The sinks run while the read waits: it answers with the row.
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            project(&api, &positioned[1..]);
        });
        let found = search(&api, "cello", Some(2), 10_000).unwrap();
        assert!(found.iter().any(|c| c.contains("cello")), "{found:?}");
    });
    assert!(profile_answer(&api, &owner(), &q).is_ok());
}

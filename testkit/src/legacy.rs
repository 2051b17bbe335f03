//! A seeded generator of legacy memory rows (the input of `kledger migrate plan`), shaped like
//! an export of a tiered memory store: long-term, short-term and archived rows, deleted and
//! expired ones, older revisions next to newer ones, rows a previous tool already moved,
//! slot-like predicates that collide, third parties, multi-line and empty content, and a few
//! lines that are not rows at all.
//!
//! `examples/migration/legacy.jsonl` is `lines(LEGACY_SEED, 10_000, 400)`; a test keeps the
//! checked-in file equal to the generator.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// The seed of the bundled fixture.
pub const LEGACY_SEED: u64 = 20_261_130;

const CITIES: &[&str] = &[
    "Lisbon", "Porto", "Kyiv", "Lviv", "Berlin", "Austin", "Osaka",
];
const EMPLOYERS: &[&str] = &["Acme", "Globex", "Initech", "Umbrella", "Hooli"];
const LIKES: &[&str] = &[
    "spicy food",
    "jazz",
    "early morning runs",
    "sci-fi novels",
    "green tea",
    "board games",
];
const PEOPLE: &[&str] = &["person:ana", "person:bo", "person:chen", "person:dara"];

/// `n` lines (JSON objects, a few malformed lines among them) over `accounts` accounts.
pub fn lines(seed: u64, n: usize, accounts: usize) -> Vec<String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let i = out.len();
        if rng.random_ratio(1, 1000) {
            out.push(malformed(&mut rng, i));
            continue;
        }
        let row = row(&mut rng, i, accounts);
        // Some rows were edited in the legacy store: the export has both revisions.
        if rng.random_ratio(3, 100) && out.len() + 1 < n {
            let mut older = row.clone();
            older["revision"] = json!(row["revision"].as_i64().unwrap_or(1) - 1);
            older["content"] = json!(format!(
                "(earlier) {}",
                row["content"].as_str().unwrap_or("")
            ));
            out.push(older.to_string());
        }
        out.push(row.to_string());
    }
    out.truncate(n);
    out
}

fn pick<'a>(rng: &mut ChaCha8Rng, xs: &[&'a str]) -> &'a str {
    xs[rng.random_range(0..xs.len())]
}

fn malformed(rng: &mut ChaCha8Rng, i: usize) -> String {
    match rng.random_range(0..4) {
        0 => "not json at all".into(),
        1 => format!("{{\"memory_id\":\"lm_{i:06}\",\"revision\":1,\"tier\":"),
        2 => format!("{{\"memory_id\":\"lm_{i:06}\",\"tier\":\"long_term\"}}"),
        _ => format!(
            "{{\"memory_id\":\"lm_{i:06}\",\"revision\":\"two\",\"account_id\":\"t_x/user/u\",\"tier\":\"long_term\",\"status\":\"active\",\"content\":\"x\",\"captured_at\":1}}"
        ),
    }
}

fn row(rng: &mut ChaCha8Rng, i: usize, accounts: usize) -> Value {
    let a = rng.random_range(0..accounts);
    let tenant = format!("t_legacy{}", a % 7);
    let account = match a % 10 {
        0 => format!("{tenant}/agent/agt_helper{a}"),
        _ => format!("{tenant}/user/u{a:04}"),
    };
    let tier = match rng.random_range(0..100) {
        0..60 => "long_term",
        60..85 => "short_term",
        85..99 => "archive",
        _ => "episodic",
    };
    let status = match rng.random_range(0..100) {
        0..88 => "active",
        88..94 => "deleted",
        94..97 => "expired",
        _ => "superseded",
    };
    let third = rng.random_ratio(15, 100);
    let (predicate, content) = match rng.random_range(0..100) {
        0..20 => {
            let c = pick(rng, CITIES);
            ("resides_in", format!("Lives in {c}"))
        }
        20..30 => {
            let e = pick(rng, EMPLOYERS);
            ("works_at", format!("Works at {e}"))
        }
        30..38 => {
            let y = rng.random_range(18..90);
            ("age", format!("Is {y} years old"))
        }
        38..60 => {
            let l = pick(rng, LIKES);
            ("likes", format!("Likes {l}"))
        }
        _ => ("", format!("Mentioned note number {i} about their week")),
    };
    let content = match rng.random_range(0..100) {
        0 => String::new(),
        1..4 => format!("{content}\n  (said twice)\t"),
        _ => content,
    };
    let mut v = json!({
        "memory_id": format!("lm_{i:06}"),
        "revision": rng.random_range(2..6),
        "account_id": account,
        "tier": tier,
        "status": status,
        "content": content,
        "captured_at": 1_600_000_000_000i64 + rng.random_range(0..94_000_000_000i64),
        "user_asserted": rng.random_ratio(2, 10),
        "source_type": if rng.random_ratio(1, 2) { "chat_message" } else { "legacy_memory" },
        "source_id": format!("msg_{:06}", rng.random_range(0..1_000_000)),
    });
    if !predicate.is_empty() {
        v["predicate"] = json!(predicate);
    }
    if third {
        v["subject"] = json!(pick(rng, PEOPLE));
    }
    if rng.random_ratio(2, 100) {
        v["migrated_to"] = json!(format!("mem_already{i}"));
    }
    if rng.random_ratio(5, 100) {
        v["sensitivity"] = json!("restricted");
    }
    if rng.random_ratio(1, 10) {
        v["tags"] = json!(["imported", "v1"]);
    }
    v
}

//! A small evaluator of Qdrant's REST JSON filters (the subset kledger writes: `must`,
//! `should`, `must_not`, nested filters, `match.value`, `match.any`, `is_null`), following
//! Qdrant's semantics: all `must`, at least one `should` when there are any, no `must_not`; a
//! match on an array field holds when any element matches. Tests use it to check the access
//! filter against the access rules without a Qdrant, and to check a Qdrant's answers.

use serde_json::{Map, Value};

fn field<'a>(payload: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    let mut parts = key.split('.');
    let mut v = payload.get(parts.next()?)?;
    for p in parts {
        v = v.get(p)?;
    }
    Some(v)
}

fn matches_value(v: &Value, want: &Value) -> bool {
    match v {
        Value::Array(items) => items.iter().any(|i| i == want),
        other => other == want,
    }
}

fn condition(c: &Value, payload: &Map<String, Value>) -> bool {
    if c.get("must").is_some() || c.get("should").is_some() || c.get("must_not").is_some() {
        return matches(c, payload);
    }
    if let Some(k) = c
        .get("is_null")
        .and_then(|n| n.get("key"))
        .and_then(Value::as_str)
    {
        return field(payload, k).is_some_and(Value::is_null);
    }
    let (Some(key), Some(m)) = (c.get("key").and_then(Value::as_str), c.get("match")) else {
        panic!("unsupported condition {c}");
    };
    let Some(v) = field(payload, key) else {
        return false;
    };
    if let Some(want) = m.get("value") {
        return matches_value(v, want);
    }
    if let Some(any) = m.get("any").and_then(Value::as_array) {
        return any.iter().any(|w| matches_value(v, w));
    }
    panic!("unsupported match {m}");
}

fn list(f: &Value, name: &str) -> Vec<Value> {
    f.get(name)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Whether `payload` passes `filter`.
pub fn matches(filter: &Value, payload: &Map<String, Value>) -> bool {
    let should = list(filter, "should");
    list(filter, "must").iter().all(|c| condition(c, payload))
        && (should.is_empty() || should.iter().any(|c| condition(c, payload)))
        && !list(filter, "must_not")
            .iter()
            .any(|c| condition(c, payload))
}

//! MemMachine-style episodic messages as evidence (seed 003).
//!
//! In the JSON form an evidence item may be given as a MemMachine `MemoryMessage` (content,
//! producer, produced_for, timestamp, role, metadata) with the session it belongs to. It is
//! turned, deterministically, into an ordinary [`Evidence`] with a message-level locator:
//!
//! | evidence field | from |
//! |---|---|
//! | `source_type` | `episodic_message` |
//! | `source_id` | `session_id` (MemMachine's session; org and project map onto the tenant block) |
//! | `source_version` | the message timestamp, ms since the epoch |
//! | `locator.message_id` | `message_id`, else `metadata.message_id` or `metadata.id` (strings), else `msg_` + 26 hex digits of SHA-256 over the length-prefixed producer, produced_for, role, timestamp and content |
//! | `locator.heading` | `<role>:<producer>-><produced_for>` (≤256 chars) |
//! | `locator.span_start`, `span_end` | as given |
//! | `quote` | `quote`, else the message content (first 2,000 chars) |
//! | `checksum` | `sha256:` + hex SHA-256 of the content |
//!
//! The rest of the metadata is not kept. The Avro form has only the ordinary shape: extractors
//! that write Avro convert with the same table.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::common::{Evidence, Locator};
use crate::limits::SHORT_CHARS_MAX;

/// `source_type` of evidence made from an episodic message.
pub const EPISODIC_SOURCE_TYPE: &str = "episodic_message";
/// Chars of a message's content quoted when no quote is given.
pub const EPISODIC_QUOTE_CHARS: usize = 2_000;

/// A MemMachine `MemoryMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryMessage {
    /// The raw text of the message.
    pub content: String,
    /// The id of the human or agent that wrote it.
    pub producer: String,
    /// The recipient id.
    pub produced_for: String,
    /// UTC timestamp: RFC 3339 text (`2026-01-26T12:00:00Z`, fractions and offsets allowed) or
    /// ms since the epoch.
    pub timestamp: Timestamp,
    /// `user`, `assistant`, `system`, ...
    pub role: String,
    /// Custom metadata.
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// A timestamp as MemMachine sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Timestamp {
    /// ms since the epoch.
    Millis(i64),
    /// RFC 3339 text.
    Text(String),
}

impl Timestamp {
    /// ms since the epoch.
    pub fn millis(&self) -> Result<i64, String> {
        match self {
            Self::Millis(ms) => Ok(*ms),
            Self::Text(s) => parse_rfc3339(s).ok_or_else(|| format!("not an RFC 3339 time: {s}")),
        }
    }
}

/// An evidence item given as an episodic message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodicEvidence {
    /// The message.
    pub episodic_message: MemoryMessage,
    /// The MemMachine session it belongs to (the evidence's source id).
    pub session_id: String,
    /// The message's id, when the caller has one.
    #[serde(default)]
    pub message_id: Option<String>,
    /// Start of the quoted span in the content.
    #[serde(default)]
    pub span_start: Option<i64>,
    /// End of the quoted span.
    #[serde(default)]
    pub span_end: Option<i64>,
    /// The quote (default: the content).
    #[serde(default)]
    pub quote: Option<String>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl EpisodicEvidence {
    /// The ordinary evidence item (see the module table).
    pub fn to_evidence(&self) -> Result<Evidence, String> {
        let m = &self.episodic_message;
        let ts = m.timestamp.millis()?;
        let from_metadata = ["message_id", "id"]
            .iter()
            .find_map(|k| m.metadata.get(*k).and_then(|v| v.as_str()))
            .map(str::to_owned);
        let message_id = self
            .message_id
            .clone()
            .or(from_metadata)
            .unwrap_or_else(|| {
                let mut h = Sha256::new();
                for part in [
                    m.producer.as_bytes(),
                    m.produced_for.as_bytes(),
                    m.role.as_bytes(),
                    ts.to_string().as_bytes(),
                    m.content.as_bytes(),
                ] {
                    h.update((part.len() as u64).to_be_bytes());
                    h.update(part);
                }
                format!("msg_{}", &hex(&h.finalize())[..26])
            });
        let heading: String = format!("{}:{}->{}", m.role, m.producer, m.produced_for)
            .chars()
            .take(SHORT_CHARS_MAX)
            .collect();
        Ok(Evidence {
            source_type: EPISODIC_SOURCE_TYPE.into(),
            source_id: self.session_id.clone(),
            source_version: ts.to_string(),
            locator: Locator {
                page: None,
                heading: Some(heading),
                paragraph: None,
                message_id: Some(message_id),
                span_start: self.span_start,
                span_end: self.span_end,
            },
            quote: Some(
                self.quote
                    .clone()
                    .unwrap_or_else(|| m.content.chars().take(EPISODIC_QUOTE_CHARS).collect()),
            ),
            checksum: Some(format!(
                "sha256:{}",
                hex(&Sha256::digest(m.content.as_bytes()))
            )),
        })
    }
}

/// Deserializes a JSON-form evidence list whose items are ordinary evidence or episodic
/// messages (an object with `episodic_message`).
pub fn evidence_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Evidence>, D::Error> {
    use serde::de::Error;
    let items = Vec::<serde_json::Value>::deserialize(d)?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let r = if v.get("episodic_message").is_some() {
                serde_json::from_value::<EpisodicEvidence>(v)
                    .map_err(|e| e.to_string())
                    .and_then(|e| e.to_evidence())
            } else {
                serde_json::from_value::<Evidence>(v).map_err(|e| e.to_string())
            };
            r.map_err(|e| D::Error::custom(format!("evidence[{i}]: {e}")))
        })
        .collect()
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (also a space for `T`, lowercase `z`)
/// into ms since the epoch.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || !b.is_ascii() {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0;
    if b[i] == b'.' {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        let frac = &s[start..i.min(start + 3)];
        ms = frac.parse::<i64>().ok()? * 10i64.pow(3 - frac.len() as u32);
    }
    let offset_min = match &s[i..] {
        "Z" | "z" => 0,
        tz if tz.len() == 6
            && matches!(tz.as_bytes()[0], b'+' | b'-')
            && tz.as_bytes()[3] == b':' =>
        {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            let sign = if tz.starts_with('-') { -1 } else { 1 };
            sign * (oh * 60 + om)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3_600 + mi * 60 + sec - offset_min * 60;
    Some(secs * 1_000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_parse_to_epoch_ms() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339("2026-01-26T12:00:00Z"),
            Some(1_769_428_800_000)
        );
        assert_eq!(
            parse_rfc3339("2026-01-26T14:00:00.250+02:00"),
            Some(1_769_428_800_250)
        );
        assert_eq!(
            parse_rfc3339("2026-01-26 12:00:00.123456z"),
            Some(1_769_428_800_123)
        );
        for bad in [
            "2026-01-26",
            "2026-13-01T00:00:00Z",
            "2026-01-26T12:00:00",
            "x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    fn message() -> EpisodicEvidence {
        serde_json::from_value(serde_json::json!({
            "episodic_message": {
                "content": "I moved to Porto last week",
                "producer": "u_alice",
                "produced_for": "agt_helper",
                "timestamp": "2026-01-26T12:00:00Z",
                "role": "user",
                "metadata": {"channel": "tg"}
            },
            "session_id": "sess_42"
        }))
        .unwrap()
    }

    #[test]
    fn an_episodic_message_becomes_evidence_with_a_message_locator() {
        let e = message().to_evidence().unwrap();
        assert_eq!(e.source_type, "episodic_message");
        assert_eq!(e.source_id, "sess_42");
        assert_eq!(e.source_version, "1769428800000");
        assert_eq!(
            e.locator.heading.as_deref(),
            Some("user:u_alice->agt_helper")
        );
        let id = e.locator.message_id.clone().unwrap();
        assert!(id.starts_with("msg_") && id.len() == 30, "{id}");
        assert_eq!(e, message().to_evidence().unwrap(), "deterministic");
        assert_eq!(e.quote.as_deref(), Some("I moved to Porto last week"));
        assert!(e.checksum.unwrap().starts_with("sha256:"));
        let mut m = message();
        m.episodic_message
            .metadata
            .insert("message_id".into(), "msg_7".into());
        assert_eq!(
            m.to_evidence().unwrap().locator.message_id.as_deref(),
            Some("msg_7")
        );
    }
}

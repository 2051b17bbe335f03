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

use chrono::NaiveDate;
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
                format!("msg_{}", &crate::hex::to_hex(&h.finalize())[..26])
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
                crate::hex::to_hex(&Sha256::digest(m.content.as_bytes()))
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

/// Days since 1970-01-01 of day `d` of month `m` of year `y` (proleptic Gregorian, chrono's
/// calendar). A day past the month's end runs on into the next month (`2026-02-31` is 3 March),
/// as this parser has always taken it; chrono's own RFC 3339 parser refuses such a day.
fn days_from_civil(y: i64, m: i64, d: i64) -> Option<i64> {
    let first = NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, u32::try_from(m).ok()?, 1)?;
    Some(i64::from(first.to_epoch_days()) + d - 1)
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (also a space for `T`, lowercase `z`)
/// into ms since the epoch.
///
/// The grammar is this function's own, not chrono's `parse_from_rfc3339`, which refuses what
/// this has always accepted (a day past the month's end, offsets past ±23:59 such as `+24:00`)
/// and accepts what it refuses (a Unicode minus sign in the offset): see `RFC3339_CASES` in the
/// tests. Only the calendar is chrono's.
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
    let days = days_from_civil(y, mo, d)?;
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

    /// What the parser accepts and refuses, recorded from the hand-written parser before its
    /// calendar arithmetic moved to chrono. Its grammar is laxer than chrono's
    /// `parse_from_rfc3339` and stays hand-written: a day past the month's end rolls over
    /// (`2026-02-31` is 3 March), any two-digit offset is taken (`+24:00`, `+99:99`), and the
    /// Unicode minus sign chrono takes in an offset is refused.
    #[rustfmt::skip]
    const RFC3339_CASES: &[(&str, Option<i64>)] = &[
        ("1970-01-01T00:00:00Z", Some(0)),
        ("1970-01-01T00:00:00z", Some(0)),
        ("1970-01-01t00:00:00Z", Some(0)),
        ("1970-01-01 00:00:00Z", Some(0)),
        ("1969-12-31T23:59:59.999Z", Some(-1)),
        ("0000-01-01T00:00:00Z", Some(-62167219200000)),
        ("0000-02-29T00:00:00Z", Some(-62162121600000)),
        ("9999-12-31T23:59:59.999999999Z", Some(253402300799999)),
        ("2026-01-26T12:00:00.1Z", Some(1769428800100)),
        ("2026-01-26T12:00:00.12Z", Some(1769428800120)),
        ("2026-01-26T12:00:00.123Z", Some(1769428800123)),
        ("2026-01-26T12:00:00.1239Z", Some(1769428800123)),
        ("2026-01-26T12:00:00.999999999999Z", Some(1769428800999)),
        ("2026-01-26T12:00:00.000000000001Z", Some(1769428800000)),
        ("2026-01-26T12:00:00.Z", None),
        ("2026-01-26T12:00:00.+01:00", None),
        ("2026-01-26T12:00:00.5", None),
        ("2026-01-26T12:00:00,5Z", None),
        ("2016-12-31T23:59:60Z", Some(1483228800000)),
        ("2016-12-31T23:59:60.5Z", Some(1483228800500)),
        ("2026-01-26T12:30:60Z", Some(1769430660000)),
        ("2026-01-26T12:00:61Z", None),
        ("2026-01-26T12:00:99Z", None),
        ("2026-01-26T24:00:00Z", None),
        ("2026-01-26T12:60:00Z", None),
        ("2026-02-28T00:00:00Z", Some(1772236800000)),
        ("2026-02-29T00:00:00Z", Some(1772323200000)),
        ("2026-02-30T00:00:00Z", Some(1772409600000)),
        ("2026-02-31T00:00:00Z", Some(1772496000000)),
        ("2024-02-29T00:00:00Z", Some(1709164800000)),
        ("2100-02-29T00:00:00Z", Some(4107542400000)),
        ("2000-02-29T00:00:00Z", Some(951782400000)),
        ("2026-04-31T00:00:00Z", Some(1777593600000)),
        ("2026-12-31T23:59:59Z", Some(1798761599000)),
        ("2026-00-10T00:00:00Z", None),
        ("2026-01-00T00:00:00Z", None),
        ("2026-01-32T00:00:00Z", None),
        ("2026-13-01T00:00:00Z", None),
        ("2026-01-26T12:00:00+00:00", Some(1769428800000)),
        ("2026-01-26T12:00:00-00:00", Some(1769428800000)),
        ("2026-01-26T12:00:00+05:30", Some(1769409000000)),
        ("2026-01-26T12:00:00-08:00", Some(1769457600000)),
        ("2026-01-26T12:00:00.250+02:00", Some(1769421600250)),
        ("2026-01-26T12:00:00+23:59", Some(1769342460000)),
        ("2026-01-26T12:00:00-23:59", Some(1769515140000)),
        ("2026-01-26T12:00:00+24:00", Some(1769342400000)),
        ("2026-01-26T12:00:00+00:60", Some(1769425200000)),
        ("2026-01-26T12:00:00+99:99", Some(1769066460000)),
        ("2026-01-26T12:00:00-99:99", Some(1769791140000)),
        ("2026-01-26T12:00:00+0530", None),
        ("2026-01-26T12:00:00+05", None),
        ("2026-01-26T12:00:00+05:3", None),
        ("2026-01-26T12:00:00+05:300", None),
        ("2026-01-26T12:00:00+5:30", None),
        ("2026-01-26T12:00:00 +05:30", None),
        ("2026-01-26T12:00:00−05:00", None),
        ("2026-01-26T12:00:00+05:30Z", None),
        ("2026-01-26T12:00:00Z ", None),
        (" 2026-01-26T12:00:00Z", None),
        ("2026-01-26T12:00:00ZZ", None),
        ("2026-01-26T12:00:00UTC", None),
        ("2026-01-26T12:00:00GMT", None),
        ("2026-01-26T12:00:00 Z", None),
        ("2026-01-26", None),
        ("2026-01-26T12:00", None),
        ("2026-01-26T12:00Z", None),
        ("2026-01-26T12:00:00", None),
        ("2026-01-26T12:00:0Z", None),
        ("2026-1-26T12:00:00Z", None),
        ("26-01-26T12:00:00Z", None),
        ("+2026-01-26T12:00:00Z", None),
        ("12026-01-26T12:00:00Z", None),
        ("20260126T120000Z", None),
        ("2026/01/26T12:00:00Z", None),
        ("2026-01-26_12:00:00Z", None),
        ("2026-01-26T12.00.00Z", None),
        ("2026-+1-26T12:00:00Z", None),
        ("2026-01-26T1 :00:00Z", None),
        ("2026-01-26T-1:00:00Z", None),
        ("2026-01-26T12:00:00.5é", None),
        ("１９７０-01-01T00:00:00Z", None),
        ("2026-01-26T12:00:00.123456z", Some(1769428800123)),
        ("2026-01-26 12:00:00.123456z", Some(1769428800123)),
        ("x", None),
        ("", None),
        ("2026-01-26T12:00:00+05:30:00", None),
        ("2026-01-26T12:00:00.-5Z", None),
    ];

    #[test]
    fn rfc3339_edge_cases_accept_and_refuse_as_recorded() {
        for (s, want) in RFC3339_CASES {
            assert_eq!(parse_rfc3339(s), *want, "{s:?}");
        }
    }

    /// The parser as it was before chrono took its calendar, kept as the oracle.
    mod hand {
        fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
            let y = if m <= 2 { y - 1 } else { y };
            let era = y.div_euclid(400);
            let yoe = y - era * 400;
            let mp = (m + 9) % 12;
            let doy = (153 * mp + 2) / 5 + d - 1;
            let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
            era * 146_097 + doe - 719_468
        }

        pub(super) fn parse_rfc3339(s: &str) -> Option<i64> {
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
    }

    #[test]
    fn rfc3339_edge_cases_agree_with_the_hand_parser() {
        for (s, _) in RFC3339_CASES {
            assert_eq!(parse_rfc3339(s), hand::parse_rfc3339(s), "{s:?}");
        }
    }

    /// RFC 3339-shaped text with every field a little past its range and every separator
    /// sometimes wrong, so both accepting and refusing paths are taken often.
    fn rfc3339_like() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let date = (0u32..=9999, 0u32..=13, 0u32..=32)
            .prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}"));
        let time =
            (0u32..=25, 0u32..=61, 0u32..=62).prop_map(|(h, m, s)| format!("{h:02}:{m:02}:{s:02}"));
        let sep = prop_oneof![
            4 => Just("T"),
            1 => Just("t"),
            1 => Just(" "),
            1 => Just("_"),
            1 => Just(""),
        ];
        let frac =
            prop_oneof![2 => Just(String::new()), 2 => "\\.[0-9]{0,14}", 1 => "[.,][0-9a-z]{1,3}"];
        let offset = prop_oneof![
            2 => Just("Z".to_owned()),
            1 => Just("z".to_owned()),
            4 => (prop_oneof![Just('+'), Just('-'), Just('\u{2212}')], 0u32..=99, 0u32..=99)
                .prop_map(|(s, h, m)| format!("{s}{h:02}:{m:02}")),
            1 => "[+-][0-9]{1,5}:?[0-9]{0,3}",
            1 => "[ A-Za-z0-9]{0,3}",
        ];
        let text =
            (date, sep, time, frac, offset).prop_map(|(d, s, t, f, o)| format!("{d}{s}{t}{f}{o}"));
        prop_oneof![
            4 => text.clone(),
            // One byte replaced by something else.
            2 => (text, any::<proptest::sample::Index>(), "[0-9:. TZ+-]|.")
                .prop_map(|(t, at, c)| {
                    let mut chars: Vec<char> = t.chars().collect();
                    let i = at.index(chars.len());
                    chars.splice(i..=i, c.chars());
                    chars.into_iter().collect()
                }),
            1 => any::<String>(),
            1 => "[0-9 :.TZtz+-]{0,32}",
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(8192))]

        #[test]
        fn rfc3339_parsing_agrees_with_the_hand_parser(s in rfc3339_like()) {
            proptest::prop_assert_eq!(parse_rfc3339(&s), hand::parse_rfc3339(&s), "{:?}", s);
        }

        #[test]
        fn every_valid_calendar_day_agrees(
            y in 0i64..=9999, m in 1i64..=12, d in 1i64..=31,
            h in 0i64..=23, mi in 0i64..=59, sec in 0i64..=60, ms in 0i64..=999,
        ) {
            let s = format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{sec:02}.{ms:03}Z");
            let got = parse_rfc3339(&s);
            proptest::prop_assert!(got.is_some(), "{}", s);
            proptest::prop_assert_eq!(got, hand::parse_rfc3339(&s), "{}", s);
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

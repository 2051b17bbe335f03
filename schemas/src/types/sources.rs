//! Source records: what an owner's other systems know, beside the ledger's own rows.
//!
//! Four owner-scoped record types, written by the `source` op of an intent (so they are decided,
//! committed, sealed, replayed, rebuilt and purged like every ledger row) and kept as rows of
//! the four source kinds ([`crate::Kind::Person`] and the others), each carrying its document
//! in [`SourceRecord`]:
//!
//! | type | record id | joined to people by | returned by the timeline | never returned |
//! |---|---|---|---|---|
//! | [`PersonDoc`] | `person_id` | itself: the entity authority | nothing (it resolves an entity) | names, retained names, emails (aliases) |
//! | [`ConversationDoc`] | `conversation_id` | `participant_ids` | the summary and its time span | transcript segments |
//! | [`CalendarDoc`] | `event_id` | `attendee_ids` | the title and its time span | notes, attendees |
//! | [`ScreenDoc`] | `span_id` | `person_ids` | app and window title, time span | OCR text |
//!
//! A newer document with the same record id replaces the older one (the older row is
//! superseded in the same commit, as an amend does).

use serde::{Deserialize, Serialize};

use super::common::{Acl, Visibility};
use crate::avro::{AvroCodec, DecodeError, Reader, write_long};
use crate::{avro_enum, avro_record};

/// Retained (former) names a people document keeps at most.
pub const RETAINED_NAMES_MAX: usize = 8;
/// Current names of a person at most.
pub const NAMES_MAX: usize = 8;
/// Emails of a person at most.
pub const EMAILS_MAX: usize = 8;
/// Chars of a name or an email at most.
pub const ALIAS_CHARS_MAX: usize = 256;
/// People ids a conversation, event or screen span names at most.
pub const PERSON_IDS_MAX: usize = 64;
/// Transcript segments a conversation keeps at most.
pub const SEGMENTS_MAX: usize = 512;
/// Chars of one transcript segment at most.
pub const SEGMENT_CHARS_MAX: usize = 4_000;
/// Chars of a conversation's whole transcript at most (the record budget holds it too).
pub const TRANSCRIPT_CHARS_MAX: usize = 48_000;
/// Chars of a calendar event's notes or a screen span's OCR text at most.
pub const NOTES_CHARS_MAX: usize = 8_000;
/// Chars of an app name at most.
pub const APP_CHARS_MAX: usize = 256;
/// Chars of a summary, a title or a window title at most (one line, as a row's content).
pub const TITLE_CHARS_MAX: usize = 4_000;

/// A people document: the entity authority. Its id is the entity id the ledger and every
/// source name the person by; its names and emails are exact-match aliases only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonDoc {
    /// The person's stable id (1..=256, an identifier), e.g. `person:ana`.
    pub person_id: String,
    /// Current names (≤8, each ≤256).
    #[serde(default)]
    pub names: Vec<String>,
    /// Names the person went by before (≤8, each ≤256).
    #[serde(default)]
    pub retained_names: Vec<String>,
    /// Email addresses (≤8, each ≤256).
    #[serde(default)]
    pub emails: Vec<String>,
}
avro_record!(PersonDoc {
    person_id,
    names,
    retained_names,
    emails
});

/// One transcript segment of a conversation (kept for bounded conversation retrieval only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    /// Start (ms since the epoch).
    pub start_ms: i64,
    /// End (ms), at or after the start.
    pub end_ms: i64,
    /// Who spoke: a person id, when known.
    #[serde(default)]
    pub speaker_id: Option<String>,
    /// What was said (≤4,000 chars).
    pub text: String,
}
avro_record!(Segment {
    start_ms,
    end_ms,
    speaker_id,
    text
});

/// A conversation's summary, as the conversation finalizer wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationDoc {
    /// The conversation's stable id.
    pub conversation_id: String,
    /// Start (ms since the epoch).
    pub started_at: i64,
    /// End (ms), at or after the start.
    pub ended_at: i64,
    /// The summary (one line, ≤4,000 chars): what the timeline shows.
    pub summary: String,
    /// The people who took part (person ids, ≤64): joins only.
    #[serde(default)]
    pub participant_ids: Vec<String>,
    /// The transcript (≤512 segments, ≤48,000 chars in all): never returned by the timeline.
    #[serde(default)]
    pub segments: Vec<Segment>,
}
avro_record!(ConversationDoc {
    conversation_id,
    started_at,
    ended_at,
    summary,
    participant_ids,
    segments
});

/// A calendar event's title.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalendarDoc {
    /// The event's stable id.
    pub event_id: String,
    /// Start (ms since the epoch).
    pub start: i64,
    /// End (ms), at or after the start.
    pub end: i64,
    /// The title (one line, ≤4,000 chars): what the timeline shows.
    pub title: String,
    /// Attendees (person ids, ≤64): joins only, never returned.
    #[serde(default)]
    pub attendee_ids: Vec<String>,
    /// Notes (≤8,000 chars): kept, never returned.
    #[serde(default)]
    pub notes: Option<String>,
}
avro_record!(CalendarDoc {
    event_id,
    start,
    end,
    title,
    attendee_ids,
    notes
});

/// A span of time one app window was in front on screen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenDoc {
    /// The span's stable id.
    pub span_id: String,
    /// Start (ms since the epoch).
    pub start: i64,
    /// End (ms), at or after the start.
    pub end: i64,
    /// The app (≤256 chars).
    pub app: String,
    /// The window's title (one line, ≤4,000 chars).
    pub window_title: String,
    /// People the window is about (a chat or a mail thread with them; person ids, ≤64):
    /// joins only.
    #[serde(default)]
    pub person_ids: Vec<String>,
    /// Text read off the screen (≤8,000 chars): kept locally, never returned.
    #[serde(default)]
    pub ocr_text: Option<String>,
}
avro_record!(ScreenDoc {
    span_id,
    start,
    end,
    app,
    window_title,
    person_ids,
    ocr_text
});

avro_enum! {
    /// MemMachine's `EpisodeType`: what kind of event an episode is.
    pub enum EpisodeType { Message = "message" }
}

avro_enum! {
    /// MemMachine's `ContentType`: the format of an episode's content.
    pub enum ContentType { String = "string" }
}

/// Chars of an episode's content at most (as a conversation's whole transcript).
pub const EPISODE_CONTENT_CHARS_MAX: usize = TRANSCRIPT_CHARS_MAX;
/// Bytes of an episode's metadata (its JSON text) at most.
pub const EPISODE_METADATA_BYTES_MAX: usize = 8_000;

/// A MemMachine episode (seed 003): one `MemoryMessage` of a session, every field kept —
/// its content, producer, recipient, time, role and metadata — with the session and project it
/// belongs to (MemMachine's org is the tenant). Kept in the sources store, listed by
/// org/project/session (`GET /v1/episodes`), sealed, purged and replayed like every source
/// document; never in a timeline or the vector index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodeDoc {
    /// The episode's stable id (default: a digest of the session and the message).
    pub episode_id: String,
    /// The MemMachine session (an identifier, ≤256 chars): the episode's join key, so a purge
    /// of entity `<session_id>` erases the session.
    pub session_id: String,
    /// The MemMachine project (`proj_…`), if any.
    #[serde(default)]
    pub project_id: Option<String>,
    /// `message`.
    pub episode_type: EpisodeType,
    /// `string`.
    pub content_type: ContentType,
    /// The raw text of the message (≤48,000 chars).
    pub content: String,
    /// The id of the human or agent that wrote it (≤256 chars).
    pub producer: String,
    /// The recipient id (≤256 chars).
    pub produced_for: String,
    /// UTC time of the message, ms since the epoch.
    pub timestamp: i64,
    /// `user`, `assistant`, `system`, … (≤64 chars).
    pub role: String,
    /// The custom metadata, as its JSON text (an object, ≤8,000 bytes; `{}` when none).
    pub metadata: String,
}
avro_record!(EpisodeDoc {
    episode_id,
    session_id,
    project_id,
    episode_type,
    content_type,
    content,
    producer,
    produced_for,
    timestamp,
    role,
    metadata
});

/// One source document. JSON form: an object tagged by `kind` (`person`, `conversation`,
/// `calendar`, `screen`, `episode`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SourceDoc {
    /// A people document.
    Person(PersonDoc),
    /// A conversation summary.
    Conversation(ConversationDoc),
    /// A calendar event.
    Calendar(CalendarDoc),
    /// A screen app/window span.
    Screen(ScreenDoc),
    /// A MemMachine episode.
    Episode(EpisodeDoc),
}

/// Branches of the union of source documents.
const DOC_BRANCHES: usize = 5;

impl SourceDoc {
    /// Its branch of the union `[PersonDoc, ConversationDoc, CalendarDoc, ScreenDoc,
    /// EpisodeDoc]`.
    fn branch(&self) -> i64 {
        match self {
            SourceDoc::Person(_) => 0,
            SourceDoc::Conversation(_) => 1,
            SourceDoc::Calendar(_) => 2,
            SourceDoc::Screen(_) => 3,
            SourceDoc::Episode(_) => 4,
        }
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        match self {
            SourceDoc::Person(d) => d.encode(out),
            SourceDoc::Conversation(d) => d.encode(out),
            SourceDoc::Calendar(d) => d.encode(out),
            SourceDoc::Screen(d) => d.encode(out),
            SourceDoc::Episode(d) => d.encode(out),
        }
    }

    fn decode_branch(branch: usize, r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(match branch {
            0 => SourceDoc::Person(PersonDoc::decode(r)?),
            1 => SourceDoc::Conversation(ConversationDoc::decode(r)?),
            2 => SourceDoc::Calendar(CalendarDoc::decode(r)?),
            3 => SourceDoc::Screen(ScreenDoc::decode(r)?),
            _ => SourceDoc::Episode(EpisodeDoc::decode(r)?),
        })
    }
}

/// `SourceDoc` is the Avro union `[PersonDoc, ConversationDoc, CalendarDoc, ScreenDoc,
/// EpisodeDoc]`.
impl AvroCodec for SourceDoc {
    fn encode(&self, out: &mut Vec<u8>) {
        write_long(out, self.branch());
        self.encode_body(out);
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let branch = r.read_union_index(DOC_BRANCHES)?;
        Self::decode_branch(branch, r)
    }
}

/// The sources a timeline can read, and the row kind each keeps its documents as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// People documents (never a timeline source: they resolve the entity).
    People,
    /// Conversation summaries.
    Conversations,
    /// Calendar titles.
    Calendar,
    /// Screen app/window spans.
    Screen,
    /// MemMachine episodes (never a timeline source: listed by session).
    Episodes,
}

impl SourceKind {
    /// Every source, in order.
    pub const ALL: [SourceKind; 5] = [
        Self::People,
        Self::Conversations,
        Self::Calendar,
        Self::Screen,
        Self::Episodes,
    ];

    /// The name in `--kind`, `sources=` and answers.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::People => "people",
            Self::Conversations => "conversations",
            Self::Calendar => "calendar",
            Self::Screen => "screen",
            Self::Episodes => "episodes",
        }
    }

    /// Parses a source name (`people`, `conversations`, `calendar`, `screen`, `episodes`).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The row kind that holds this source's documents.
    pub fn row_kind(self) -> super::Kind {
        match self {
            Self::People => super::Kind::Person,
            Self::Conversations => super::Kind::Conversation,
            Self::Calendar => super::Kind::CalendarEvent,
            Self::Screen => super::Kind::ScreenSpan,
            Self::Episodes => super::Kind::Episode,
        }
    }

    /// The source a row kind belongs to (`None` for the ledger's own kinds).
    pub fn of(kind: super::Kind) -> Option<Self> {
        match kind {
            super::Kind::Person => Some(Self::People),
            super::Kind::Conversation => Some(Self::Conversations),
            super::Kind::CalendarEvent => Some(Self::Calendar),
            super::Kind::ScreenSpan => Some(Self::Screen),
            super::Kind::Episode => Some(Self::Episodes),
            super::Kind::Fact | super::Kind::Document | super::Kind::Trigger => None,
        }
    }
}

impl SourceDoc {
    /// The source it belongs to.
    pub fn source(&self) -> SourceKind {
        match self {
            Self::Person(_) => SourceKind::People,
            Self::Conversation(_) => SourceKind::Conversations,
            Self::Calendar(_) => SourceKind::Calendar,
            Self::Screen(_) => SourceKind::Screen,
            Self::Episode(_) => SourceKind::Episodes,
        }
    }

    /// Its stable id within its source.
    pub fn record_id(&self) -> &str {
        match self {
            Self::Person(d) => &d.person_id,
            Self::Conversation(d) => &d.conversation_id,
            Self::Calendar(d) => &d.event_id,
            Self::Screen(d) => &d.span_id,
            Self::Episode(d) => &d.episode_id,
        }
    }

    /// The people it is joined to (a people document: none; it is the person). An episode is
    /// joined to its session instead: its entries are listed by session, and a purge of the
    /// session's id erases them.
    pub fn person_ids(&self) -> &[String] {
        match self {
            Self::Person(_) => &[],
            Self::Conversation(d) => &d.participant_ids,
            Self::Calendar(d) => &d.attendee_ids,
            Self::Screen(d) => &d.person_ids,
            Self::Episode(d) => std::slice::from_ref(&d.session_id),
        }
    }

    /// Its time span (ms): start and end (a people document has none).
    pub fn span(&self) -> Option<(i64, i64)> {
        match self {
            Self::Person(_) => None,
            Self::Conversation(d) => Some((d.started_at, d.ended_at)),
            Self::Calendar(d) => Some((d.start, d.end)),
            Self::Screen(d) => Some((d.start, d.end)),
            Self::Episode(d) => Some((d.timestamp, d.timestamp)),
        }
    }

    /// What a read may show of it: the summary, the title, or `app — window title`; a people
    /// document shows nothing (its names are aliases).
    pub fn shown(&self) -> String {
        match self {
            Self::Person(_) => String::new(),
            Self::Conversation(d) => d.summary.clone(),
            Self::Calendar(d) => d.title.clone(),
            Self::Screen(d) => format!("{} — {}", d.app, d.window_title),
            Self::Episode(d) => d.content.chars().take(TITLE_CHARS_MAX).collect(),
        }
    }
}

/// The `source` op: put a source document (a newer one with the same record id replaces it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceOp {
    /// The document.
    pub doc: SourceDoc,
    /// cm_payload_v1 visibility (private by default: the owner's).
    #[serde(default = "private")]
    pub visibility: Visibility,
    /// Readers granted access to a confidential document.
    #[serde(default)]
    pub acl: Acl,
}
avro_record!(SourceOp {
    doc,
    visibility,
    acl
});

fn private() -> Visibility {
    Visibility::Private
}

/// A source row's document. Its id and the people it joins stay in the clear (the fold and
/// the timeline's joins read them, as a row's subject); the document itself is content,
/// sealed under the row's data key like a row's text (`None` on the wire when sealed, and in
/// a tombstone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceRecord {
    /// The document's id within its source.
    pub record_id: String,
    /// The people it is joined to.
    #[serde(default)]
    pub person_ids: Vec<String>,
    /// A people document's aliases (names, retained names, emails) as keys keyed with the
    /// ledger's secret (`kledger_processors::ids::alias_key`): what resolves an alias at
    /// ingest without any name in the clear. Empty in a tombstone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alias_keys: Vec<String>,
    /// The document (content-bearing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<SourceDoc>,
}
// `doc` is the flat Avro union `[null, PersonDoc, ConversationDoc, CalendarDoc, ScreenDoc]`
// (Avro has no union of unions).
impl AvroCodec for SourceRecord {
    fn encode(&self, out: &mut Vec<u8>) {
        self.record_id.encode(out);
        self.person_ids.encode(out);
        self.alias_keys.encode(out);
        match &self.doc {
            None => write_long(out, 0),
            Some(d) => {
                write_long(out, d.branch() + 1);
                d.encode_body(out);
            }
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let record_id = AvroCodec::decode(r)?;
        let person_ids = AvroCodec::decode(r)?;
        let alias_keys = AvroCodec::decode(r)?;
        let doc = match r.read_union_index(DOC_BRANCHES + 1)? {
            0 => None,
            branch => Some(SourceDoc::decode_branch(branch - 1, r)?),
        };
        Ok(Self {
            record_id,
            person_ids,
            alias_keys,
            doc,
        })
    }
}

/// One source document as `kledger publish --kind KIND` reads it (one JSON object per line) and
/// `POST /v1/sources/{kind}` takes it: the document's own fields (those of [`PersonDoc`],
/// [`ConversationDoc`], [`CalendarDoc`] or [`ScreenDoc`], as the kind says), beside its owner,
/// record time and access.
#[derive(Debug, Clone, Deserialize)]
pub struct SourceEnvelope {
    /// The account (`kledger publish`; the HTTP ingress takes the caller's or `account=`).
    #[serde(default)]
    pub account_id: Option<String>,
    /// The Kafka record timestamp, ms (`kledger publish`; default: now) — for an episode, the
    /// message's own time instead (RFC 3339 text or ms; its record time is then now).
    #[serde(default)]
    pub timestamp: Option<serde_json::Value>,
    /// cm_payload_v1 visibility (default private).
    #[serde(default)]
    pub visibility: Option<Visibility>,
    /// Readers granted access to a confidential document.
    #[serde(default)]
    pub acl: Option<Acl>,
    /// The document's version in its source system (a last-modified time, an etag; ≤64
    /// chars): what tells a document sent again (the same version: a `duplicate`) from one
    /// changed back to an earlier content (a new version). Without one, the content decides.
    #[serde(default)]
    pub version: Option<String>,
    /// The document's fields.
    #[serde(flatten)]
    pub doc: serde_json::Map<String, serde_json::Value>,
}

/// An episode as `POST /v1/sources/episodes` and `kledger publish --kind episodes` take it:
/// a MemMachine `MemoryMessage` (`content`, `producer`, `produced_for`, `timestamp` as RFC 3339
/// text or ms, `role`, `metadata`) with its `session_id`, and optionally its `project_id`,
/// `episode_id` (default: a digest of the session and the message), `episode_type`
/// (`message`) and `content_type` (`string`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct EpisodeInput {
    #[serde(default)]
    episode_id: Option<String>,
    session_id: String,
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default)]
    episode_type: Option<EpisodeType>,
    #[serde(default)]
    content_type: Option<ContentType>,
    content: String,
    producer: String,
    produced_for: String,
    timestamp: super::episodic::Timestamp,
    role: String,
    #[serde(default)]
    metadata: serde_json::Map<String, serde_json::Value>,
}

impl EpisodeInput {
    /// The episode document, every field kept.
    fn doc(self) -> Result<EpisodeDoc, String> {
        use sha2::{Digest, Sha256};
        let timestamp = self.timestamp.millis()?;
        let metadata = serde_json::Value::Object(self.metadata).to_string();
        let episode_id = self.episode_id.unwrap_or_else(|| {
            let mut h = Sha256::new();
            for part in [
                self.session_id.as_bytes(),
                self.producer.as_bytes(),
                self.produced_for.as_bytes(),
                self.role.as_bytes(),
                timestamp.to_string().as_bytes(),
                self.content.as_bytes(),
            ] {
                h.update((part.len() as u64).to_be_bytes());
                h.update(part);
            }
            format!("ep_{}", &crate::hex::to_hex(&h.finalize())[..32])
        });
        Ok(EpisodeDoc {
            episode_id,
            session_id: self.session_id,
            project_id: self.project_id,
            episode_type: self.episode_type.unwrap_or(EpisodeType::Message),
            content_type: self.content_type.unwrap_or(ContentType::String),
            content: self.content,
            producer: self.producer,
            produced_for: self.produced_for,
            timestamp,
            role: self.role,
            metadata,
        })
    }
}

impl SourceEnvelope {
    /// The record time (ms) a line of `kind` gives, if any: its `timestamp`, except for an
    /// episode, whose `timestamp` is the message's.
    pub fn record_time(&self, kind: SourceKind) -> Result<Option<i64>, String> {
        match (&self.timestamp, kind) {
            (_, SourceKind::Episodes) | (None, _) => Ok(None),
            (Some(t), _) => t
                .as_i64()
                .map(Some)
                .ok_or_else(|| "timestamp is the record time in ms".to_owned()),
        }
    }

    /// The `source` op it describes, as a document of `kind` (unknown or missing fields are an
    /// error naming them).
    pub fn op(mut self, kind: SourceKind) -> Result<SourceOp, String> {
        if kind == SourceKind::Episodes
            && let Some(t) = self.timestamp.take()
        {
            self.doc.insert("timestamp".into(), t);
        }
        let fields = serde_json::Value::Object(self.doc);
        let doc = match kind {
            SourceKind::People => serde_json::from_value(fields).map(SourceDoc::Person),
            SourceKind::Conversations => {
                serde_json::from_value(fields).map(SourceDoc::Conversation)
            }
            SourceKind::Calendar => serde_json::from_value(fields).map(SourceDoc::Calendar),
            SourceKind::Screen => serde_json::from_value(fields).map(SourceDoc::Screen),
            SourceKind::Episodes => {
                let input: EpisodeInput =
                    serde_json::from_value(fields).map_err(|e| format!("not an episode: {e}"))?;
                return Ok(SourceOp {
                    doc: SourceDoc::Episode(input.doc()?),
                    visibility: self.visibility.unwrap_or(Visibility::Private),
                    acl: self.acl.unwrap_or_default(),
                });
            }
        }
        .map_err(|e| format!("not a {} document: {e}", kind.as_str()))?;
        Ok(SourceOp {
            doc,
            visibility: self.visibility.unwrap_or(Visibility::Private),
            acl: self.acl.unwrap_or_default(),
        })
    }
}

/// Declares the record of one source topic: a document of one kind with its owner, version
/// and access (the topic's value; the key is the account id).
macro_rules! source_message {
    ($(#[$meta:meta])* $name:ident, $doc:ident, $variant:ident, $kind:ident, $file:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// The owner's account, `{tenant_id}/{owner_kind}/{owner_id}` (the record key too).
            pub account_id: String,
            /// The document's version in its source system (≤64 chars): the same version
            /// sent again is a `duplicate` (without one, the content decides).
            #[serde(default)]
            pub version: Option<String>,
            /// cm_payload_v1 visibility (private by default: the owner's).
            #[serde(default = "private")]
            pub visibility: Visibility,
            /// Readers granted access to a confidential document.
            #[serde(default)]
            pub acl: Acl,
            /// The document.
            pub doc: $doc,
        }
        avro_record!($name {
            account_id,
            version,
            visibility,
            acl,
            doc
        });
        crate::avro::wire::record!($name, $file);

        impl $name {
            /// The source whose topic carries it.
            pub const SOURCE: SourceKind = SourceKind::$kind;

            /// Its account, version and the `source` op it puts.
            pub fn into_parts(self) -> (String, Option<String>, SourceOp) {
                let op = SourceOp {
                    doc: SourceDoc::$variant(self.doc),
                    visibility: self.visibility,
                    acl: self.acl,
                };
                (self.account_id, self.version, op)
            }
        }
    };
}

source_message!(
    /// A people document on `<prefix>.sources.people.v1`.
    PersonSource,
    PersonDoc,
    Person,
    People,
    "person_source.avsc"
);
source_message!(
    /// A conversation summary on `<prefix>.sources.conversations.v1`.
    ConversationSource,
    ConversationDoc,
    Conversation,
    Conversations,
    "conversation_source.avsc"
);
source_message!(
    /// A calendar event on `<prefix>.sources.calendar.v1`.
    CalendarSource,
    CalendarDoc,
    Calendar,
    Calendar,
    "calendar_source.avsc"
);
source_message!(
    /// A screen app/window span on `<prefix>.sources.screen.v1`.
    ScreenSource,
    ScreenDoc,
    Screen,
    Screen,
    "screen_source.avsc"
);
source_message!(
    /// A MemMachine episode on `<prefix>.sources.episodes.v1`.
    EpisodeSource,
    EpisodeDoc,
    Episode,
    Episodes,
    "episode_source.avsc"
);

/// A record read from `source`'s topic: its account, version and the `source` op it puts.
pub fn decode_source(
    source: SourceKind,
    bytes: &[u8],
    lookup: &dyn crate::avro::SchemaLookup,
) -> Result<(String, Option<String>, SourceOp), DecodeError> {
    use crate::avro::decode;
    Ok(match source {
        SourceKind::People => decode::<PersonSource>(bytes, lookup)?.into_parts(),
        SourceKind::Conversations => decode::<ConversationSource>(bytes, lookup)?.into_parts(),
        SourceKind::Calendar => decode::<CalendarSource>(bytes, lookup)?.into_parts(),
        SourceKind::Screen => decode::<ScreenSource>(bytes, lookup)?.into_parts(),
        SourceKind::Episodes => decode::<EpisodeSource>(bytes, lookup)?.into_parts(),
    })
}

/// The record that puts `op` into `account_id`'s ledger, for the topic of its document's
/// source (`op.doc.source()`), single-object encoded.
pub fn encode_source(account_id: &str, version: Option<&str>, op: &SourceOp) -> Vec<u8> {
    use crate::avro::encode_single_object;
    let (account_id, version) = (account_id.to_owned(), version.map(str::to_owned));
    let (visibility, acl) = (op.visibility, op.acl.clone());
    match op.doc.clone() {
        SourceDoc::Person(doc) => encode_single_object(&PersonSource {
            account_id,
            version,
            visibility,
            acl,
            doc,
        }),
        SourceDoc::Conversation(doc) => encode_single_object(&ConversationSource {
            account_id,
            version,
            visibility,
            acl,
            doc,
        }),
        SourceDoc::Calendar(doc) => encode_single_object(&CalendarSource {
            account_id,
            version,
            visibility,
            acl,
            doc,
        }),
        SourceDoc::Screen(doc) => encode_single_object(&ScreenSource {
            account_id,
            version,
            visibility,
            acl,
            doc,
        }),
        SourceDoc::Episode(doc) => encode_single_object(&EpisodeSource {
            account_id,
            version,
            visibility,
            acl,
            doc,
        }),
    }
}

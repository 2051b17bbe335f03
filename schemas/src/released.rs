//! Released schema versions, compiled in. Data written with any of them stays readable: the
//! compatibility tests check that each current schema reads every released version.
//! A release adds its files here and never edits an older one.

/// Every released `.avsc` (all records, all versions).
pub const ALL: &[&str] = &[
    include_str!("../avro/released/intent.v1.avsc"),
    include_str!("../avro/released/commit.v1.avsc"),
    include_str!("../avro/released/receipt.v1.avsc"),
    include_str!("../avro/released/view.v1.avsc"),
    // Wave 2: `Commit.continues` (purges split into bounded commits) and
    // `View.watchlist_truncated` (the watchlist fitted into the record budget).
    include_str!("../avro/released/commit.v2.avsc"),
    include_str!("../avro/released/view.v2.avsc"),
    // Rules v4 (erasure): `Row.sealed` (content encrypted under the row's data key) and
    // `Commit.keyed` (keyed ids and hashes, a head hash over content MACs).
    include_str!("../avro/released/commit.v3.avsc"),
    // Wave 3 (sources): the `source` op (`SourceOp` with the four source documents), the
    // source kinds of `Kind`, `WriteReason.source_sync` and `Row.record`.
    include_str!("../avro/released/intent.v2.avsc"),
    include_str!("../avro/released/commit.v4.avsc"),
    // Wave 3 (source topics): the record of each source's topic.
    include_str!("../avro/released/person_source.v1.avsc"),
    include_str!("../avro/released/conversation_source.v1.avsc"),
    include_str!("../avro/released/calendar_source.v1.avsc"),
    include_str!("../avro/released/screen_source.v1.avsc"),
    // Wave 3 (episodes): `EpisodeDoc` in the source documents' unions, `Kind.episode`, and the
    // episodes topic's record.
    include_str!("../avro/released/intent.v3.avsc"),
    include_str!("../avro/released/commit.v5.avsc"),
    include_str!("../avro/released/episode_source.v1.avsc"),
];

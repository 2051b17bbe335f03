//! BM25, the keyword provider: a text's terms (lowercased words, English stop words dropped,
//! Snowball-stemmed) as a sparse vector. A row's vector holds each term's saturated frequency,
//! `tf · (k1 + 1) / (tf + k1 · (1 − b + b · len / avg_len))`; a query's holds 1 per term; the
//! index multiplies each query term by its inverse document frequency over the collection
//! (Qdrant's sparse vectors with the `idf` modifier, on both backends), so a dot product is the
//! BM25 score `Σ idf(t) · tf-part(t, row)`.
//!
//! Term ids are a fixed 32-bit hash of the stem, so the same text gives the same vector on
//! every machine and a rebuilt collection equals the live one.

use qdrant_rust_stemmers::{Algorithm, Stemmer};

use crate::embed::{Sparse, WORDS_MAX};

/// BM25's term-frequency saturation.
pub const K1: f32 = 1.2;
/// BM25's length normalisation.
pub const B: f32 = 0.75;
/// The average row length in terms that lengths are normalised against: a one-line memory.
pub const AVG_TERMS: f32 = 6.0;

/// English stop words (the words a question and a row share without sharing meaning).
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "after",
    "again",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "been",
    "before",
    "being",
    "both",
    "but",
    "by",
    "can",
    "could",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "during",
    "each",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The BM25 term vectors of rows and queries.
#[derive(Debug, Clone, Copy)]
pub struct Bm25 {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation.
    pub b: f32,
    /// Average row length, terms.
    pub avg_terms: f32,
}

impl Default for Bm25 {
    fn default() -> Self {
        Self {
            k1: K1,
            b: B,
            avg_terms: AVG_TERMS,
        }
    }
}

/// FNV-1a, 32 bits: the term id of a stem.
fn term_id(stem: &str) -> u32 {
    let mut h = 0x811c_9dc5u32;
    for b in stem.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The terms of `text`: lowercased alphanumeric words, stop words dropped, stemmed (at most
/// [`WORDS_MAX`] words are read).
pub fn terms(text: &str) -> Vec<String> {
    let stemmer = Stemmer::create(Algorithm::English);
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(WORDS_MAX)
        .map(str::to_lowercase)
        .filter(|w| STOP_WORDS.binary_search(&w.as_str()).is_err())
        .map(|w| stemmer.stem(&w).into_owned())
        .collect()
}

/// Term ids and counts, ids strictly increasing.
fn counts(terms: &[String]) -> Vec<(u32, u32)> {
    let mut ids: Vec<u32> = terms.iter().map(|t| term_id(t)).collect();
    ids.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(ids.len());
    for id in ids {
        match out.last_mut() {
            Some((last, n)) if *last == id => *n += 1,
            _ => out.push((id, 1)),
        }
    }
    out
}

impl Bm25 {
    /// A row's vector: each term's saturated, length-normalised frequency.
    pub fn document(&self, text: &str) -> Sparse {
        let ts = terms(text);
        let len = ts.len() as f32;
        let norm = self.k1 * (1.0 - self.b + self.b * len / self.avg_terms);
        let mut s = Sparse::default();
        for (id, tf) in counts(&ts) {
            let tf = tf as f32;
            s.indices.push(id);
            s.values.push(tf * (self.k1 + 1.0) / (tf + norm));
        }
        s
    }

    /// A query's vector: 1 for each of its terms (the index weighs them by their IDF).
    pub fn query(&self, text: &str) -> Sparse {
        let mut s = Sparse::default();
        for (id, _) in counts(&terms(text)) {
            s.indices.push(id);
            s.values.push(1.0);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_the_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]), "{STOP_WORDS:?}");
    }

    #[test]
    fn terms_are_lowercased_stemmed_and_stop_words_dropped() {
        assert_eq!(terms("Where does she LIVE?"), vec!["live"]);
        assert_eq!(terms("Lives in Porto"), vec!["live", "porto"]);
        assert_eq!(terms("running runs"), vec!["run", "run"]);
        let q = Bm25::default().query("lives live porto");
        assert_eq!(q.indices.len(), 2);
        assert!(q.indices.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn frequency_saturates_and_long_rows_weigh_less() {
        let bm = Bm25::default();
        let once = bm.document("cello lessons weekly");
        let twice = bm.document("cello cello lessons");
        let id = term_id("cello");
        let at = |s: &Sparse| s.values[s.indices.iter().position(|i| *i == id).unwrap()];
        assert!(at(&twice) > at(&once));
        assert!(at(&twice) < 2.0 * at(&once));
        let long = bm.document("cello and many other words about music theory practice rooms");
        assert!(at(&long) < at(&once));
    }
}

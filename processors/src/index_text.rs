//! The text that stands for a row in the vector index, and for a question asked of it: what
//! the dense embedder embeds and what BM25 counts. Measured on the retrieval set
//! (`testkit/data/retrieval`, `cargo bench -p kledger-testkit --bench retrieval`); each part
//! below is there because it moved recall@5 there.
//!
//! - **A row** is its one-line content, then its tags in parentheses (an extractor's
//!   categories: "pets", "health"; they answer the questions that ask by kind of thing, "what
//!   pets does she have?"), then a document's body (the steps a playbook question names). A
//!   trigger's condition is structured data, not text, and is left out.
//! - **Pronouns of the account's person** (`she`, `her`, `he`, `his`, …) are dropped from the
//!   dense text of rows and questions alike. Every row of an account is about its person; a
//!   pronoun names no one else, and the model weighs it heavily, so rows that say "her" ("Calls
//!   her mother every Sunday", "Remind her to …") came near every question that does. A third
//!   party is named in the text (`Sister Ana …`), which stays. BM25 drops them as stop words
//!   already.
//!
//! The recipe has a version ([`VERSION`]): a vector generation records the one it was built
//! with, and a changed recipe takes effect with `kledger rebuild qdrant`, as a changed model
//! does.
//!
//! May not touch: anything but its arguments (pure).

use kledger_schemas::Row;

/// The recipe's version, recorded with a vector generation's embedder.
pub const VERSION: u32 = 2;

/// Third-person pronouns dropped from dense texts (lowercase).
const PRONOUNS: &[&str] = &[
    "he", "he's", "her", "hers", "herself", "him", "himself", "his", "she", "she's",
];

/// `text` without the account person's pronouns (words compared case-insensitively, with
/// their punctuation; the other words and their spacing kept).
pub fn without_pronouns(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(' ') {
        let bare: String = word
            .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_lowercase();
        if PRONOUNS.contains(&bare.as_str()) {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// What the dense embedder embeds for `row`: content, tags, a document's body, without the
/// account person's pronouns.
pub fn dense(row: &Row) -> String {
    let mut t = row.content.clone();
    if !row.tags.is_empty() {
        t.push_str(" (");
        t.push_str(&row.tags.join(", "));
        t.push(')');
    }
    if let Some(body) = row.body.as_deref().filter(|b| !b.is_empty()) {
        t.push_str(". ");
        t.push_str(body);
    }
    without_pronouns(&t)
}

/// What BM25 counts for `row`: content, tags and a document's body.
pub fn keyword(row: &Row) -> String {
    let mut t = row.content.clone();
    for tag in &row.tags {
        t.push(' ');
        t.push_str(tag);
    }
    if let Some(body) = row.body.as_deref() {
        t.push(' ');
        t.push_str(body);
    }
    t
}

/// What the dense embedder embeds for a question.
pub fn query(q: &str) -> String {
    without_pronouns(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pronouns_go_names_stay() {
        assert_eq!(without_pronouns("is she a night owl?"), "is a night owl?");
        assert_eq!(
            without_pronouns("Calls her mother every Sunday; His sister Ana, HER."),
            "Calls mother every Sunday; sister Ana,"
        );
        assert_eq!(
            without_pronouns("Hermione helps Sheila"),
            "Hermione helps Sheila"
        );
        assert_eq!(without_pronouns(""), "");
    }

    #[test]
    fn a_row_is_content_tags_and_body() {
        let mut r = crate::testrow();
        r.content = "Checklist for her car".into();
        r.tags = vec!["playbook".into(), "car".into()];
        r.body = Some("Check his tyres monthly".into());
        assert_eq!(
            dense(&r),
            "Checklist for car (playbook, car). Check tyres monthly"
        );
        assert_eq!(
            keyword(&r),
            "Checklist for her car playbook car Check his tyres monthly"
        );
        r.tags.clear();
        r.body = None;
        assert_eq!(dense(&r), "Checklist for car");
        assert_eq!(keyword(&r), "Checklist for her car");
    }
}

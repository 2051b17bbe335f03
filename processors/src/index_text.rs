//! The text that stands for a row in the vector index, and for a question asked of it: what
//! the dense embedder embeds and what BM25 counts. Measured on the conversation set
//! (`testkit/data/conversations`: multi-session chats, raw turns and extracted facts; `cargo
//! bench -p kledger-testkit --bench conversations`) and the retrieval set
//! (`testkit/data/retrieval`, `--bench retrieval`); each part below is there because it moved
//! recall@5 on their dev splits.
//!
//! - **A row** is its one-line content, then its effective date in words (`(6 May 2023)`: a
//!   chat turn's "last Tuesday" means nothing without the day it was said, and questions ask
//!   "what did she do in May 2023?"; +0.033 recall@5 on the turns' dev split, +0.013 on the
//!   facts'), then its tags in parentheses (an extractor's categories: "pets", "health"; they
//!   answer the questions that ask by kind of thing, "what pets does she have?"), then a
//!   document's body (the steps a playbook question names). A trigger's condition is
//!   structured data, not text, and is left out.
//! - **Pronouns of the account's person** (`she`, `her`, `he`, `his`, …) are dropped from the
//!   dense text of rows and questions alike. Every row of an account is about its person; a
//!   pronoun names no one else, and the model weighs it heavily, so rows that say "her" ("Calls
//!   her mother every Sunday", "Remind her to …") came near every question that does. A third
//!   party is named in the text (`Sister Ana …`), which stays. BM25 drops them as stop words
//!   already.
//! - **A question's names** ([`query_nameless`]): the small model weighs a name heavily too, so
//!   a question naming someone ("what breed is Maya's puppy?") comes near every turn that
//!   person said ("Maya: haha, same"), and a question naming the wrong person finds nothing
//!   of the right one. search_knowledge embeds the question also without its names and fuses
//!   both dense lists with BM25, which matches names exactly
//!   (`kledger_serve::api::search::Fusion`).
//!
//! The recipe has a version ([`VERSION`]): a vector generation records the one it was built
//! with, and a changed recipe takes effect with `kledger rebuild qdrant`, as a changed model
//! does.
//!
//! May not touch: anything but its arguments (pure).

use kledger_schemas::Row;

/// The recipe's version, recorded with a vector generation's embedder.
pub const VERSION: u32 = 3;

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

/// A time as the date in words, in UTC (`6 May 2023`; empty outside chrono's range).
pub fn date_words(ms: i64) -> String {
    use chrono::Datelike;
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => format!("{} {} {}", t.day(), MONTHS[t.month0() as usize], t.year()),
        None => String::new(),
    }
}

/// What the dense embedder embeds for `row`: content, effective date, tags, a document's
/// body, without the account person's pronouns.
pub fn dense(row: &Row) -> String {
    let mut t = row.content.clone();
    let date = date_words(row.valid_from);
    if !date.is_empty() {
        t.push_str(" (");
        t.push_str(&date);
        t.push(')');
    }
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

/// `q` without its names: the capitalised words after the first (with their punctuation and
/// possessive), except all-capital ones (`I`, `NYC`).
pub fn without_names(q: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for (i, w) in q.split(' ').enumerate() {
        let bare = w.trim_matches(|c: char| !c.is_alphanumeric());
        let capitalised = bare.chars().next().is_some_and(char::is_uppercase)
            && !bare.chars().all(|c| !c.is_lowercase());
        if i > 0 && capitalised {
            continue;
        }
        out.push(w);
    }
    out.join(" ")
}

/// What BM25 counts for `row`: content, effective date, tags and a document's body.
pub fn keyword(row: &Row) -> String {
    let mut t = row.content.clone();
    let date = date_words(row.valid_from);
    if !date.is_empty() {
        t.push(' ');
        t.push_str(&date);
    }
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

/// What the dense embedder embeds for a question without its names, when it has any (else
/// none).
pub fn query_nameless(q: &str) -> Option<String> {
    let nameless = without_names(q);
    (nameless != q).then(|| without_pronouns(&nameless))
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
    fn a_row_is_content_date_tags_and_body() {
        let mut r = crate::testrow();
        assert_eq!(r.valid_from, 1_767_600_000_000);
        r.content = "Checklist for her car".into();
        r.tags = vec!["playbook".into(), "car".into()];
        r.body = Some("Check his tyres monthly".into());
        assert_eq!(
            dense(&r),
            "Checklist for car (5 January 2026) (playbook, car). Check tyres monthly"
        );
        assert_eq!(
            keyword(&r),
            "Checklist for her car 5 January 2026 playbook car Check his tyres monthly"
        );
        r.tags.clear();
        r.body = None;
        assert_eq!(dense(&r), "Checklist for car (5 January 2026)");
        assert_eq!(keyword(&r), "Checklist for her car 5 January 2026");
        // Out of the calendar's range: no date.
        r.valid_from = i64::MAX;
        assert_eq!(dense(&r), "Checklist for car");
        assert_eq!(keyword(&r), "Checklist for her car");
    }

    #[test]
    fn dates_in_words() {
        assert_eq!(date_words(0), "1 January 1970");
        assert_eq!(date_words(1_683_331_200_000), "6 May 2023");
        assert_eq!(date_words(-86_400_000), "31 December 1969");
        assert_eq!(date_words(i64::MIN), "");
    }

    #[test]
    fn a_question_without_its_names() {
        assert_eq!(
            without_names("What breed is Maya's puppy?"),
            "What breed is puppy?"
        );
        assert_eq!(
            query_nameless("When did Leo move to Porto?").as_deref(),
            Some("When did move to")
        );
        // The first word, all-capital words (I, NYC) and lowercase words stay.
        assert_eq!(
            without_names("Maya said I love NYC, right?"),
            "Maya said I love NYC, right?"
        );
        assert_eq!(query_nameless("where does she live"), None);
        assert_eq!(query_nameless(""), None);
        // Pronouns go too, as in the query as asked.
        assert_eq!(
            query_nameless("what did she tell Ana?").as_deref(),
            Some("what did tell")
        );
    }
}

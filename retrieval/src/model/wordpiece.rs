//! BERT's uncased WordPiece tokenizer, as Hugging Face's `BertNormalizer` +
//! `BertPreTokenizer` + `WordPiece` run it for all-MiniLM-L6-v2: clean the text (drop NUL,
//! U+FFFD and control characters, whitespace to spaces), put spaces around CJK ideographs, strip
//! accents (NFD, then drop combining marks), lowercase, split on whitespace and punctuation,
//! then greedy longest-match WordPiece with `##` continuations; a word of more than 100
//! characters, or one no piece sequence covers, is `[UNK]`. The output is `[CLS] … [SEP]`,
//! truncated to a maximum length. Checked against the `tokenizers` library's ids
//! (`processors/tests/golden/minilm_tokens.json`).

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::ModelError;

/// Characters of a word WordPiece splits at most (longer words are `[UNK]`).
const WORD_CHARS_MAX: usize = 100;

/// A WordPiece vocabulary and its special tokens.
#[derive(Debug, Clone)]
pub struct WordPiece {
    ids: HashMap<String, u32>,
    unk: u32,
    cls: u32,
    sep: u32,
}

impl WordPiece {
    /// The vocabulary of a `vocab.txt` (one token per line, id = line number).
    pub fn from_vocab(vocab: &str) -> Result<Self, ModelError> {
        let ids: HashMap<String, u32> = vocab
            .lines()
            .enumerate()
            .map(|(i, t)| (t.to_owned(), i as u32))
            .collect();
        let special = |t: &str| {
            ids.get(t)
                .copied()
                .ok_or_else(|| ModelError::Vocab(format!("no {t} token")))
        };
        Ok(Self {
            unk: special("[UNK]")?,
            cls: special("[CLS]")?,
            sep: special("[SEP]")?,
            ids,
        })
    }

    /// Tokens in the vocabulary.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the vocabulary is empty (never, once loaded).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The ids of `text`: `[CLS]`, its word pieces (at most `len_max - 2`), `[SEP]`.
    pub fn encode(&self, text: &str, len_max: usize) -> Vec<u32> {
        let pieces_max = len_max.saturating_sub(2);
        let mut out = Vec::with_capacity(16);
        out.push(self.cls);
        for word in words(&normalize(text)) {
            if out.len() > pieces_max {
                break;
            }
            self.word_pieces(&word, &mut out);
        }
        out.truncate(pieces_max + 1);
        out.push(self.sep);
        out
    }

    /// Appends the pieces of one word (or `[UNK]`).
    fn word_pieces(&self, word: &str, out: &mut Vec<u32>) {
        if word.chars().count() > WORD_CHARS_MAX {
            out.push(self.unk);
            return;
        }
        let start_len = out.len();
        let mut start = 0;
        let mut piece = String::with_capacity(word.len() + 2);
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.push_str(&word[start..end]);
                if let Some(id) = self.ids.get(piece.as_str()) {
                    found = Some(*id);
                    break;
                }
                // The previous char boundary.
                end = word[..end]
                    .char_indices()
                    .next_back()
                    .map_or(start, |(i, _)| i);
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(start_len);
                    out.push(self.unk);
                    return;
                }
            }
        }
    }
}

fn is_control(c: char) -> bool {
    // Tab, newline and carriage return count as whitespace.
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    // Cc, and the format characters (Cf) text carries: soft hyphen, zero-width and
    // direction marks, word joiners, the byte-order mark.
    c.is_control()
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// Punctuation as BERT splits it: ASCII symbols and punctuation, and the Unicode punctuation
/// blocks (general, supplemental and CJK punctuation, Latin-1's and the typographic marks).
fn is_punctuation(c: char) -> bool {
    let u = c as u32;
    (33..=47).contains(&u)
        || (58..=64).contains(&u)
        || (91..=96).contains(&u)
        || (123..=126).contains(&u)
        || matches!(
            c,
            '¡' | '§' | '«' | '¶' | '·' | '»' | '¿' | '\u{37e}' | '\u{387}' | '\u{2010}'..='\u{2027}'
                | '\u{2030}'..='\u{205e}'
                | '\u{2e00}'..='\u{2e4f}'
                | '\u{3001}'..='\u{3003}'
                | '\u{3008}'..='\u{3011}'
                | '\u{3014}'..='\u{301f}'
                | '\u{ff01}'..='\u{ff0f}'
                | '\u{ff1a}'..='\u{ff20}'
        )
}

/// Cleaned, CJK-spaced, accent-stripped, lowercased text.
fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if c.is_whitespace() {
            cleaned.push(' ');
        } else if is_cjk(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    cleaned
        .nfd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whitespace-separated words, each punctuation character a word of its own.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for chunk in text.split_whitespace() {
        let mut word = String::new();
        for c in chunk.chars() {
            if is_punctuation(c) {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                out.push(c.to_string());
            } else {
                word.push(c);
            }
        }
        if !word.is_empty() {
            out.push(word);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> WordPiece {
        WordPiece::from_vocab("[PAD]\n[UNK]\n[CLS]\n[SEP]\nlive\n##s\nin\nporto\n,\ncafe\n")
            .unwrap()
    }

    #[test]
    fn pieces_punctuation_accents_and_unknowns() {
        let v = vocab();
        assert_eq!(v.encode("Lives in Porto", 16), vec![2, 4, 5, 6, 7, 3]);
        assert_eq!(v.encode("café,porto", 16), vec![2, 9, 8, 7, 3]);
        assert_eq!(v.encode("zebra", 16), vec![2, 1, 3]);
        assert_eq!(v.encode("", 16), vec![2, 3]);
        // Truncated to the length, [SEP] kept.
        assert_eq!(v.encode("in in in in", 4), vec![2, 6, 6, 3]);
    }
}

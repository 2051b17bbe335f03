//! Reading JSON-lines input with a bound on each line, so one endless line cannot exhaust
//! memory (`kledger apply`, `kledger publish`). No other module state.

use std::io::BufRead;

/// Reads one line of at most `max` bytes into `buf` (without the newline). Returns `None` at
/// the end of input, `Some(false)` when the line was longer (the rest is skipped).
pub fn read_line_bounded(
    r: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut fits = true;
    let mut any = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(fits));
        }
        any = true;
        let (part, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if fits && buf.len() + part.len() <= max {
            buf.extend_from_slice(part);
        } else {
            fits = false;
            buf.clear();
        }
        let used = end.unwrap_or(chunk.len());
        r.consume(used);
        if end.is_some() {
            return Ok(Some(fits));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &str, max: usize) -> Vec<(String, bool)> {
        let mut r = std::io::BufReader::with_capacity(3, input.as_bytes());
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(fits) = read_line_bounded(&mut r, &mut buf, max).unwrap() {
            out.push((String::from_utf8(buf.clone()).unwrap(), !fits));
        }
        out
    }

    #[test]
    fn a_line_at_the_bound_is_kept_and_one_past_it_is_cut() {
        let got = lines("abcd\nabcde\n\nxy", 4);
        assert_eq!(
            got,
            vec![
                ("abcd".to_owned(), false),
                (String::new(), true),
                (String::new(), false),
                ("xy".to_owned(), false),
            ]
        );
    }
}

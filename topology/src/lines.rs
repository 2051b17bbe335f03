//! Reading JSON-lines input with a bound on each line, so one endless line cannot exhaust
//! memory (`kledger apply`, `kledger publish`). No other module state.

use std::io::BufRead;

/// Reads one line of at most `max` bytes into `buf` (a longer line is consumed to its end but
/// not kept: `Ok(Some(true))`). `Ok(None)` at the end of the input.
pub fn read_bounded(
    input: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(too_long));
        }
        any = true;
        let (line, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1),
            None => (chunk, chunk.len()),
        };
        if !too_long && buf.len() + line.len() <= max {
            buf.extend_from_slice(line);
        } else {
            too_long = true;
            buf.clear();
        }
        let ended = done > line.len();
        input.consume(done);
        if ended {
            return Ok(Some(too_long));
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
        while let Some(too_long) = read_bounded(&mut r, &mut buf, max).unwrap() {
            out.push((String::from_utf8(buf.clone()).unwrap(), too_long));
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

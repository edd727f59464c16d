//! Reading JSONL input line by line with a bound on line length, so a
//! hostile or broken file can never make the host buffer unbounded memory.

use std::io::{self, BufRead};

/// Longest line read whole; longer lines are skipped and reported.
pub const LINE_BYTES_MAX: usize = 16 * 1024 * 1024;

/// How much input `Room::run_lines` reads at a time: its events are flushed
/// once per such batch (and whenever the input has nothing more ready).
pub const INPUT_BUFFER_BYTES: usize = 64 * 1024;

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line's text (without the newline). Not necessarily UTF-8.
    Bytes(Vec<u8>),
    /// A line longer than the bound; its length in bytes.
    TooLong(usize),
}

/// Reads lines, each at most `max` bytes long.
pub struct Lines<R> {
    reader: R,
    max: usize,
    /// A line's bytes given back by the caller, reused for the next one.
    spare: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    /// Wraps a reader.
    pub fn new(reader: R, max: usize) -> Self {
        Lines {
            reader,
            max,
            spare: Vec::new(),
        }
    }

    /// The next line, or `None` at end of input.
    ///
    /// # Errors
    /// An I/O error from the reader.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut buf = std::mem::take(&mut self.spare);
        buf.clear();
        let mut len = 0usize;
        let mut any = false;
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (part, found_newline) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (&chunk[..i], true),
                None => (chunk, false),
            };
            len += part.len();
            if len <= self.max {
                buf.extend_from_slice(part);
            } else {
                buf = Vec::new();
            }
            let used = part.len() + usize::from(found_newline);
            self.reader.consume(used);
            if found_newline {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        if len > self.max {
            return Ok(Some(Line::TooLong(len)));
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(Some(Line::Bytes(buf)))
    }
}

impl<R> Lines<R> {
    /// Gives a line back once used, so the next one reuses its memory.
    pub fn recycle(&mut self, line: Line) {
        if let Line::Bytes(bytes) = line {
            if bytes.capacity() <= RECYCLE_BYTES_MAX {
                self.spare = bytes;
            }
        }
    }
}

/// Largest line buffer kept for reuse (a rare huge line is not kept).
const RECYCLE_BYTES_MAX: usize = 64 * 1024;

impl<R: io::Read> Lines<io::BufReader<R>> {
    /// Whether a whole line is already read and waiting: otherwise the next
    /// line needs a read that may wait for the input. (The search stops at
    /// the first newline, one line's length away.)
    pub fn line_ready(&self) -> bool {
        self.reader.buffer().contains(&b'\n')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_lines_and_bounds_length() {
        let input = b"ab\r\n\nxxxxxxxxxx\nlast";
        let mut lines = Lines::new(&input[..], 5);
        assert_eq!(
            lines.next_line().ok().flatten(),
            Some(Line::Bytes(b"ab".to_vec()))
        );
        assert_eq!(
            lines.next_line().ok().flatten(),
            Some(Line::Bytes(Vec::new()))
        );
        assert_eq!(lines.next_line().ok().flatten(), Some(Line::TooLong(10)));
        assert_eq!(
            lines.next_line().ok().flatten(),
            Some(Line::Bytes(b"last".to_vec()))
        );
        assert_eq!(lines.next_line().ok().flatten(), None);
    }
}

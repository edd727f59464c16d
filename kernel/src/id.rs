//! Identifiers: the bottom floor every other module may use — and how an
//! id is found inside free text (docs/observations.md, Text a game
//! writes).
//!
//! Any non-empty string may be an id. In text, an id is found as whole
//! *units* — a unit is a run of word characters (letters, digits, `_`)
//! or any single other character — the leftmost first and, of those
//! starting there, the longest. So `card_1` is not found in `card_10` or
//! `xcard_1` (one word each) but is in `"card_1".`, `play:card_1` or
//! `(card_1)`; and an id of several units (`card-1`, `ace of spades`) is
//! found whole before any shorter id inside it.

use std::sync::Arc;

/// A shared, cheaply cloned identifier (player, seat, entity, stack, …).
pub type Id = Arc<str>;

/// Whether `c` continues a word: a letter, a digit or `_`.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Where the unit that starts at byte `at` of `text` ends: after a run of
/// word characters, or after one other character.
fn unit_end(text: &str, at: usize) -> usize {
    let Some(rest) = text.get(at..) else {
        return text.len();
    };
    let mut chars = rest.char_indices();
    match chars.next() {
        None => text.len(),
        Some((_, c)) if !is_word(c) => at + c.len_utf8(),
        Some(_) => chars
            .find(|(_, c)| !is_word(*c))
            .map_or(text.len(), |(i, _)| at + i),
    }
}

/// How many units `id` reads as.
pub(crate) fn id_units(id: &str) -> usize {
    let (mut n, mut at) = (0, 0);
    while at < id.len() {
        at = unit_end(id, at);
        n += 1;
    }
    n
}

/// Finds the ids in `text`, leftmost first and of those the longest, with
/// spans of at most `most` units: `id` says whether a span is one (and
/// what of it), `hit` receives each found with its byte range.
pub(crate) fn find_ids<T>(
    text: &str,
    most: usize,
    mut id: impl FnMut(&str) -> Option<T>,
    mut hit: impl FnMut(usize, usize, T),
) {
    let most = most.max(1);
    let mut ends: Vec<usize> = Vec::with_capacity(most.min(16));
    let mut at = 0;
    while at < text.len() {
        ends.clear();
        let mut end = at;
        while ends.len() < most && end < text.len() {
            end = unit_end(text, end);
            ends.push(end);
        }
        let found = ends
            .iter()
            .rev()
            .find_map(|&e| text.get(at..e).and_then(&mut id).map(|t| (e, t)));
        match found {
            Some((e, t)) => {
                hit(at, e, t);
                at = e;
            }
            None => at = ends.first().copied().unwrap_or(text.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{find_ids, id_units};

    fn found(text: &str, ids: &[&str]) -> Vec<String> {
        let most = ids.iter().map(|i| id_units(i)).max().unwrap_or(1);
        let mut out = Vec::new();
        find_ids(
            text,
            most,
            |span| ids.contains(&span).then_some(()),
            |s, e, ()| out.push(text[s..e].to_owned()),
        );
        out
    }

    #[test]
    fn an_id_is_found_as_whole_units_leftmost_then_longest() {
        let ids = ["card_1", "card_10", "c-1", "ace of spades", "ace"];
        assert_eq!(found("take card_10", &ids), ["card_10"]);
        assert_eq!(found("take card_100", &ids), Vec::<String>::new());
        assert_eq!(found("\"card_1\".", &ids), ["card_1"]);
        assert_eq!(found("play:card_1,(card_10)", &ids), ["card_1", "card_10"]);
        assert_eq!(found("xcard_1 card_1x", &ids), Vec::<String>::new());
        assert_eq!(found("c-1 c-10 c-1.", &ids), ["c-1", "c-1"]);
        assert_eq!(
            found("the ace of spades, an ace", &ids),
            ["ace of spades", "ace"]
        );
        assert_eq!(found("carte_1 é card_1é", &ids), Vec::<String>::new());
        assert_eq!(id_units("ace of spades"), 5);
        assert_eq!(id_units("card_1"), 1);
        assert_eq!(id_units(""), 0);
    }
}

//! Text as a viewer may read it (docs/observations.md, Text a game
//! writes): the one rule for every string a game writes that reaches a
//! seat or a spectator — a guard's reason, a prompt, a text on the table,
//! a prop, the answer of a view or match function — and for the words of
//! the kernel's own messages. Every entity id in it names the entity as
//! the viewer sees it: its id when it sees the entity fully, else the
//! alias it sees it under, else `?`.
//!
//! How an id is found in free text is `id.rs`'s rule (`find_ids`): whole
//! units, leftmost first, then longest, looking ahead as many units as
//! the room's longest entity id has (`State::id_units`) — so the cost is
//! that many hash lookups per unit of text, whatever the number of
//! entities.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::{Sight, Viewer};
use crate::entity::Exposure;
use crate::event::EventKind;
use crate::id::{find_ids, Id};
use crate::state::State;
use crate::value::Value;

/// Whether data key `key` of an event of this kind holds free text —
/// the game's (a prompt's question, choices and default, an answer, a
/// text, a die's face, a sensing tool's input and answer, why a match was
/// aborted) or the kernel's (a rejection's message): its ids are read as
/// the viewer sees them, judged as the event happened.
pub(crate) fn is_text_key(kind: &EventKind, key: &str) -> bool {
    use EventKind as K;
    matches!(
        (kind, key),
        (K::PromptCreated { .. }, "title" | "choices" | "default")
            | (K::PromptResponded { .. }, "response")
            | (K::TextChanged { .. } | K::DieRolled { .. }, "value")
            | (K::MatchSensed { .. }, "input" | "answer")
            | (K::MatchAborted { .. }, "reason")
            | (K::ActionRejected { .. }, "message")
    )
}

/// How one viewer reads text: judged by the state, or — for an event —
/// first by how the entities it named could be seen when it happened.
pub(crate) struct Reader<'s> {
    state: &'s State,
    viewer: &'s Viewer,
    seen: Option<&'s [(Id, Exposure)]>,
}

impl<'s> Reader<'s> {
    pub(crate) fn new(
        state: &'s State,
        viewer: &'s Viewer,
        seen: Option<&'s [(Id, Exposure)]>,
    ) -> Self {
        Reader {
            state,
            viewer,
            seen,
        }
    }

    /// How the viewer sees the entity `id` (`None`: no such entity).
    fn sight(&self, id: &str) -> Option<Sight> {
        let then = self
            .seen
            .and_then(|seen| seen.iter().find(|(s, _)| **s == *id));
        match then {
            Some((_, x)) => Some(x.sight(self.viewer)),
            None => self.state.sight_of(id, self.viewer),
        }
    }

    /// `text` with every entity id in it as the viewer sees the entity.
    pub(crate) fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if *self.viewer == Viewer::Referee || text.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out: Option<String> = None;
        let mut copied = 0;
        find_ids(
            text,
            self.state.id_units,
            |span| self.sight(span),
            |start, end, sight| {
                let shown = match sight {
                    Sight::Known => return,
                    Sight::Alias(a) => Cow::Owned(a),
                    Sight::Unlisted => Cow::Borrowed("?"),
                };
                let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                o.push_str(text.get(copied..start).unwrap_or_default());
                o.push_str(&shown);
                copied = end;
            },
        );
        match out {
            None => Cow::Borrowed(text),
            Some(mut o) => {
                o.push_str(text.get(copied..).unwrap_or_default());
                Cow::Owned(o)
            }
        }
    }

    /// Every string of `v` (object keys included) read as [`Reader::text`].
    /// Two keys that read the same keep the entry whose value is first in
    /// canonical order: which one stays says nothing of the real ids.
    pub(crate) fn value(&self, v: &mut Value) {
        if *self.viewer == Viewer::Referee {
            return;
        }
        match v {
            Value::String(s) => {
                if let Cow::Owned(t) = self.text(s) {
                    *s = t;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|x| self.value(x)),
            Value::Object(m) => {
                if m.keys().all(|k| matches!(self.text(k), Cow::Borrowed(_))) {
                    m.values_mut().for_each(|x| self.value(x));
                    return;
                }
                let mut out: BTreeMap<String, Value> = BTreeMap::new();
                for (k, mut x) in std::mem::take(m) {
                    self.value(&mut x);
                    let k = self.text(&k).into_owned();
                    keep_first(&mut out, k, x, |a, b| {
                        a.to_canonical_json().cmp(&b.to_canonical_json())
                    });
                }
                *m = out;
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// [`Reader::value`] for a JSON value.
    pub(crate) fn json(&self, v: &mut serde_json::Value) {
        use serde_json::Value as Json;
        if *self.viewer == Viewer::Referee {
            return;
        }
        match v {
            Json::String(s) => {
                if let Cow::Owned(t) = self.text(s) {
                    *s = t;
                }
            }
            Json::Array(items) => items.iter_mut().for_each(|x| self.json(x)),
            Json::Object(m) => {
                if m.keys().all(|k| matches!(self.text(k), Cow::Borrowed(_))) {
                    m.values_mut().for_each(|x| self.json(x));
                    return;
                }
                let mut out: BTreeMap<String, Json> = BTreeMap::new();
                for (k, mut x) in std::mem::take(m) {
                    self.json(&mut x);
                    let k = self.text(&k).into_owned();
                    keep_first(&mut out, k, x, |a, b| a.to_string().cmp(&b.to_string()));
                }
                *m = out.into_iter().collect();
            }
            Json::Null | Json::Bool(_) | Json::Number(_) => {}
        }
    }

    /// A kernel message (a rejection's) as the viewer may read it: every
    /// quoted name that is not the id of an entity it fully sees, nor of
    /// a prompt addressed to the player in its seat, becomes `?` (the
    /// alias, for an entity it sees under one) — a made-up name and a
    /// hidden card's id read the same — and the words outside quotes are
    /// read as [`Reader::text`].
    pub(crate) fn message(&self, message: &str) -> String {
        let mut out = String::with_capacity(message.len());
        for (i, part) in message.split('"').enumerate() {
            if i > 0 {
                out.push('"');
            }
            if i % 2 == 0 {
                out.push_str(&self.text(part));
                continue;
            }
            match self.sight(part) {
                Some(Sight::Known) => out.push_str(part),
                Some(Sight::Alias(a)) => out.push_str(&a),
                None if self.own_prompt(part) => out.push_str(part),
                Some(Sight::Unlisted) | None => out.push('?'),
            }
        }
        out
    }

    /// Whether `id` names a prompt, open or not, addressed to the player
    /// in the viewer's seat (its own question: the seat saw it asked).
    fn own_prompt(&self, id: &str) -> bool {
        let player = self.state.seated(self.viewer);
        self.state
            .prompts
            .get(id)
            .is_some_and(|p| Some(&p.player_id) == player)
    }
}

/// Inserts `(k, x)` into `out`; when `k` is there already, the value that
/// `cmp` puts first stays.
fn keep_first<T>(out: &mut BTreeMap<String, T>, k: String, x: T, cmp: impl Fn(&T, &T) -> Ordering) {
    match out.entry(k) {
        std::collections::btree_map::Entry::Vacant(e) => {
            e.insert(x);
        }
        std::collections::btree_map::Entry::Occupied(mut e) => {
            if cmp(&x, e.get()) == Ordering::Less {
                e.insert(x);
            }
        }
    }
}

impl State {
    /// `text` — a game's, written for `viewer` — as the viewer may read
    /// it: every entity id in it (found as docs/observations.md, Text a
    /// game writes, says) as the viewer sees that entity — its id, its
    /// alias, or `?`. The referee reads it as it is.
    pub fn scrub_text<'t>(&self, text: &'t str, viewer: &Viewer) -> Cow<'t, str> {
        Reader::new(self, viewer, None).text(text)
    }

    /// Every string of `value` (object keys included) as
    /// [`State::scrub_text`] reads it.
    pub fn scrub_value(&self, value: &mut Value, viewer: &Viewer) {
        Reader::new(self, viewer, None).value(value);
    }

    /// [`State::scrub_value`] for a JSON value.
    pub fn scrub_json(&self, value: &mut serde_json::Value, viewer: &Viewer) {
        Reader::new(self, viewer, None).json(value);
    }

    /// Calls `found` with each entity id (live, or destroyed by the last
    /// action) found in `text`.
    pub(crate) fn ids_in(&self, text: &str, found: &mut dyn FnMut(&str)) {
        find_ids(
            text,
            self.id_units,
            |span| self.sight_of(span, &Viewer::Referee),
            |start, end, _| found(text.get(start..end).unwrap_or_default()),
        );
    }

    /// [`State::ids_in`] over every string of `v`, object keys included.
    pub(crate) fn ids_in_value(&self, v: &Value, found: &mut dyn FnMut(&str)) {
        match v {
            Value::String(s) => self.ids_in(s, found),
            Value::Array(items) => items.iter().for_each(|x| self.ids_in_value(x, found)),
            Value::Object(m) => m.iter().for_each(|(k, x)| {
                self.ids_in(k, found);
                self.ids_in_value(x, found);
            }),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

//! Each event as a viewer may see it (docs/observations.md, The events a
//! viewer sees).

use std::borrow::Cow;

use super::text::{is_text_key, Reader};
use super::{opens, Sight, Viewer};
use crate::event::{Event, EventKind, Field};
use crate::id::Id;
use crate::reject::RejectCode;
use crate::state::State;
use crate::value::{write_string, Value};

impl State {
    /// Writes `event` as `viewer` may see it — one JSONL line without the
    /// newline — judged as it happened (its `seen`), or by the state after
    /// its action when it keeps none (docs/observations.md, The events a
    /// viewer sees). Returns false, writing nothing, when the viewer gets
    /// none of it.
    pub fn write_event_for(&self, event: &Event, viewer: &Viewer, out: &mut String) -> bool {
        if *viewer == Viewer::Referee {
            event.write_json_line(out);
            return true;
        }
        let kind = &event.kind;
        match kind {
            EventKind::PromptCreated { player_id, .. }
            | EventKind::PromptResponded { player_id, .. }
            | EventKind::PromptCanceled { player_id, .. }
                if self.seated(viewer) != Some(player_id) =>
            {
                return false
            }
            EventKind::MatchSensed { seat, .. } if viewer.seat() != Some(seat) => return false,
            EventKind::TimerRegistered { .. }
            | EventKind::TimerCanceled { .. }
            | EventKind::TimerFired { .. } => return false,
            _ => {}
        }
        // (key, whether it names entities, the value as seen)
        let mut data: Vec<(&'static str, bool, Shown<'_>)> = Vec::with_capacity(8);
        let mut unseen = false;
        kind.fields(&mut |key, field| {
            let names = kind.is_entity_key(key);
            let shown = match field {
                Field::Str(id) if names => {
                    let (shown, known) = shown_id(self, event, id, viewer);
                    unseen |= !known;
                    shown.map_or(Shown::Field(Field::Null), Shown::Text)
                }
                Field::Ids(ids) if names => Shown::Ids(
                    ids.iter()
                        .map(|id| {
                            let (shown, known) = shown_id(self, event, id, viewer);
                            unseen |= !known;
                            shown
                        })
                        .collect(),
                ),
                other => Shown::Field(other),
            };
            data.push((key, names, shown));
        });
        let reader = Reader::new(self, viewer, event.seen.as_deref());
        for (key, names, shown) in &mut data {
            let keep = match kind {
                EventKind::ActionRejected { rejection, .. } => match *key {
                    "actionType" | "code" => true,
                    // A script's error or a guard's reason is the game's
                    // own text: it may say anything.
                    "message"
                        if !matches!(
                            rejection.code,
                            RejectCode::ScriptError | RejectCode::GuardDenied
                        ) =>
                    {
                        *shown = Shown::Text(Cow::Owned(reader.message(&rejection.message)));
                        true
                    }
                    _ => false,
                },
                EventKind::ScriptError { .. } => {
                    matches!(*key, "scriptId" | "function" | "kind" | "sequence")
                }
                // A position inside a container — an index, an order — only
                // to a viewer who saw into it (docs/observations.md,
                // Positions), whatever it sees of the entity that moved.
                _ => match position_in(kind, key) {
                    Some(container) => container.is_none_or(|c| sees_into(self, event, c, viewer)),
                    None => *names || !unseen || physical(kind, key),
                },
            };
            if !keep {
                *shown = Shown::Field(Field::Null);
            } else if is_text_key(kind, key) {
                // The game's text: its ids as this viewer sees them.
                read_text(&reader, shown);
            }
        }
        write_line(event, &mut data, out);
        true
    }
}

/// An entity id the event names as `viewer` saw it when the event
/// happened (its id, its alias, or nothing), and whether it saw the
/// entity fully.
fn shown_id<'a>(
    state: &State,
    event: &Event,
    id: &'a str,
    viewer: &Viewer,
) -> (Option<Cow<'a, str>>, bool) {
    let sight = match &event.seen {
        // Nothing in its action changed what anyone could see: as now.
        None => state.sight_of(id, viewer),
        Some(seen) => Some(
            seen.iter()
                .find(|(s, _)| **s == *id)
                .map_or(Sight::Known, |(_, x)| x.sight(viewer)),
        ),
    };
    match sight {
        Some(Sight::Known) => (Some(Cow::Borrowed(id)), true),
        Some(Sight::Alias(a)) => (Some(Cow::Owned(a)), false),
        Some(Sight::Unlisted) | None => (None, false),
    }
}

/// For a data key that holds a position inside a container (an index, a
/// container's order), the container: `Some(None)` for the world, which
/// everyone sees; `None` for every other key.
fn position_in<'e>(kind: &'e EventKind, key: &str) -> Option<Option<&'e Id>> {
    use EventKind as K;
    match (kind, key) {
        (K::ContainerRemoved { container_id, .. }, "index")
        | (K::ContainerReordered { container_id, .. }, "items") => Some(Some(container_id)),
        (K::ContainerMoved { from, .. }, "fromIndex") => Some(from.as_ref()),
        (K::ContainerMoved { to, .. }, "index") => Some(to.as_ref()),
        _ => None,
    }
}

/// Whether `viewer` saw into the container `id` — which items it held and
/// where they lay — when the event happened (or, for an event that keeps
/// no `seen`, now).
fn sees_into(state: &State, event: &Event, id: &str, viewer: &Viewer) -> bool {
    match &event.seen {
        None => state.sees_into(id, viewer),
        Some(seen) => match seen.iter().find(|(s, _)| **s == *id) {
            Some((_, x)) => x.inside.as_ref().is_some_and(|w| opens(w, viewer)),
            // Not kept: in plain sight of everyone, its items too.
            None => true,
        },
    }
}

/// One event line with the data as seen, keys in canonical order.
fn write_line(event: &Event, data: &mut [(&'static str, bool, Shown<'_>)], out: &mut String) {
    data.sort_unstable_by(|a, b| a.0.cmp(b.0));
    event.write_head(out);
    out.push('{');
    for (i, (key, _, shown)) in data.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(key, out);
        out.push(':');
        shown.write(out);
    }
    out.push_str("}}");
}

/// Whether plain data key `key` stays when the event names an entity the
/// viewer does not fully see: who acted, where and how things moved —
/// nothing of what the thing is. Deny by default: named event by event
/// (a die's `index` is its face; a position in a container follows
/// [`position_in`]'s rule instead).
fn physical(kind: &EventKind, key: &str) -> bool {
    use EventKind as K;
    matches!(
        (kind, key),
        (
            K::EntityGrabbed { .. } | K::EntityDropped { .. } | K::ButtonPressed { .. },
            "playerId"
        ) | (K::EntityFlipped { .. }, "flipped")
            | (K::DeckDealt { .. }, "cardsEach")
            | (K::StackCreated { .. } | K::StackChanged { .. }, "stackId")
            | (K::EntityRevealed { .. }, "seats")
            | (K::ContainerVisibilityChanged { .. }, "visibility" | "owner")
    )
}

/// A kept text value read as the viewer may read it (a value it does not
/// change stays borrowed).
fn read_text(reader: &Reader<'_>, shown: &mut Shown<'_>) {
    match shown {
        Shown::Field(Field::Str(s)) => {
            if let Cow::Owned(t) = reader.text(s) {
                *shown = Shown::Text(Cow::Owned(t));
            }
        }
        Shown::Field(Field::Value(v)) => {
            let mut v = (*v).clone();
            reader.value(&mut v);
            *shown = Shown::Value(v);
        }
        _ => {}
    }
}

/// An event data value as a viewer sees it.
enum Shown<'a> {
    Field(Field<'a>),
    Text(Cow<'a, str>),
    Ids(Vec<Option<Cow<'a, str>>>),
    Value(Value),
}

impl Shown<'_> {
    fn write(&self, out: &mut String) {
        match self {
            Shown::Field(f) => f.write_canonical(out),
            Shown::Text(t) => write_string(t, out),
            Shown::Value(v) => v.write_canonical(out),
            Shown::Ids(ids) => {
                out.push('[');
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    match id {
                        Some(id) => write_string(id, out),
                        None => out.push_str("null"),
                    }
                }
                out.push(']');
            }
        }
    }
}
